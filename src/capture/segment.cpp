// Running a segment of the trace tree: its inputs, its runtime checks, and the value that picks
// the next segment (Note [Trace tree]). Used by the tracer (first call) and the cache (hits).
#include <fmt/format.h>

#include "src/capture/tracer.h"
#include "src/core/shape.h"
#include "src/trace/md5.h"

namespace kiln::capture {

std::string value_key_of(const Tensor& real) {
  const Tensor c = real.contiguous();
  std::string key = fmt::format("{}{}:", dtype_name(c.dtype()), shape_str(c.sizes()));
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  const int64_t n = c.numel() * c.element_size();
  // A large value (to_vector() of a whole tensor) is keyed by its digest: the key stays short,
  // and two values collide with probability 2^-128.
  if (n > 64)
    return key + "md5:" +
           trace::md5_hex(
               std::string_view(reinterpret_cast<const char*>(bytes), static_cast<size_t>(n)));
  for (int64_t i = 0; i < n; ++i) key += fmt::format("{:02x}", bytes[i]);
  return key;
}

std::vector<Tensor> gather_inputs(const Segment& segment, const std::vector<ArgValue>& args,
                                  const std::vector<std::vector<Tensor>>& outputs_by_depth) {
  std::vector<Tensor> inputs;
  inputs.reserve(segment.inputs.size());
  for (const InputRef& ref : segment.inputs) {
    if (ref.kind == InputRef::Kind::Prior)
      inputs.push_back(outputs_by_depth[ref.segment][ref.index]);
    else
      inputs.push_back(resolve(ref, args));
  }
  return inputs;
}

void run_effects(const Segment& segment) {
  for (const Effect& effect : segment.effects) effect.run();
}

void run_backward(const BreakPoint& brk, const std::vector<std::vector<Tensor>>& outputs_by_depth) {
  const Tensor& root = outputs_by_depth[brk.tensor.segment][brk.tensor.index];
  const Tensor gradient =
      brk.gradient ? outputs_by_depth[brk.gradient->segment][brk.gradient->index] : Tensor();
  root.backward(gradient, brk.retain_graph);
}

int64_t bound_value(const UnbackedBinding& binding,
                    const std::vector<std::vector<Tensor>>& outputs_by_depth) {
  const Tensor& t = outputs_by_depth[binding.output.segment][binding.output.index];
  return binding.dim < 0 ? t.item<int64_t>() : t.sizes()[binding.dim];
}

namespace {
std::optional<int64_t> evaluate_with(sym::ExprPtr e, const std::vector<UnbackedBinding>& bindings,
                                     const std::vector<std::vector<Tensor>>& outputs_by_depth,
                                     const SymbolTable& symbols,
                                     const std::vector<int64_t>& symbol_values) {
  auto lookup = [&](sym::ExprPtr s) -> std::optional<int64_t> {
    for (const UnbackedBinding& b : bindings)
      if (b.symbol == s) return bound_value(b, outputs_by_depth);
    const int i = symbols.index_of(s);
    if (i < 0) return std::nullopt;
    return symbol_values[i];
  };
  return sym::evaluate(e, lookup);
}
}  // namespace

void check_runtime_asserts(const Segment& segment,
                           const std::vector<std::vector<Tensor>>& outputs_by_depth,
                           const SymbolTable& symbols, const std::vector<int64_t>& symbol_values) {
  for (const RuntimeCheck& check : segment.runtime_checks) {
    const std::optional<int64_t> ok =
        evaluate_with(check.condition, check.bindings, outputs_by_depth, symbols, symbol_values);
    if (ok && *ok != 0) continue;
    std::string values;
    for (const UnbackedBinding& b : check.bindings)
      values += fmt::format("{}{} = {}", values.empty() ? "" : ", ", sym::to_string(b.symbol),
                            bound_value(b, outputs_by_depth));
    throw ValueError(fmt::format(
        "kiln::check failed at {}: {} does not hold for this call ({}); the compiled function "
        "asserted it about a data-dependent value",
        check.origin, sym::to_string(check.condition), values.empty() ? "?" : values));
  }
}

std::string branch_key(const BreakPoint& brk,
                       const std::vector<std::vector<Tensor>>& outputs_by_depth,
                       const SymbolTable& symbols, const std::vector<int64_t>& symbol_values) {
  if (brk.kind == BreakPoint::Kind::Eager || brk.kind == BreakPoint::Kind::Backward ||
      brk.kind == BreakPoint::Kind::Effect)
    return "";
  if (brk.kind == BreakPoint::Kind::Item)
    return value_key_of(outputs_by_depth[brk.tensor.segment][brk.tensor.index]);
  auto lookup = [&](sym::ExprPtr s) -> std::optional<int64_t> {
    for (const UnbackedBinding& b : brk.bindings)
      if (b.symbol == s) return bound_value(b, outputs_by_depth);
    const int i = symbols.index_of(s);
    if (i < 0) return std::nullopt;
    return symbol_values[i];
  };
  const std::optional<int64_t> value = sym::evaluate(brk.condition, lookup);
  KILN_CHECK(value.has_value(), Error,
             "internal: the graph-break condition {} (at {}) could not be evaluated",
             sym::to_string(brk.condition), brk.where);
  return *value != 0 ? "true" : "false";
}

}  // namespace kiln::capture
