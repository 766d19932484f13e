// Note [Verify mode] (verify.h).
#include "src/capture/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "kiln/ops/creation.h"
#include "src/core/shape.h"
#include "src/graph/graph.h"

namespace kiln::capture {
namespace {

// Copies of `inputs` that alias as the inputs do: each storage is copied once, and each input
// becomes a view of its storage's copy with the same sizes, strides and offset. Copies do not
// require grad (the interpreter's run is only compared, never differentiated).
std::vector<Tensor> copy_inputs(std::span<const Tensor> inputs) {
  struct StorageCopy {
    Tensor flat;  // the whole storage, as a 1-D tensor of the first input's dtype
  };
  std::unordered_map<const StorageImpl*, StorageCopy> copies;
  std::vector<Tensor> out;
  out.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      out.emplace_back();
      continue;
    }
    const StorageImpl* storage = t.impl()->storage().get();
    const int64_t item = t.element_size();
    auto it = copies.find(storage);
    if (it == copies.end()) {
      const auto n = static_cast<int64_t>(storage->nbytes()) / item;
      Tensor flat = empty({n}, t.dtype());
      if (n > 0) std::memcpy(flat.data_ptr(), storage->data(), static_cast<size_t>(n * item));
      it = copies.emplace(storage, StorageCopy{flat}).first;
    }
    const Tensor& flat = it->second.flat;
    Tensor copy;
    if (flat.dtype() != t.dtype()) {  // one storage seen as two dtypes: copy this one alone
      copy = t.detach().clone();
    } else {
      std::vector<SymInt> sizes(t.sizes().begin(), t.sizes().end());
      std::vector<SymInt> strides(t.strides().begin(), t.strides().end());
      copy = flat.as_strided(sizes, strides, SymInt(t.storage_offset()));
    }
    copy.impl()->set_wrapped_number(t.impl()->is_wrapped_number());  // it promotes as a Scalar
    out.push_back(std::move(copy));
  }
  return out;
}

std::string index_str(int64_t flat, IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    index[d] = sizes[d] == 0 ? 0 : flat % sizes[d];
    flat = sizes[d] == 0 ? 0 : flat / sizes[d];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// Within rtol * |expected| + atol * scale, where scale is the largest finite |expected| (at
// least 1). Loose, because the compiled code may add a reduction's terms in another order, block
// a matmul differently and keep float16/bfloat16 intermediates in float32 (Note [Compiled
// tolerances] in tests/capture/compare.h); what verify looks for, a miscompile (a wrong index, a
// missed broadcast, a dropped update), is off by the order of the values themselves.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_of(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float64:  // often a float32 computation's result, converted
    case ScalarType::Float32:
      return {1e-3, 1e-4};
    case ScalarType::Float16:
      return {1e-2, 1e-2};
    default:  // BFloat16
      return {5e-2, 5e-2};
  }
}

// The first difference between the compiled run's tensor and the interpreter's, in words; empty
// when they agree.
std::string difference(const Tensor& got, const Tensor& want) {
  if (got.defined() != want.defined())
    return got.defined() ? "the interpreter gives an undefined tensor"
                         : "it is undefined where the interpreter gives a tensor";
  if (!got.defined()) return {};
  if (got.dtype() != want.dtype())
    return fmt::format("its dtype is {} where the interpreter's is {}", dtype_name(got.dtype()),
                       dtype_name(want.dtype()));
  if (got.sizes() != want.sizes())
    return fmt::format("its shape is {} where the interpreter's is {}", shape_str(got.sym_sizes()),
                       shape_str(want.sym_sizes()));
  const ScalarType dtype = got.dtype();
  if (is_floating(dtype)) {
    const std::vector<double> a = got.detach().to(kFloat64).contiguous().to_vector<double>();
    const std::vector<double> b = want.detach().to(kFloat64).contiguous().to_vector<double>();
    const Tolerance tol = tolerance_of(dtype);
    double scale = 1;
    for (double x : b)
      if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < a.size(); ++i) {
      const bool same = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ||
                        std::abs(a[i] - b[i]) <= tol.atol * scale + tol.rtol * std::abs(b[i]);
      if (!same)
        return fmt::format(
            "element {} is {} where the interpreter gives {} ({} tolerance: {} * |value| + {} * "
            "{})",
            index_str(static_cast<int64_t>(i), got.sizes()), a[i], b[i], dtype_name(dtype),
            tol.rtol, tol.atol, scale);
    }
    return {};
  }
  const Tensor a = got.detach().contiguous(), b = want.detach().contiguous();
  const int64_t item = a.element_size();
  const auto* pa = static_cast<const unsigned char*>(a.data_ptr());
  const auto* pb = static_cast<const unsigned char*>(b.data_ptr());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(pa + i * item, pb + i * item, static_cast<size_t>(item)) == 0) continue;
    auto value = [&](const Tensor& t) {
      return dtype == ScalarType::UInt64
                 ? fmt::format("{}", t.reshape({-1}).to_vector<uint64_t>()[i])
                 : fmt::format("{}", t.reshape({-1}).to(kInt64).to_vector<int64_t>()[i]);
    };
    return fmt::format("element {} is {} where the interpreter gives {}", index_str(i, got.sizes()),
                       value(a), value(b));
  }
  return {};
}

// "%4 = mul(%2, 0.5) (at model.cpp:12)" for the node that produced output `index` of `g`.
std::string describe_output(const graph::Graph& g, size_t index) {
  const graph::Value* v = g.outputs()[index];
  const graph::Node* node = v->producer();
  if (node == nullptr) return fmt::format("%{}", v->id());
  std::string text = graph::to_string(*node);
  if (!node->source().empty()) text += fmt::format(" (recorded at {})", node->source());
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

[[noreturn]] void throw_graph_difference(const graph::Graph& cached, const graph::Graph& now,
                                         const std::string& function_name, int depth) {
  const std::vector<std::string> a = lines_of(graph::to_string(cached));
  const std::vector<std::string> b = lines_of(graph::to_string(now));
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  std::string where;
  const std::vector<graph::Node*> nodes = now.nodes();
  if (k < nodes.size() && !nodes[k]->source().empty())
    where = fmt::format(" (the new line was recorded at {})", nodes[k]->source());
  throw VerifyError(fmt::format(
      "{}: verify: tracing the function again for this call recorded a different graph than the "
      "cached one (segment {}), first at line {}{}:\n  cached: {}\n  now:    {}\nThe function "
      "read state that no guard covers (a captured variable, a global, a plain member of a "
      "module, a container it indexes) and that state changed since the trace, so the cached "
      "graph is stale. Pass the state as an argument, register it on a module with "
      "nn::Module::register_attribute (guarded), or keep it constant (README, Soundness)",
      function_name, depth, k + 1, where, k < a.size() ? a[k] : "(end of graph)",
      k < b.size() ? b[k] : "(end of graph)"));
}

std::string break_str(const std::optional<BreakPoint>& brk) {
  if (!brk) return "no graph break (the function returns)";
  return fmt::format("a graph break at {}: {}", brk->where.empty() ? "?" : brk->where, brk->reason);
}

}  // namespace

std::vector<Tensor> run_verified(const Segment& segment, std::span<const Tensor> inputs,
                                 const std::string& function_name, const std::string& backend,
                                 int depth) {
  std::vector<Tensor> copies = copy_inputs(inputs);
  std::vector<Tensor> outputs = segment.compiled(inputs);
  std::vector<Tensor> expected;
  try {
    expected = segment.reference(copies);
  } catch (const Error& e) {
    throw VerifyError(fmt::format(
        "{}: verify: segment {} ran compiled without an error, but the graph interpreter raised "
        "on the same inputs: {}",
        function_name, depth, e.what()));
  }
  for (size_t i = 0; i < outputs.size() && i < expected.size(); ++i) {
    const std::string diff = difference(outputs[i], expected[i]);
    if (diff.empty()) continue;
    throw VerifyError(fmt::format(
        "{}: verify: output {} of segment {} differs between the compiled graph and the graph "
        "interpreter: {}. It is {}. The backend ('{}') computed a wrong value: please report it "
        "with the graph (KILN_LOGS=graph), and use backend \"eager\" meanwhile",
        function_name, i, depth, diff, describe_output(segment.graph, i), backend));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string diff = difference(inputs[i], copies[i]);
    if (diff.empty()) continue;
    throw VerifyError(fmt::format(
        "{}: verify: after segment {} ran, its input {} ({}) differs between the compiled graph "
        "and the graph interpreter, which update it in place differently: {}. Please report it "
        "with the graph (KILN_LOGS=graph), and use backend \"eager\" meanwhile",
        function_name, depth, i, segment.inputs[i].source, diff));
  }
  return outputs;
}

void check_replayed_segment(const Segment& cached, const Segment& now,
                            const std::string& function_name, int depth) {
  if (graph::to_string(cached.graph) != graph::to_string(now.graph))
    throw_graph_difference(cached.graph, now.graph, function_name, depth);
  const bool same_break =
      cached.brk.has_value() == now.brk.has_value() &&
      (!cached.brk || (cached.brk->kind == now.brk->kind && cached.brk->where == now.brk->where));
  KILN_CHECK(same_break, VerifyError,
             "{}: verify: tracing the function again for this call ended segment {} with {}, "
             "where the cached trace has {}. The function read state that no guard covers and "
             "that state changed since the trace (README, Soundness)",
             function_name, depth, break_str(now.brk), break_str(cached.brk));
  std::vector<std::string> a, b;
  for (const Effect& e : cached.effects) a.push_back(e.what);
  for (const Effect& e : now.effects) b.push_back(e.what);
  KILN_CHECK(a == b, VerifyError,
             "{}: verify: tracing the function again for this call recorded the effects [{}] in "
             "segment {}, where the cached trace has [{}] (README, Soundness)",
             function_name, fmt::join(b, ", "), depth, fmt::join(a, ", "));
  for (size_t i = 0; i < cached.inputs.size() && i < now.inputs.size(); ++i) {
    const InputRef& old = cached.inputs[i];
    const InputRef& cur = now.inputs[i];
    if (old.kind != InputRef::Kind::Constant && old.kind != InputRef::Kind::Grad) continue;
    if (old.filled_by_effect) continue;  // an rng_state: new every trace, refilled every call
    if (old.constant.impl() == cur.constant.impl()) continue;
    // A tensor the function creates from host data while it runs is a new tensor every trace:
    // equal values are the same constant.
    if (old.kind == InputRef::Kind::Constant && difference(cur.constant, old.constant).empty())
      continue;
    throw VerifyError(fmt::format(
        "{}: verify: graph input {} of segment {} ({}) is not the tensor the cached graph reads: "
        "the function captured a tensor (or a parameter) that has been replaced since the trace "
        "(a captured Tensor variable assigned a new tensor), and the cached graph still reads "
        "the old one. Pass the tensor as an argument, or register it on a module as a "
        "parameter or buffer (README, Soundness)",
        function_name, i, depth, old.source));
  }
}

}  // namespace kiln::capture
