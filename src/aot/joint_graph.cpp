#include "src/aot/joint_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops/creation.h"
#include "src/aot/higher_order_autograd.h"
#include "src/aot/recorder.h"
#include "src/autograd/autograd_meta.h"
#include "src/autograd/derivatives.h"
#include "src/graph/higher_order.h"
#include "src/graph/meta_inference.h"
#include "src/sym/shape_env.h"

namespace kiln::aot {
namespace {

// What the trace returns: the joint graph (build_joint_graph), or only the gradients of a body
// (build_vjp_graph).
enum class JointForm : uint8_t { Joint, Vjp };

JointGraph trace_joint(const graph::Graph& forward, const std::vector<bool>& requires_grad,
                       int num_differentiable_outputs, JointForm form) {
  const std::span<graph::Value* const> primals = forward.placeholders();
  KILN_CHECK(requires_grad.size() == primals.size(), ValueError,
             "build_joint_graph: {} requires_grad flags for {} inputs", requires_grad.size(),
             primals.size());
  for (const graph::Value* p : primals)
    KILN_CHECK(!p->meta().is_symbolic() || sym::ShapeEnv::current() != nullptr, NotImplementedError,
               "AOT autograd: input {} has symbolic sizes but no ShapeEnv is active to evaluate "
               "them (Note [AOT autograd with symbolic sizes]); the graph is differentiated by "
               "the eager autograd engine",
               p->producer()->source());
  for (const graph::Node* node : forward.calls())
    KILN_CHECK(!node->mutates(), NotImplementedError,
               "AOT autograd: the graph mutates a tensor ({}); functionalize it first (Note "
               "[Functionalization])",
               graph::to_string(*node));

  JointGraph joint;
  graph::Graph& g = joint.graph;
  Recorder recorder(g);
  std::vector<Tensor> fakes;
  for (size_t i = 0; i < primals.size(); ++i) {
    graph::TensorMeta meta = primals[i]->meta();
    meta.requires_grad = false;
    Tensor fake = graph::fake_tensor(meta);
    recorder.bind(fake, g.add_placeholder(primals[i]->producer()->source(), meta));
    if (requires_grad[i]) {
      KILN_CHECK(is_floating(meta.dtype), DTypeError,
                 "AOT autograd: input {} requires grad but has dtype {}; only floating tensors "
                 "have gradients",
                 primals[i]->producer()->source(), dtype_name(meta.dtype));
      fake.requires_grad_(true);
    }
    fakes.push_back(fake);
  }
  joint.num_primals = static_cast<int>(primals.size());

  std::vector<Tensor> outputs;
  {
    RecordScope record(recorder);
    EnableGradGuard grad_on;
    outputs = graph::interpret_symbolic(forward, fakes, record_higher_order);
  }
  joint.num_forward_outputs = static_cast<int>(outputs.size());

  // Tangents: one per output that carries autograd history.
  std::vector<Tensor> differentiable, tangents;
  int placed_tangents = 0;
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& out = outputs[j];
    const bool may_differentiate =
        num_differentiable_outputs < 0 || static_cast<int>(j) < num_differentiable_outputs;
    // A vjp graph takes a gradient for every floating output, whether or not this body's output
    // depends on an input (the other branch's may).
    const bool differentiates = may_differentiate && autograd::requires_grad(out);
    if (!is_floating(out.dtype()) || !(differentiates || form == JointForm::Vjp)) {
      joint.tangent_of_output.push_back(-1);
      continue;
    }
    graph::TensorMeta meta = graph::TensorMeta::contiguous(
        out.dtype(), SymDimVector(out.sym_sizes().begin(), out.sym_sizes().end()));
    Tensor tangent = graph::fake_tensor(meta);
    recorder.bind(tangent, g.add_placeholder(fmt::format("tangent{}", placed_tangents), meta));
    ++placed_tangents;
    joint.tangent_of_output.push_back(static_cast<int>(placed_tangents - 1));
    if (!differentiates) continue;
    differentiable.push_back(out);
    tangents.push_back(tangent);
  }
  joint.num_tangents = placed_tangents;

  std::vector<Tensor> wrt;
  std::vector<int> wrt_index;
  for (size_t i = 0; i < fakes.size(); ++i) {
    if (!requires_grad[i]) continue;
    wrt.push_back(fakes[i]);
    wrt_index.push_back(static_cast<int>(i));
  }
  std::vector<Tensor> grads;
  if (!differentiable.empty() && !wrt.empty()) {
    RecordScope record(recorder);
    autograd::FunctionalFormulasGuard functional;
    try {
      grads = kiln::grad(differentiable, wrt, tangents, /*retain_graph=*/false,
                         /*create_graph=*/false, /*allow_unused=*/true);
    } catch (const NotImplementedError&) {
      throw;
    } catch (const Error& e) {
      // A formula that reads data (cumprod's check for zeros) cannot run on fake tensors; the
      // forward traced fine, so this is the recorder's limit, not the user's error.
      throw NotImplementedError(fmt::format(
          "AOT autograd: a backward formula cannot run on fake tensors ({}); the graph runs "
          "through the eager autograd engine",
          e.what()));
    }
  }
  std::vector<graph::Value*> results;
  if (form == JointForm::Joint)
    for (const Tensor& out : outputs)
      results.push_back(recorder.value_of(out, "the graph's output"));
  grads.resize(wrt.size());
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k].defined()) {
      if (form == JointForm::Joint) continue;  // the outputs do not depend on this input
      RecordScope record(recorder);            // a vjp graph returns zeros for it
      grads[k] = zeros_like(wrt[k]);
    }
    if (form == JointForm::Vjp) grads[k] = not_an_input(recorder, grads[k]);
    results.push_back(recorder.value_of(grads[k], "a gradient"));
    joint.grad_primals.push_back(wrt_index[k]);
  }
  g.set_outputs(std::move(results));
  // The partitioner follows values, not memory: a write the graph makes through an alias would be
  // lost (Note [Functional backward formulas]). None should remain; if one does, the graph runs
  // through the eager engine rather than with a wrong gradient.
  for (const graph::Node* node : g.calls())
    KILN_CHECK(!node->mutates(), NotImplementedError,
               "AOT autograd: the recorded backward writes into a tensor ({}); the graph runs "
               "through the eager autograd engine",
               graph::to_string(*node));
  graph::eliminate_dead_code(g);
  return joint;
}

}  // namespace

JointGraph build_joint_graph(const graph::Graph& forward, const std::vector<bool>& requires_grad,
                             int num_differentiable_outputs) {
  return trace_joint(forward, requires_grad, num_differentiable_outputs, JointForm::Joint);
}

graph::Graph build_vjp_graph(const graph::Graph& body, const std::vector<bool>& requires_grad) {
  return std::move(trace_joint(body, requires_grad, -1, JointForm::Vjp).graph);
}

}  // namespace kiln::aot
