// AOT autograd through higher-order ops: cond, while_loop and scan recorded into the joint graph
// as one node each, with a backward node of the same kind (Note [Higher-order ops in AOT
// autograd]).
#include "src/aot/higher_order_autograd.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "src/aot/joint_graph.h"
#include "src/aot/recorder.h"
#include "src/aot/scan_residuals.h"
#include "src/autograd/autograd_meta.h"
#include "src/autograd/derivatives.h"
#include "src/graph/higher_order.h"
#include "src/graph/meta_inference.h"
#include "src/sym/shape_env.h"

namespace kiln::aot {
namespace {

// Note [Higher-order ops in AOT autograd]
// A `cond` in the traced graph is recorded as one node with the same subgraphs, its outputs fakes
// of the node's metas. When an operand requires grad, its floating outputs get a CondBackward
// node, whose backward is another cond on the same predicate: its branches are the vjp graphs of
// the two bodies (build_vjp_graph: each recomputes its branch's forward from the operands, then
// runs the backward formulas), taking the operands and one gradient per floating output and
// returning one gradient per operand that requires grad (zeros where the branch does not read
// it), as PyTorch's CondAutogradOp does. The partitioner splits the pair like any other nodes,
// and both compile to generated code (Note [Higher-order ops in a program] in
// src/runtime/program.h). A while_loop's backward walks its iterations in reverse (Note [A
// while_loop's history]).
// Records a call of `op` with `args` and `subgraphs` into the recorder's graph; returns fakes
// of `metas`, bound to its outputs.
std::vector<Tensor> record_call_with_subgraphs(Recorder& recorder, OpId op,
                                               std::vector<graph::Arg> args,
                                               const std::vector<graph::TensorMeta>& metas,
                                               std::vector<graph::Subgraph> subgraphs) {
  std::vector<graph::Value*> values = recorder.graph().add_call(op, std::move(args), metas);
  graph::Node* recorded = recorder.graph().calls().back();
  recorded->set_subgraphs(std::move(subgraphs));
  if (!GradMode::is_enabled()) recorded->set_grad_mode(graph::Node::GradMode::Disabled);
  std::vector<Tensor> fakes;
  for (size_t j = 0; j < values.size(); ++j) {
    fakes.push_back(graph::fake_tensor(metas[j]));
    recorder.bind(fakes.back(), values[j]);
  }
  return fakes;
}

graph::Arg list_of(Recorder& recorder, const std::vector<Tensor>& tensors, std::string_view op) {
  std::vector<graph::Value*> values;
  for (const Tensor& t : tensors) values.push_back(recorder.input_value(t, op));
  return graph::Arg::list(std::move(values));
}

graph::TensorMeta contiguous_meta(const Tensor& t) {
  return graph::TensorMeta::contiguous(t.dtype(),
                                       SymDimVector(t.sym_sizes().begin(), t.sym_sizes().end()));
}

// Zeros for a gradient that did not arrive, from the node's own metadata of it: a backward node
// must not hold its forward outputs (their grad_fn is the node: a reference cycle).
Tensor zeros_for(Recorder& recorder, const autograd::GradMeta& meta) {
  RecordScope record(recorder);
  return zeros(meta.sizes, meta.dtype);
}

class CondBackward final : public autograd::Node {
 public:
  CondBackward(Recorder& recorder, OpId cond, Tensor pred, std::vector<Tensor> operands,
               std::vector<int> grad_operands, std::vector<graph::Subgraph> bodies)
      : recorder_(recorder),
        cond_(cond),
        pred_(std::move(pred)),
        operands_(std::move(operands)),
        grad_operands_(std::move(grad_operands)),
        bodies_(std::move(bodies)) {}

  std::string name() const override { return "CondBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    std::vector<Tensor> inputs = operands_;
    for (size_t k = 0; k < input_metadata().size(); ++k) {
      Tensor g = k < grads.size() ? grads[k] : Tensor();
      inputs.push_back(g.defined() ? g : zeros_for(recorder_, input_metadata()[k]));
    }
    std::vector<graph::TensorMeta> metas;
    for (int i : grad_operands_)
      metas.push_back(contiguous_meta(operands_[static_cast<size_t>(i)]));
    autograd::TensorList out = record_call_with_subgraphs(
        recorder_, cond_,
        {graph::Arg::value(recorder_.input_value(pred_, "cond's backward")),
         list_of(recorder_, inputs, "cond's backward")},
        metas, bodies_);
    return out;
  }

 private:
  Recorder& recorder_;
  OpId cond_;
  Tensor pred_;
  std::vector<Tensor> operands_;
  std::vector<int> grad_operands_;
  std::vector<graph::Subgraph> bodies_;
};

std::vector<graph::TensorMeta> output_metas(const graph::Node& node) {
  std::vector<graph::TensorMeta> metas;
  for (const graph::Value* v : node.outputs()) {
    graph::TensorMeta m = v->meta();
    m.requires_grad = false;
    metas.push_back(m);
  }
  return metas;
}

// A graph of the ops `fn` runs on fakes of `inputs` (recorded as the joint graph is), under no
// grad: how the backward of a while_loop gets its bodies.
graph::Graph trace_graph(const std::vector<graph::TensorMeta>& inputs,
                         const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn) {
  graph::Graph g;
  Recorder recorder(g);
  std::vector<Tensor> fakes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    fakes.push_back(graph::fake_tensor(inputs[i]));
    recorder.bind(fakes.back(), g.add_placeholder(fmt::format("arg{}", i), inputs[i]));
  }
  std::vector<Tensor> outputs;
  {
    RecordScope record(recorder);
    NoGradGuard no_grad;
    outputs = fn(fakes);
  }
  std::vector<graph::Value*> values;
  for (const Tensor& t : outputs)
    values.push_back(recorder.value_of(not_an_input(recorder, t), "a body's output"));
  g.set_outputs(std::move(values));
  graph::eliminate_dead_code(g);
  return g;
}

std::vector<Tensor> record_cond(const graph::Node& node, const Stack& args) {
  Recorder& recorder = *current_recorder();
  const Tensor& pred = args[0].tensor();
  const std::vector<Tensor> operands = args[1].tensor_list();
  std::vector<Tensor> outputs = record_call_with_subgraphs(
      recorder, node.op(),
      {graph::Arg::value(recorder.input_value(pred, "cond")), list_of(recorder, operands, "cond")},
      output_metas(node), node.subgraphs());

  std::vector<bool> requires_grad;
  std::vector<int> grad_operands;
  for (size_t i = 0; i < operands.size(); ++i) {
    requires_grad.push_back(autograd::requires_grad(operands[i]) &&
                            is_floating(operands[i].dtype()));
    if (requires_grad.back()) grad_operands.push_back(static_cast<int>(i));
  }
  std::vector<Tensor> floating;
  for (const Tensor& t : outputs)
    if (is_floating(t.dtype())) floating.push_back(t);
  if (!GradMode::is_enabled() || grad_operands.empty() || floating.empty()) return outputs;

  std::vector<graph::Subgraph> backward_bodies;
  for (const graph::Subgraph& body : node.subgraphs()) {
    auto vjp = std::make_shared<graph::Graph>(build_vjp_graph(*body.graph, requires_grad));
    backward_bodies.push_back({body.name, std::move(vjp)});
  }
  auto backward = std::make_shared<CondBackward>(recorder, node.op(), pred, operands, grad_operands,
                                                 std::move(backward_bodies));
  for (int i : grad_operands)
    backward->mutable_next_edges().push_back(
        autograd::gradient_edge(operands[static_cast<size_t>(i)]));
  for (const Tensor& t : floating) {
    const uint32_t index = backward->add_input_metadata(t);
    autograd::set_history(t, backward, index);
  }
  return outputs;
}

// Note [A while_loop's history]
// A while_loop whose carries or additional inputs need gradients is recorded as
// while_loop_with_history: the same loop, also returning how many iterations ran (n) and each
// carry's value before each iteration, stacked ([n, ...]; n is an unbacked symbol). Its backward
// (WhileLoopBackward) is a while_loop that walks the iterations in reverse, i = n-1 .. 0: it
// takes iteration i's carries out of the histories and runs the vjp graph of body_fn there,
// carrying the carries' gradients backward and summing the additional inputs' gradients, as
// PyTorch's WhileLoopAutogradOp does. Its memory is the history: n copies of the carries.
class WhileLoopBackward final : public autograd::Node {
 public:
  struct Plan {
    OpId while_loop = 0;
    Tensor iterations;
    std::vector<Tensor> histories, additional;
    std::vector<Tensor> floating_finals;    // the finals of the floating carries (not kept)
    std::vector<int> floating_carries;      // their carry indices
    std::vector<int> grad_additional;       // additional inputs that get a gradient
    std::vector<int> carries_needing_grad;  // carry indices with a next edge (in order)
    std::vector<graph::Subgraph> bodies;    // the backward loop's cond_fn and body_fn
  };
  WhileLoopBackward(Recorder& recorder, Plan plan) : recorder_(recorder), plan_(std::move(plan)) {
    plan_.floating_finals.clear();  // see zeros_for
  }

  std::string name() const override { return "WhileLoopBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    std::vector<Tensor> carried;
    {
      RecordScope record(recorder_);
      carried.push_back(plan_.iterations - 1);
      for (size_t k = 0; k < input_metadata().size(); ++k) {
        Tensor g = k < grads.size() ? grads[k] : Tensor();
        carried.push_back(g.defined() ? g : zeros_for(recorder_, input_metadata()[k]));
      }
      for (int j : plan_.grad_additional)
        carried.push_back(zeros_like(plan_.additional[static_cast<size_t>(j)]));
    }
    std::vector<Tensor> read = plan_.histories;
    read.insert(read.end(), plan_.additional.begin(), plan_.additional.end());
    std::vector<graph::TensorMeta> metas;
    for (const Tensor& t : carried) metas.push_back(contiguous_meta(t));
    std::vector<Tensor> out =
        record_call_with_subgraphs(recorder_, plan_.while_loop,
                                   {list_of(recorder_, carried, "while_loop's backward"),
                                    list_of(recorder_, read, "while_loop's backward")},
                                   metas, plan_.bodies);
    autograd::TensorList result;
    for (int k : plan_.carries_needing_grad) {
      const auto at = std::find(plan_.floating_carries.begin(), plan_.floating_carries.end(), k);
      result.push_back(out[1 + static_cast<size_t>(at - plan_.floating_carries.begin())]);
    }
    for (size_t j = 0; j < plan_.grad_additional.size(); ++j)
      result.push_back(out[1 + input_metadata().size() + j]);
    return result;
  }

 private:
  Recorder& recorder_;
  Plan plan_;
};

// The backward loop's bodies (Note [A while_loop's history]). Its carries: i, one gradient per
// floating carry, one per additional input that gets a gradient; what it reads besides: the
// histories, then the additional inputs.
std::vector<graph::Subgraph> while_loop_backward_bodies(const graph::Node& node,
                                                        const WhileLoopBackward::Plan& plan,
                                                        const std::vector<Tensor>& carries) {
  const size_t n = carries.size(), f = plan.floating_carries.size();
  std::vector<graph::TensorMeta> inputs{graph::TensorMeta::contiguous(kInt64, {})};
  for (const Tensor& t : plan.floating_finals) inputs.push_back(contiguous_meta(t));
  for (int j : plan.grad_additional) inputs.push_back(contiguous_meta(plan.additional[j]));
  for (const Tensor& h : plan.histories) inputs.push_back(contiguous_meta(h));
  for (const Tensor& a : plan.additional) inputs.push_back(graph::TensorMeta::of(a));
  for (graph::TensorMeta& m : inputs) m.requires_grad = false;

  graph::Graph keep_going =
      trace_graph(inputs, [](const std::vector<Tensor>& in) { return std::vector{in[0] >= 0}; });

  std::vector<bool> flags;  // body_fn's inputs: the carries, then the additional inputs
  for (size_t k = 0; k < n; ++k) flags.push_back(is_floating(carries[k].dtype()));
  for (size_t j = 0; j < plan.additional.size(); ++j)
    flags.push_back(std::find(plan.grad_additional.begin(), plan.grad_additional.end(),
                              static_cast<int>(j)) != plan.grad_additional.end());
  const graph::Graph vjp = build_vjp_graph(*node.subgraphs().at(1).graph, flags);
  const size_t g = plan.grad_additional.size();
  graph::Graph step = trace_graph(inputs, [&](const std::vector<Tensor>& in) {
    const Tensor& i = in[0];
    std::vector<Tensor> vjp_inputs;
    for (size_t k = 0; k < n; ++k)
      vjp_inputs.push_back(in[1 + f + g + k].index_select(0, i.view({1})).squeeze(0));
    for (size_t j = 0; j < plan.additional.size(); ++j) vjp_inputs.push_back(in[1 + f + g + n + j]);
    for (size_t k = 0; k < f; ++k) vjp_inputs.push_back(in[1 + k]);
    std::vector<Tensor> grads = graph::interpret_symbolic(vjp, vjp_inputs, record_higher_order);
    std::vector<Tensor> next{i - 1};
    for (size_t k = 0; k < f; ++k) next.push_back(grads[k]);
    for (size_t j = 0; j < g; ++j) next.push_back(in[1 + f + j] + grads[f + j]);
    return next;
  });
  return {{"cond_fn", std::make_shared<graph::Graph>(std::move(keep_going))},
          {"body_fn", std::make_shared<graph::Graph>(std::move(step))}};
}

std::vector<Tensor> record_while_loop(const graph::Node& node, const Stack& args) {
  Recorder& recorder = *current_recorder();
  const std::vector<Tensor> carries = args[0].tensor_list();
  const std::vector<Tensor> additional = args[1].tensor_list();
  WhileLoopBackward::Plan plan;
  plan.additional = additional;
  for (size_t k = 0; k < carries.size(); ++k) {
    if (!is_floating(carries[k].dtype())) continue;
    plan.floating_carries.push_back(static_cast<int>(k));
    if (autograd::requires_grad(carries[k]))
      plan.carries_needing_grad.push_back(static_cast<int>(k));
  }
  for (size_t j = 0; j < additional.size(); ++j)
    if (is_floating(additional[j].dtype()) && autograd::requires_grad(additional[j]))
      plan.grad_additional.push_back(static_cast<int>(j));
  const bool differentiate = GradMode::is_enabled() && !plan.floating_carries.empty() &&
                             (!plan.carries_needing_grad.empty() || !plan.grad_additional.empty());
  const std::vector<graph::Arg> arg_values = {list_of(recorder, carries, "while_loop"),
                                              list_of(recorder, additional, "while_loop")};
  if (!differentiate)
    return record_call_with_subgraphs(recorder, node.op(), arg_values, output_metas(node),
                                      node.subgraphs());

  sym::ShapeEnv* env = sym::ShapeEnv::current();
  KILN_CHECK(env != nullptr, NotImplementedError,
             "AOT autograd: a differentiated while_loop needs the trace's ShapeEnv for its "
             "iteration count; the graph runs through the eager autograd engine");
  const SymInt iterations =
      env->create_unbacked_symbol("iterations of a while_loop", sym::ValueRange::at_least(0));
  std::vector<graph::TensorMeta> metas = output_metas(node);
  metas.push_back(graph::TensorMeta::contiguous(kInt64, {}));
  for (const Tensor& c : carries) {
    SymDimVector sizes{iterations};
    for (SymInt s : c.sym_sizes()) sizes.push_back(s);
    metas.push_back(graph::TensorMeta::contiguous(c.dtype(), sizes));
  }
  static const OpId with_history = OpRegistry::instance().id("while_loop_with_history");
  std::vector<Tensor> out =
      record_call_with_subgraphs(recorder, with_history, arg_values, metas, node.subgraphs());
  const size_t n = carries.size();
  std::vector<Tensor> finals(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
  plan.iterations = out[n];
  plan.histories.assign(out.begin() + static_cast<std::ptrdiff_t>(n + 1), out.end());
  for (int k : plan.floating_carries) plan.floating_finals.push_back(finals[k]);
  static const OpId while_loop = OpRegistry::instance().id("while_loop");
  plan.while_loop = while_loop;
  plan.bodies = while_loop_backward_bodies(node, plan, carries);

  auto backward = std::make_shared<WhileLoopBackward>(recorder, plan);
  for (int k : plan.carries_needing_grad)
    backward->mutable_next_edges().push_back(autograd::gradient_edge(carries[k]));
  for (int j : plan.grad_additional)
    backward->mutable_next_edges().push_back(autograd::gradient_edge(additional[j]));
  for (const Tensor& t : plan.floating_finals) {
    const uint32_t index = backward->add_input_metadata(t);
    autograd::set_history(t, backward, index);
  }
  return finals;
}

// Note [A scan's backward]
// A scan whose carries, xs or additional inputs need gradients is recorded with a combine_fn that
// also returns the carries it received as step outputs, so the forward returns each carry's value
// before every step, stacked ([n, ...]) like the other step outputs: its history. The backward
// (ScanBackward) is a scan in the other direction. Its carries: the gradients of the floating
// carries, then running sums of the additional inputs' gradients; its xs: the histories, the xs,
// the gradients of the floating step outputs, then the residuals the forward saved (Note
// [Residuals of a scan] in scan_residuals.h); its combine_fn runs the vjp graph of
// combine_fn at step i and returns the gradients of that step's slices as step outputs, which
// stack into the xs' gradients. As PyTorch's ScanAutogradOp: the memory is the history.
// Note [Weight gradients of a scan]
// An additional input used by a product in every step (an RNN's W_hh in h W_hh^T) gets a
// gradient per step, A_t B_t: the backward scan would compute that [m, n] product from a [m, b]
// and a [b, n] operand in each of its n steps and add it to a carry, n small products and n
// passes over an [m, n] sum. The sum over steps of A_t B_t is one product of the operands
// stacked along the batch dim: sum_t A_t B_t = [A_0 .. A_{n-1}] [B_0; ..; B_{n-1}]. So when the
// vjp of combine_fn gives an additional input's gradient as one mm (up to transposes), the
// backward scan returns the two operands as step outputs instead (when A_t is X_t^T, X_t itself,
// so the stacked X is already [n * b, m] row-major) and one mm after the scan sums them; a
// gradient that is sum(Y_t, 0) (the bias of that product) becomes one sum of the stacked Y_t.
// Any other gradient is summed in a carry, as before. The memory is the operands' (n * b rows),
// which the history already holds for h; the sums' order differs from the carry's, so results
// equal eager's within rounding, not bit for bit.
// Where the stacked per-step values of an operand come from: a step output added for it, or,
// when the backward scan has them already, its gradient of an xs, a carry's history or an xs.
struct StackedOperand {
  enum class From { ExtraStepOutput, XsGradient, History, Xs };
  From from = From::ExtraStepOutput;
  int index = 0;
};

struct BatchedGradient {
  int additional = 0;                   // index into Plan::additional
  StackedOperand left;                  // X_t or A_t
  std::optional<StackedOperand> right;  // B_t; none: a sum of the left over dim 0
  bool left_is_transposed = false;      // the left is X_t with A_t = X_t^T
  bool result_is_transposed = false;
};

class ScanBackward final : public autograd::Node {
 public:
  struct Plan {
    OpId scan = 0;
    bool reverse = false;
    std::vector<Tensor> histories, xs, additional;
    std::vector<Tensor> residuals;    // Note [Residuals of a scan]: stacked, read as slices
    size_t floating_carries = 0;      // inputs 0 .. floating_carries-1 are their finals' grads
    std::vector<int> floating_carry;  // the carry index of each
    std::vector<int> carries_needing_grad, xs_needing_grad, additional_needing_grad;
    // See Note [Weight gradients of a scan]: the additional inputs whose gradients the backward
    // scan sums in carries, and those summed after it from stacked step outputs.
    std::vector<int> additional_summed;
    std::vector<BatchedGradient> additional_batched;
    std::vector<graph::TensorMeta> batched_steps;  // one step of each of those step outputs
    std::vector<graph::Subgraph> bodies;           // the backward scan's combine_fn
  };
  ScanBackward(Recorder& recorder, Plan plan) : recorder_(recorder), plan_(std::move(plan)) {}

  std::string name() const override { return "ScanBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    const size_t f = plan_.floating_carries;
    auto grad_or_zeros = [&](size_t k) {
      const Tensor g = k < grads.size() ? grads[k] : Tensor();
      return g.defined() ? g : zeros_for(recorder_, input_metadata()[k]);
    };
    std::vector<Tensor> carried, read = plan_.histories;
    {
      RecordScope record(recorder_);
      for (size_t k = 0; k < f; ++k) carried.push_back(grad_or_zeros(k));
      for (int j : plan_.additional_summed)
        carried.push_back(zeros_like(plan_.additional[static_cast<size_t>(j)]));
      read.insert(read.end(), plan_.xs.begin(), plan_.xs.end());
      for (size_t k = f; k < input_metadata().size(); ++k) read.push_back(grad_or_zeros(k));
      read.insert(read.end(), plan_.residuals.begin(), plan_.residuals.end());
    }
    std::vector<graph::TensorMeta> metas;
    for (const Tensor& t : carried) metas.push_back(contiguous_meta(t));
    for (int j : plan_.xs_needing_grad)
      metas.push_back(contiguous_meta(plan_.xs[static_cast<size_t>(j)]));
    const SymInt length = plan_.xs[0].sym_sizes()[0];
    for (const graph::TensorMeta& step : plan_.batched_steps) {
      SymDimVector sizes{length};
      for (SymInt s : step.sizes) sizes.push_back(s);
      metas.push_back(graph::TensorMeta::contiguous(step.dtype, sizes));
    }
    const std::vector<Tensor> out =
        record_call_with_subgraphs(recorder_, plan_.scan,
                                   {list_of(recorder_, carried, "scan's backward"),
                                    list_of(recorder_, read, "scan's backward"),
                                    list_of(recorder_, plan_.additional, "scan's backward"),
                                    graph::Arg::constant(IValue(!plan_.reverse))},
                                   metas, plan_.bodies);
    const size_t g = plan_.additional_summed.size(), gx = plan_.xs_needing_grad.size();
    autograd::TensorList result;
    for (int k : plan_.carries_needing_grad) {
      const auto at = std::find(plan_.floating_carry.begin(), plan_.floating_carry.end(), k);
      result.push_back(out[static_cast<size_t>(at - plan_.floating_carry.begin())]);
    }
    for (size_t j = 0; j < gx; ++j) result.push_back(out[f + g + j]);
    RecordScope record(recorder_);
    for (int j : plan_.additional_needing_grad) {
      const auto summed =
          std::find(plan_.additional_summed.begin(), plan_.additional_summed.end(), j);
      if (summed != plan_.additional_summed.end()) {
        result.push_back(out[f + static_cast<size_t>(summed - plan_.additional_summed.begin())]);
        continue;
      }
      const BatchedGradient& b =
          *std::find_if(plan_.additional_batched.begin(), plan_.additional_batched.end(),
                        [&](const BatchedGradient& x) { return x.additional == j; });
      auto stacked = [&](const StackedOperand& o) -> const Tensor& {
        const auto i = static_cast<size_t>(o.index);
        switch (o.from) {
          case StackedOperand::From::XsGradient:
            return out[f + g + i];
          case StackedOperand::From::History:
            return plan_.histories[i];
          case StackedOperand::From::Xs:
            return plan_.xs[i];
          case StackedOperand::From::ExtraStepOutput:
            break;
        }
        return out[f + g + gx + i];
      };
      const Tensor& left = stacked(b.left);
      if (!b.right) {
        result.push_back(
            left.sum({0, 1}).view(plan_.additional[static_cast<size_t>(j)].sym_sizes()));
        continue;
      }
      const Tensor& right = stacked(*b.right);
      // [m, n * b] times [n * b, n']: See Note [Weight gradients of a scan].
      const Tensor a =
          b.left_is_transposed ? left.flatten(0, 1).t() : left.permute({1, 0, 2}).flatten(1, 2);
      const Tensor product = mm(a, right.flatten(0, 1));
      result.push_back(b.result_is_transposed ? product.t().contiguous() : product);
    }
    return result;
  }

 private:
  Recorder& recorder_;
  Plan plan_;
};

bool contains(const std::vector<int>& v, size_t i) {
  return std::find(v.begin(), v.end(), static_cast<int>(i)) != v.end();
}

// A 2-d transpose (t, transpose of the two dims, permute [1, 0]) of its first argument.
bool is_2d_transpose(const graph::Node* n) {
  if (n == nullptr || n->kind() != graph::NodeKind::Call || !n->args()[0].is_value() ||
      n->args()[0].as_value()->meta().sizes.size() != 2)
    return false;
  const std::string& op = n->op_def().name;
  if (op == "t") return true;
  auto wrapped = [](int64_t d) { return d < 0 ? d + 2 : d; };
  if (op == "transpose")
    return wrapped(n->args()[1].as_constant().to_int()) !=
           wrapped(n->args()[2].as_constant().to_int());
  if (op == "permute") {
    const IntArrayRef dims = n->args()[1].as_constant().int_list();
    return dims.size() == 2 && wrapped(dims[0]) != wrapped(dims[1]);
  }
  return false;
}

// `v` with its 2-d transposes peeled off, and whether an odd number was.
std::pair<graph::Value*, bool> peel_transposes(graph::Value* v) {
  bool transposed = false;
  while (is_2d_transpose(v->producer())) {
    v = v->producer()->args()[0].as_value();
    transposed = !transposed;
  }
  return {v, transposed};
}

bool is_call(const graph::Value* v, std::string_view op) {
  const graph::Node* n = v->producer();
  return n != nullptr && n->kind() == graph::NodeKind::Call && n->op_def().name == op;
}

// Y when `grad` is sum(Y, [0]) of a 2-d Y (keepdim or not, maybe viewed as the gradient's shape:
// a bias's gradient through broadcasting), else null.
graph::Value* summed_rows(graph::Value* grad) {
  if (is_call(grad, "view") || is_call(grad, "reshape"))
    grad = grad->producer()->args()[0].as_value();
  if (!is_call(grad, "sum")) return nullptr;
  const graph::Node* n = grad->producer();
  if (n->args().size() != 4 || !n->args()[0].is_value()) return nullptr;
  graph::Value* rows = n->args()[0].as_value();
  const bool sums_dim_0 = n->args()[1].is_constant() &&
                          n->args()[1].as_constant().int_list().vec() == std::vector<int64_t>{0};
  const bool same_dtype = n->args()[3].is_constant() && n->args()[3].as_constant().is_none();
  return rows->meta().sizes.size() == 2 && sums_dim_0 && same_dtype ? rows : nullptr;
}

// Note [Weight gradients of a scan]: decides which additional inputs' gradients are summed after
// the scan (filling plan.additional_summed, additional_batched and batched_steps) and returns the
// vjp graph with their operands as extra outputs (after its own).
graph::Graph with_batched_gradients(graph::Graph vjp, ScanBackward::Plan& plan) {
  const size_t first = plan.floating_carries + plan.xs_needing_grad.size();
  std::vector<graph::Value*> outputs(vjp.outputs().begin(), vjp.outputs().end());
  std::vector<graph::Value*> extra;
  const std::span<graph::Value* const> in = vjp.placeholders();
  const int nc = static_cast<int>(plan.histories.size()), nx = static_cast<int>(plan.xs.size());
  auto step_output = [&](graph::Value* v) -> StackedOperand {
    using From = StackedOperand::From;
    const auto input = std::find(in.begin(), in.end(), v) - in.begin();
    if (input < nc) return {From::History, static_cast<int>(input)};
    if (input < nc + nx) return {From::Xs, static_cast<int>(input - nc)};
    for (size_t k = 0; k < plan.xs_needing_grad.size(); ++k)
      if (outputs[plan.floating_carries + k] == v) return {From::XsGradient, static_cast<int>(k)};
    const auto at = std::find(extra.begin(), extra.end(), v);
    if (at != extra.end()) return {From::ExtraStepOutput, static_cast<int>(at - extra.begin())};
    extra.push_back(v);
    plan.batched_steps.push_back(graph::TensorMeta::contiguous(v->meta().dtype, v->meta().sizes));
    return {From::ExtraStepOutput, static_cast<int>(extra.size() - 1)};
  };
  for (size_t k = 0; k < plan.additional_needing_grad.size(); ++k) {
    const int j = plan.additional_needing_grad[k];
    auto [grad, transposed] = peel_transposes(outputs[first + k]);
    const graph::Node* n = grad->producer();
    if (is_call(grad, "mm")) {
      auto [left, left_transposed] = peel_transposes(n->args()[0].as_value());
      if (!left_transposed) left = n->args()[0].as_value();
      plan.additional_batched.push_back({.additional = j,
                                         .left = step_output(left),
                                         .right = step_output(n->args()[1].as_value()),
                                         .left_is_transposed = left_transposed,
                                         .result_is_transposed = transposed});
    } else if (graph::Value* rows = summed_rows(grad); rows != nullptr && !transposed) {
      plan.additional_batched.push_back({.additional = j, .left = step_output(rows)});
    } else {
      plan.additional_summed.push_back(j);
    }
  }
  outputs.insert(outputs.end(), extra.begin(), extra.end());
  vjp.set_outputs(std::move(outputs));
  return vjp;
}

// The vjp graph of combine_fn for the inputs the plan differentiates.
graph::Graph combine_vjp(const graph::Graph& combine, const ScanBackward::Plan& plan) {
  const size_t nc = combine.placeholders().size() - plan.xs.size() - plan.additional.size();
  std::vector<bool> flags;  // combine_fn's inputs: carries, slices, additional inputs
  for (size_t k = 0; k < nc; ++k) flags.push_back(contains(plan.floating_carry, k));
  for (size_t j = 0; j < plan.xs.size(); ++j) flags.push_back(contains(plan.xs_needing_grad, j));
  for (size_t j = 0; j < plan.additional.size(); ++j)
    flags.push_back(contains(plan.additional_needing_grad, j));
  return build_vjp_graph(combine, flags);
}

// The backward scan's combine_fn (Note [A scan's backward]), from combine_fn's vjp graph and the
// ids of its residuals (Note [Residuals of a scan]).
graph::Graph scan_backward_body(const graph::Graph& combine, graph::Graph combine_vjp,
                                const std::vector<int>& residual_ids, ScanBackward::Plan& plan) {
  const std::span<graph::Value* const> in = combine.placeholders();
  const std::span<graph::Value* const> returned = combine.outputs();
  const size_t nc = plan.histories.size(), nx = plan.xs.size(), na = plan.additional.size();
  graph::Graph vjp = with_batched_gradients(std::move(combine_vjp), plan);
  read_residuals_from_placeholders(vjp, residual_ids);
  const size_t nr = residual_ids.size();
  const std::span<graph::Value* const> residual_inputs =
      vjp.placeholders().subspan(vjp.placeholders().size() - nr);
  const size_t f = plan.floating_carries, g = plan.additional_summed.size();
  auto contiguous = [](const graph::Value* v) {
    return graph::TensorMeta::contiguous(v->meta().dtype, v->meta().sizes);
  };
  std::vector<graph::TensorMeta> inputs;
  for (int k : plan.floating_carry) inputs.push_back(contiguous(in[static_cast<size_t>(k)]));
  for (int j : plan.additional_summed)
    inputs.push_back(contiguous(in[nc + nx + static_cast<size_t>(j)]));
  for (size_t k = 0; k < nc + nx; ++k) inputs.push_back(contiguous(in[k]));  // history, slices
  std::vector<size_t> floating_steps;
  for (size_t k = nc; k < returned.size(); ++k)
    if (is_floating(returned[k]->meta().dtype)) floating_steps.push_back(k);
  for (size_t k : floating_steps) inputs.push_back(contiguous(returned[k]));
  for (const graph::Value* r : residual_inputs) inputs.push_back(r->meta());
  for (size_t j = 0; j < na; ++j) inputs.push_back(in[nc + nx + j]->meta());
  for (graph::TensorMeta& m : inputs) m.requires_grad = false;
  const size_t fy = floating_steps.size();
  return trace_graph(inputs, [&](const std::vector<Tensor>& at) {
    const size_t slices = f + g, steps = slices + nc + nx, residuals = steps + fy,
                 additional = residuals + nr;
    std::vector<Tensor> vjp_inputs(at.begin() + static_cast<ptrdiff_t>(slices),
                                   at.begin() + static_cast<ptrdiff_t>(steps));
    vjp_inputs.insert(vjp_inputs.end(), at.begin() + static_cast<ptrdiff_t>(additional), at.end());
    for (size_t k = 0; k < f; ++k) vjp_inputs.push_back(at[k]);
    for (size_t k = 0; k < fy; ++k) vjp_inputs.push_back(at[steps + k]);
    for (size_t k = 0; k < nr; ++k) vjp_inputs.push_back(at[residuals + k]);
    const std::vector<Tensor> grads =
        graph::interpret_symbolic(vjp, vjp_inputs, record_higher_order);
    const size_t gx = plan.xs_needing_grad.size();
    std::vector<Tensor> next(grads.begin(), grads.begin() + static_cast<ptrdiff_t>(f));
    for (size_t j = 0; j < g; ++j) {
      const auto k = std::find(plan.additional_needing_grad.begin(),
                               plan.additional_needing_grad.end(), plan.additional_summed[j]) -
                     plan.additional_needing_grad.begin();
      next.push_back(at[f + j] + grads[f + gx + static_cast<size_t>(k)]);
    }
    for (size_t j = 0; j < gx; ++j) next.push_back(grads[f + j]);
    const size_t extra = f + gx + plan.additional_needing_grad.size();
    next.insert(next.end(), grads.begin() + static_cast<ptrdiff_t>(extra), grads.end());
    return next;
  });
}

std::vector<Tensor> record_scan(const graph::Node& node, const Stack& args) {
  Recorder& recorder = *current_recorder();
  const std::vector<Tensor> init = args[0].tensor_list();
  const std::vector<Tensor> xs = args[1].tensor_list();
  const std::vector<Tensor> additional = args[2].tensor_list();
  const bool reverse = args[3].to_bool();
  const graph::Graph& combine = *node.subgraphs().at(0).graph;
  const size_t nc = init.size();
  ScanBackward::Plan plan{.reverse = reverse, .xs = xs, .additional = additional};
  auto needs_grad = [](const Tensor& t) {
    return is_floating(t.dtype()) && autograd::requires_grad(t);
  };
  for (size_t k = 0; k < nc; ++k) {
    if (!is_floating(init[k].dtype())) continue;
    plan.floating_carry.push_back(static_cast<int>(k));
    if (autograd::requires_grad(init[k])) plan.carries_needing_grad.push_back(static_cast<int>(k));
  }
  plan.floating_carries = plan.floating_carry.size();
  for (size_t j = 0; j < xs.size(); ++j)
    if (needs_grad(xs[j])) plan.xs_needing_grad.push_back(static_cast<int>(j));
  for (size_t j = 0; j < additional.size(); ++j)
    if (needs_grad(additional[j])) plan.additional_needing_grad.push_back(static_cast<int>(j));
  std::vector<graph::TensorMeta> metas = output_metas(node);
  const bool any_floating_output =
      std::any_of(metas.begin(), metas.end(), [](const auto& m) { return is_floating(m.dtype); });
  const bool differentiate = GradMode::is_enabled() && any_floating_output &&
                             (!plan.carries_needing_grad.empty() || !plan.xs_needing_grad.empty() ||
                              !plan.additional_needing_grad.empty());
  const std::vector<graph::Arg> arg_values = {
      list_of(recorder, init, "scan"), list_of(recorder, xs, "scan"),
      list_of(recorder, additional, "scan"), graph::Arg::constant(IValue(reverse))};
  if (!differentiate)
    return record_call_with_subgraphs(recorder, node.op(), arg_values, metas, node.subgraphs());

  // The forward's step body returns combine_fn's outputs, then the carries it received (the
  // history), then the residuals (Note [Residuals of a scan]).
  graph::Graph vjp = combine_vjp(combine, plan);
  const size_t forward_inputs = combine.placeholders().size();
  const std::vector<graph::Value*> residuals =
      choose_scan_residuals(vjp, forward_inputs, nc + xs.size());
  std::vector<int> residual_ids;
  for (const graph::Value* r : residuals) residual_ids.push_back(r->id());
  const graph::Graph residual_body = residuals_graph(vjp, residuals);
  std::vector<graph::TensorMeta> combine_inputs;
  for (const graph::Value* p : combine.placeholders()) combine_inputs.push_back(p->meta());
  auto forward_body = std::make_shared<graph::Graph>(
      trace_graph(combine_inputs, [&](const std::vector<Tensor>& in) {
        std::vector<Tensor> out = graph::interpret_symbolic(combine, in, record_higher_order);
        out.insert(out.end(), in.begin(), in.begin() + static_cast<ptrdiff_t>(nc));
        if (residuals.empty()) return out;
        std::vector<Tensor> residual_in = in;  // and zeros for the tangents, which it never reads
        for (size_t i = forward_inputs; i < residual_body.placeholders().size(); ++i)
          residual_in.push_back(graph::fake_tensor(residual_body.placeholders()[i]->meta()));
        for (Tensor& r : graph::interpret_symbolic(residual_body, residual_in, record_higher_order))
          out.push_back(r.contiguous());
        return out;
      }));
  if (!residuals.empty()) {
    graph::eliminate_common_subexpressions(*forward_body);
    graph::eliminate_dead_code(*forward_body);
  }
  const SymInt length = xs[0].sym_sizes()[0];
  auto stacked_meta = [&](ScalarType dtype, SymIntArrayRef step) {
    SymDimVector sizes{length};
    for (SymInt s : step) sizes.push_back(s);
    return graph::TensorMeta::contiguous(dtype, sizes);
  };
  for (const Tensor& c : init) metas.push_back(stacked_meta(c.dtype(), c.sym_sizes()));
  for (const graph::Value* r : residuals)
    metas.push_back(stacked_meta(r->meta().dtype, r->meta().sizes));
  std::vector<Tensor> out = record_call_with_subgraphs(recorder, node.op(), arg_values, metas,
                                                       {{"combine_fn", std::move(forward_body)}});
  const size_t nr = residuals.size();
  const auto results_end = out.end() - static_cast<ptrdiff_t>(nc + nr);
  std::vector<Tensor> results(out.begin(), results_end);
  plan.histories.assign(results_end, results_end + static_cast<ptrdiff_t>(nc));
  plan.residuals.assign(out.end() - static_cast<ptrdiff_t>(nr), out.end());
  plan.scan = node.op();
  plan.bodies = {{"combine_fn", std::make_shared<graph::Graph>(scan_backward_body(
                                    combine, std::move(vjp), residual_ids, plan))}};

  auto backward = std::make_shared<ScanBackward>(recorder, plan);
  for (int k : plan.carries_needing_grad)
    backward->mutable_next_edges().push_back(autograd::gradient_edge(init[k]));
  for (int j : plan.xs_needing_grad)
    backward->mutable_next_edges().push_back(autograd::gradient_edge(xs[j]));
  for (int j : plan.additional_needing_grad)
    backward->mutable_next_edges().push_back(autograd::gradient_edge(additional[j]));
  // Inputs of the backward: the floating final carries, then the floating stacked step outputs.
  for (int k : plan.floating_carry)
    autograd::set_history(results[k], backward, backward->add_input_metadata(results[k]));
  for (size_t k = nc; k < results.size(); ++k)
    if (is_floating(results[k].dtype()))
      autograd::set_history(results[k], backward, backward->add_input_metadata(results[k]));
  return results;
}

}  // namespace

std::vector<Tensor> record_higher_order(const graph::Node& node, const Stack& args) {
  const std::string& op = node.op_def().name;
  KILN_CHECK(current_recorder() != nullptr, ValueError,
             "AOT autograd: {} recorded outside a joint trace", op);
  if (op == "scan") return record_scan(node, args);
  KILN_CHECK(args.size() == 2, ValueError, "AOT autograd: {} recorded with {} arguments", op,
             args.size());
  if (op == "cond") return record_cond(node, args);
  if (op == "while_loop") return record_while_loop(node, args);
  throw NotImplementedError(fmt::format(
      "AOT autograd: {} has no ahead-of-time backward yet (Note [Higher-order ops in AOT "
      "autograd]); the graph runs through the eager autograd engine",
      op));
}

}  // namespace kiln::aot
