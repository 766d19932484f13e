#include "src/graph/higher_order.h"

#include <algorithm>

#include "kiln/ops/creation.h"
#include "kiln/ops/shape.h"
#include "src/core/shape.h"
#include "src/core/tensor_factory.h"
#include "src/graph/graph.h"
#include "src/graph/schema.h"
#include "src/sym/expr.h"

namespace kiln::graph {
namespace {

[[noreturn]] void fail(const Node& node, const std::string& what) {
  throw ValueError(fmt::format("verify: `{}`: {}", to_string(node), what));
}

std::string meta_text(const TensorMeta& m) {
  TensorMeta shown = m;
  shown.requires_grad = false;
  return to_string(shown);
}

bool is_unbacked_symbol(SymInt s) {
  return s.is_symbolic() && s.expr()->is_symbol() && s.expr()->name().starts_with('u');
}

// Whether a body's value `body` fits the op's value `op_side`: the same dtype and sizes, where an
// unbacked size of the op's fits any size (Note [Branches of different sizes] in
// src/capture/tracer.cpp: a cond's output, and the gradient of one, has the size of the branch
// that ran).
bool same_dtype_and_sizes(const TensorMeta& body, const TensorMeta& op_side) {
  if (body.dtype != op_side.dtype || body.sizes.size() != op_side.sizes.size()) return false;
  for (size_t d = 0; d < body.sizes.size(); ++d)
    if (!same(body.sizes[d], op_side.sizes[d]) && !is_unbacked_symbol(op_side.sizes[d]))
      return false;
  return true;
}

const Graph& subgraph(const Node& node, size_t i) { return *node.subgraphs()[i].graph; }

// Subgraph `i` takes values with the metas `inputs` (dtype and sizes; a body sees its operands'
// values, whatever their strides) and returns no placeholder of its own (an output that is an
// input would alias it: Note [Subgraphs of a higher-order op]).
void check_takes(const Node& node, size_t i, const std::vector<const TensorMeta*>& inputs,
                 std::string_view what) {
  const Subgraph& sub = node.subgraphs()[i];
  const std::span<Value* const> placeholders = sub.graph->placeholders();
  if (placeholders.size() != inputs.size())
    fail(node, fmt::format("{} takes {} inputs but the op passes it {} {}", sub.name,
                           placeholders.size(), inputs.size(), what));
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!same_dtype_and_sizes(placeholders[k]->meta(), *inputs[k]))
      fail(node, fmt::format("{} input {} is {} but the op passes it {} {} as {}", sub.name, k,
                             meta_text(placeholders[k]->meta()), what, k, meta_text(*inputs[k])));
  for (const Value* out : sub.graph->outputs())
    if (const Value* input = input_viewed_by(out))
      fail(node, fmt::format("{} returns {}, which {} its input {} ({}); a body returns new "
                             "tensors (clone an input it passes through)",
                             sub.name, out->name(), out == input ? "is" : "is a view of",
                             input->name(), input->producer()->source()));
  const auto [writer, written] = first_write_to_an_input(*sub.graph);
  if (writer != nullptr)
    fail(node,
         fmt::format("{} writes to its input {} ({}) in `{}`; a body may not mutate what "
                     "it receives",
                     sub.name, written->name(), written->producer()->source(), to_string(*writer)));
}

// Subgraph `i` returns values with the metas `expected`.
void check_returns(const Node& node, size_t i, const std::vector<const TensorMeta*>& expected,
                   std::string_view what) {
  const Subgraph& sub = node.subgraphs()[i];
  const std::span<Value* const> outs = sub.graph->outputs();
  if (outs.size() != expected.size())
    fail(node, fmt::format("{} returns {} values but the op needs {} ({})", sub.name, outs.size(),
                           expected.size(), what));
  for (size_t k = 0; k < outs.size(); ++k)
    if (!same_dtype_and_sizes(outs[k]->meta(), *expected[k]))
      fail(node, fmt::format("{} returns {} as its output {} but the op needs {} ({})", sub.name,
                             meta_text(outs[k]->meta()), k, meta_text(*expected[k]), what));
}

std::vector<const TensorMeta*> metas_of(std::span<Value* const> values) {
  std::vector<const TensorMeta*> metas;
  for (const Value* v : values) metas.push_back(&v->meta());
  return metas;
}

std::vector<const TensorMeta*> metas_of(const std::vector<Value*>& values) {
  return metas_of(std::span<Value* const>(values.data(), values.size()));
}

bool is_one_bool(const TensorMeta& m) {
  if (m.dtype != ScalarType::Bool) return false;
  for (SymInt s : m.sizes)
    if (!same(s, 1)) return false;
  return true;
}

void verify_cond(const Node& node) {
  const Value* pred = node.args()[0].as_value();
  if (!is_one_bool(pred->meta()))
    fail(node, fmt::format("pred {} is {}; it must be a bool tensor with one element", pred->name(),
                           meta_text(pred->meta())));
  const std::vector<const TensorMeta*> operands = metas_of(node.args()[1].as_list());
  const std::vector<const TensorMeta*> outputs = metas_of(node.outputs());
  for (size_t i = 0; i < 2; ++i) {
    check_takes(node, i, operands, "operand");
    check_returns(node, i, outputs, "the node's outputs");
  }
}

void verify_while_loop(const Node& node) {
  const std::vector<const TensorMeta*> carries = metas_of(node.args()[0].as_list());
  if (carries.empty()) fail(node, "while_loop needs at least one carry");
  std::vector<const TensorMeta*> inputs = carries;
  for (const TensorMeta* m : metas_of(node.args()[1].as_list())) inputs.push_back(m);
  check_takes(node, 0, inputs, "carry or additional input");
  check_takes(node, 1, inputs, "carry or additional input");
  const std::span<Value* const> keep_going = subgraph(node, 0).outputs();
  if (keep_going.size() != 1 || !is_one_bool(keep_going[0]->meta()))
    fail(node, fmt::format("cond_fn returns {} values{}; it must return one bool tensor with one "
                           "element",
                           keep_going.size(),
                           keep_going.size() == 1 ? " (" + meta_text(keep_going[0]->meta()) + ")"
                                                  : std::string()));
  check_returns(node, 1, carries, "a carry keeps its dtype and sizes");
  if (node.op_def().name == "while_loop") {
    check_returns(node, 1, metas_of(node.outputs()), "the node's outputs are the final carries");
    return;
  }
  // while_loop_with_history: the final carries, the iteration count, each carry's history.
  const std::span<Value* const> outs = node.outputs();
  const size_t n = carries.size();
  if (outs.size() != 2 * n + 1)
    fail(node, fmt::format("while_loop_with_history returns {} values; with {} carries it returns "
                           "{} (the final carries, the iteration count, one history per carry)",
                           outs.size(), n, 2 * n + 1));
  check_returns(node, 1, metas_of(outs.subspan(0, n)), "the final carries");
  const TensorMeta& count = outs[n]->meta();
  if (count.dtype != ScalarType::Int64 || !count.sizes.empty())
    fail(node, fmt::format("output {} (the iteration count) is {}; it must be i64[]", n,
                           meta_text(count)));
  for (size_t k = 0; k < n; ++k) {
    const TensorMeta& h = outs[n + 1 + k]->meta();
    bool ok = h.dtype == carries[k]->dtype && h.sizes.size() == carries[k]->sizes.size() + 1;
    for (size_t d = 0; ok && d < carries[k]->sizes.size(); ++d)
      ok = same(h.sizes[d + 1], carries[k]->sizes[d]);
    if (!ok)
      fail(node, fmt::format("output {} (the history of carry {}) is {}; it must be carry {} ({}) "
                             "stacked along a new leading dim",
                             n + 1 + k, k, meta_text(h), k, meta_text(*carries[k])));
  }
}

// A scan's xs each [n, ...] with one n; combine_fn takes (carries, slices, additional) and
// returns (next carries, step outputs); the node returns (final carries, stacked step outputs).
void verify_scan(const Node& node) {
  const std::vector<const TensorMeta*> carries = metas_of(node.args()[0].as_list());
  const std::vector<Value*>& xs = node.args()[1].as_list();
  if (xs.empty()) fail(node, "scan needs at least one tensor in xs to scan over");
  const SymInt length = xs[0]->meta().sizes.empty() ? SymInt(0) : xs[0]->meta().sizes[0];
  std::vector<TensorMeta> slices;
  for (const Value* x : xs) {
    const TensorMeta& m = x->meta();
    if (m.sizes.empty() || !same(m.sizes[0], length))
      fail(node, fmt::format("xs {} is {}; every xs needs a leading dim of the length of xs 0 "
                             "({})",
                             x->name(), meta_text(m), meta_text(xs[0]->meta())));
    const SymIntArrayRef sizes(m.sizes);
    slices.push_back(TensorMeta::contiguous(m.dtype, SymDimVector(sizes.begin() + 1, sizes.end())));
  }
  std::vector<const TensorMeta*> inputs = carries;
  for (const TensorMeta& m : slices) inputs.push_back(&m);
  for (const TensorMeta* m : metas_of(node.args()[2].as_list())) inputs.push_back(m);
  check_takes(node, 0, inputs, "carry, slice or additional input");
  const std::span<Value* const> returned = subgraph(node, 0).outputs();
  const std::span<Value* const> outs = node.outputs();
  if (returned.size() < carries.size() || outs.size() != returned.size())
    fail(node, fmt::format("combine_fn returns {} values and the node has {} outputs; with {} "
                           "carries both need the carries, then the same step outputs",
                           returned.size(), outs.size(), carries.size()));
  check_returns(
      node, 0,
      [&] {
        std::vector<const TensorMeta*> expected = carries;
        for (size_t k = carries.size(); k < returned.size(); ++k)
          expected.push_back(&returned[k]->meta());
        return expected;
      }(),
      "a carry keeps its dtype and sizes");
  for (size_t k = 0; k < outs.size(); ++k) {
    const TensorMeta& step = returned[k]->meta();
    const TensorMeta& out = outs[k]->meta();
    SymDimVector sizes = step.sizes;
    if (k >= carries.size()) sizes.insert(0, length);
    bool ok = out.dtype == step.dtype && out.sizes.size() == sizes.size();
    for (size_t d = 0; ok && d < sizes.size(); ++d) ok = same(out.sizes[d], sizes[d]);
    if (!ok)
      fail(node, fmt::format("output {} is {} but combine_fn returns {} there{}", k, meta_text(out),
                             meta_text(step),
                             k < carries.size() ? " (a final carry)"
                                                : " (stacked along a new leading dim of the "
                                                  "length of xs)"));
  }
}

// The node's output metas give strides (contiguous ones, from the tracer), which the ops after
// it were traced with; a body's result has whatever strides its ops gave. A result whose layout
// differs is made contiguous (contiguous() of a contiguous tensor is the tensor itself).
std::vector<Tensor> as_node_outputs(const Node& node, std::vector<Tensor> results) {
  for (size_t i = 0; i < results.size() && i < node.outputs().size(); ++i)
    if (results[i].defined() && node.outputs()[i]->meta().has_contiguous_strides())
      results[i] = results[i].contiguous();
  return results;
}

bool read_predicate(const Tensor& pred, std::string_view op) {
  KILN_CHECK(pred.defined() && pred.dtype() == ScalarType::Bool && pred.numel() == 1, ValueError,
             "{}: the predicate must be a bool tensor with one element", op);
  return pred.item<bool>();
}

// The steps of a scan in order. A step output goes into row i of its stacked result, allocated
// when the first step shows its sizes (they are the same every step: the body's outputs have the
// sizes it was traced with). Outputs that autograd records (the eager backend runs bodies with
// grad enabled) are stacked at the end instead, so the stack is recorded, not writes into a
// buffer that has no history.
std::vector<Tensor> run_scan(const Node& node, const Stack& args, const RunBody& run_body) {
  KILN_CHECK(args.size() == 4, ValueError, "interpret: scan takes 4 arguments, got {}",
             args.size());
  std::vector<Tensor> carries = as_node_outputs(node, args[0].tensor_list());
  const std::vector<Tensor>& xs = args[1].tensor_list();
  const std::vector<Tensor>& additional = args[2].tensor_list();
  const bool reverse = args[3].to_bool();
  KILN_CHECK(!xs.empty() && xs[0].dim() > 0, ValueError,
             "interpret: scan needs xs with a leading dim to scan over");
  const int64_t n = xs[0].size(0);
  for (const Tensor& x : xs)
    KILN_CHECK(x.dim() > 0 && x.size(0) == n, ShapeError,
               "scan: every xs needs the leading size {}, got {}", n, shape_str(x.sizes()));
  KILN_CHECK(n > 0, ShapeError,
             "scan: xs have length 0; scan needs at least one step (the shapes of its outputs are "
             "those of combine_fn's results)");
  const size_t num_carries = carries.size();
  std::vector<Tensor> stacked;
  std::vector<std::vector<Tensor>> recorded;  // [output][i], when a step output requires grad
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = reverse ? n - 1 - step : step;
    std::vector<Tensor> inputs = carries;
    for (const Tensor& x : xs) inputs.push_back(x.select(0, i));
    inputs.insert(inputs.end(), additional.begin(), additional.end());
    std::vector<Tensor> out = run_body(0, inputs);
    KILN_CHECK(out.size() == node.outputs().size(), ValueError,
               "scan: combine_fn returned {} values, expected {}", out.size(),
               node.outputs().size());
    for (size_t k = 0; k < num_carries; ++k) carries[k] = std::move(out[k]);
    carries = as_node_outputs(node, std::move(carries));
    if (step == 0 && std::any_of(out.begin() + static_cast<ptrdiff_t>(num_carries), out.end(),
                                 [](const Tensor& y) { return y.requires_grad(); }))
      recorded.resize(out.size() - num_carries, std::vector<Tensor>(static_cast<size_t>(n)));
    if (!recorded.empty()) {
      for (size_t k = num_carries; k < out.size(); ++k)
        recorded[k - num_carries][static_cast<size_t>(i)] = std::move(out[k]);
      continue;
    }
    if (stacked.empty())
      for (size_t k = num_carries; k < out.size(); ++k) {
        DimVector sizes{n};
        for (int64_t s : out[k].sizes()) sizes.push_back(s);
        stacked.push_back(empty_tensor(sizes, out[k].dtype(), Device::CPU));
      }
    for (size_t k = num_carries; k < out.size(); ++k)
      stacked[k - num_carries].select(0, i).copy_(out[k]);
  }
  for (const std::vector<Tensor>& rows : recorded) stacked.push_back(stack(rows, 0));
  std::vector<Tensor> results = std::move(carries);
  results.insert(results.end(), stacked.begin(), stacked.end());
  return results;
}

}  // namespace

const Value* input_viewed_by(const Value* v) {
  while (v != nullptr) {
    const Node* producer = v->producer();
    if (producer->kind() == NodeKind::Placeholder) return v;
    if (producer->kind() != NodeKind::Call || !producer->op_def().has_tag(kTagView) ||
        producer->args().empty() || !producer->args()[0].is_value())
      return nullptr;
    v = producer->args()[0].as_value();
  }
  return nullptr;
}

std::pair<const Node*, const Value*> first_write_to_an_input(const Graph& body) {
  for (const Node* node : body.calls()) {
    if (!node->mutates()) continue;
    const Schema& schema = schema_of(node->op_def());
    for (size_t i = 0; i < node->args().size(); ++i) {
      const bool written = (i == 0 && node->op_def().has_tag(kTagInplace)) ||
                           (i < schema.args.size() && schema.args[i].mutated);
      if (!written) continue;
      for (const Value* v : node->args()[i].values())
        if (const Value* input = input_viewed_by(v)) return {node, input};
    }
  }
  return {nullptr, nullptr};
}

namespace {

bool has_strides(const Tensor& t, const SymDimVector& strides) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] > 1 && t.strides()[d] != strides[static_cast<size_t>(d)].raw()) return false;
  return true;
}

// A tensor with `t`'s values laid out with `strides` (concrete, non-negative).
Tensor with_strides(const Tensor& t, const SymDimVector& strides) {
  int64_t extent = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return t.contiguous();
    extent += (t.sizes()[d] - 1) * strides[static_cast<size_t>(d)].raw();
  }
  DimVector sizes(t.sizes().begin(), t.sizes().end()), raw;
  for (SymInt s : strides) raw.push_back(s.raw());
  Tensor out = empty_tensor(DimVector{extent}, t.dtype(), Device::CPU).as_strided(sizes, raw);
  out.copy_(t);
  return out;
}

}  // namespace

std::vector<Tensor> inputs_in_traced_layout(const Graph& body, std::span<const Tensor> inputs) {
  const std::span<Value* const> placeholders = body.placeholders();
  std::vector<Tensor> out(inputs.begin(), inputs.end());
  for (size_t i = 0; i < out.size() && i < placeholders.size(); ++i) {
    Tensor& t = out[i];
    const TensorMeta& meta = placeholders[i]->meta();
    if (!t.defined() || static_cast<size_t>(t.dim()) != meta.strides.size()) continue;
    if (meta.has_contiguous_strides()) {
      if (!t.is_contiguous()) t = t.contiguous();
      continue;
    }
    const bool concrete = std::all_of(meta.strides.begin(), meta.strides.end(),
                                      [](SymInt s) { return !s.is_symbolic() && s.raw() >= 0; });
    if (concrete && !has_strides(t, meta.strides)) t = with_strides(t, meta.strides);
  }
  return out;
}

bool is_higher_order(const Node& node) {
  return node.kind() == NodeKind::Call && node.op_def().has_tag(kTagHigherOrder);
}

std::vector<std::string> subgraph_roles(const OpDef& op) {
  if (op.name == "cond") return {"true_fn", "false_fn"};
  if (op.name == "while_loop" || op.name == "while_loop_with_history")
    return {"cond_fn", "body_fn"};
  if (op.name == "scan") return {"combine_fn"};
  return {};
}

void verify_higher_order(const Node& node) {
  const std::vector<std::string> roles = subgraph_roles(node.op_def());
  const std::vector<Subgraph>& subs = node.subgraphs();
  std::string names;
  for (const Subgraph& s : subs) names += (names.empty() ? "" : ", ") + s.name;
  if (roles.size() != subs.size())
    fail(node, fmt::format("{} takes {} subgraphs ({}) but the node has {} ({})",
                           node.op_def().name, roles.size(), fmt::join(roles, ", "), subs.size(),
                           names.empty() ? "none" : names));
  for (size_t i = 0; i < roles.size(); ++i) {
    if (subs[i].name != roles[i])
      fail(node, fmt::format("subgraph {} is named `{}` but {}'s subgraph {} is `{}`", i,
                             subs[i].name, node.op_def().name, i, roles[i]));
    if (subs[i].graph == nullptr) fail(node, fmt::format("subgraph `{}` is null", roles[i]));
    try {
      verify(*subs[i].graph);
    } catch (const Error& e) {
      fail(node, fmt::format("in subgraph `{}`: {}", roles[i], e.what()));
    }
  }
  if (node.op_def().name == "cond") verify_cond(node);
  if (node.op_def().name == "while_loop" || node.op_def().name == "while_loop_with_history")
    verify_while_loop(node);
  if (node.op_def().name == "scan") verify_scan(node);
}

std::vector<Tensor> run_higher_order(const Node& node, const Stack& args) {
  KILN_CHECK(node.subgraphs().size() == subgraph_roles(node.op_def()).size(), ValueError,
             "interpret: {} has {} subgraphs; run verify() on the graph", node.op_def().name,
             node.subgraphs().size());
  return run_higher_order(node, args, [&](size_t i, std::span<const Tensor> inputs) {
    return interpret(subgraph(node, i), inputs);
  });
}

std::vector<Tensor> run_higher_order(const Node& node, const Stack& args, const RunBody& run_body) {
  const std::string& op = node.op_def().name;
  if (op == "scan") return run_scan(node, args, run_body);
  KILN_CHECK(args.size() == 2, ValueError, "interpret: {} takes 2 arguments, got {}", op,
             args.size());
  if (op == "cond") {
    const std::vector<Tensor> operands = args[1].tensor_list();
    const bool taken = read_predicate(args[0].tensor(), op);
    return as_node_outputs(node, run_body(taken ? 0 : 1, operands));
  }
  if (op == "while_loop") {
    // With no iteration the results are the carries themselves, as kiln::while_loop's.
    std::vector<Tensor> carries = as_node_outputs(node, args[0].tensor_list());
    const std::vector<Tensor>& additional = args[1].tensor_list();
    auto inputs = [&] {
      std::vector<Tensor> in = carries;
      in.insert(in.end(), additional.begin(), additional.end());
      return in;
    };
    while (read_predicate(run_body(0, inputs()).at(0), op))
      carries = as_node_outputs(node, run_body(1, inputs()));
    return carries;
  }
  if (op == "while_loop_with_history") {
    // Note [A while_loop's history] (src/aot/joint_graph.cpp).
    std::vector<Tensor> carries = args[0].tensor_list();
    const std::vector<Tensor>& additional = args[1].tensor_list();
    std::vector<std::vector<Tensor>> history(carries.size());
    auto inputs = [&] {
      std::vector<Tensor> in = carries;
      in.insert(in.end(), additional.begin(), additional.end());
      return in;
    };
    int64_t iterations = 0;
    while (read_predicate(run_body(0, inputs()).at(0), op)) {
      for (size_t k = 0; k < carries.size(); ++k) history[k].push_back(carries[k]);
      carries = run_body(1, inputs());
      ++iterations;
    }
    std::vector<Tensor> results = carries;
    results.push_back(scalar_tensor(iterations, ScalarType::Int64));
    for (size_t k = 0; k < carries.size(); ++k) {
      if (history[k].empty()) {
        DimVector sizes{0};
        for (int64_t s : carries[k].sizes()) sizes.push_back(s);
        results.push_back(empty_tensor(sizes, carries[k].dtype(), Device::CPU));
      } else {
        results.push_back(stack(history[k], 0));
      }
    }
    return as_node_outputs(node, std::move(results));
  }
  throw NotImplementedError(
      fmt::format("interpret: no interpreter rule for higher-order op {}", op));
}

}  // namespace kiln::graph
