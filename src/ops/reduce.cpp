// Reductions: sum, mean, prod, amax, amin, max.dim, min.dim, argmax, argmin, var, std,
// logsumexp, norm, all, any. Result dtypes: see include/kiln/ops/reduce.h and
// Note [Sum result dtype]; kernels: src/kernels/cpu/reduce*.cpp.
#include "kiln/ops/reduce.h"

#include "src/kernels/cpu/reduce.h"
#include "src/ops/reduce_utils.h"

namespace kiln {
namespace {

using namespace reduce_utils;

// ---- sum, prod, mean: (self, int[] dim, bool keepdim, ScalarType? dtype) ----

void meta_sum(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask(call.name(), x, call.ints(1));
  call.set_output(0, sum_dtype(x.dtype(), call.arg(3).optional_dtype()),
                  reduced_shape(x, mask, call.bool_arg(2)));
}

void meta_mean(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const ScalarType out = call.arg(3).optional_dtype().value_or(x.dtype());
  KILN_CHECK(is_floating(out), DTypeError,
             "mean: could not infer the output dtype: the input is {} (shape {}) and dtype= is {}; "
             "mean needs a floating input or a floating dtype= (e.g. dtype=float32)",
             dtype_name(x.dtype()), shape_str(x.sym_sizes()), dtype_name(out));
  const uint64_t mask = dim_mask("mean", x, call.ints(1));
  call.set_output(0, out, reduced_shape(x, mask, call.bool_arg(2)));
}

template <cpu::ReduceKind K>
void cpu_accumulate(OpCall& call) {
  const Tensor& out = call.output(0);
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask(call.name(), x, call.ints(1));
  const double scale =
      call.name() == "mean" ? 1.0 / static_cast<double>(reduced_count(x, mask)) : 1.0;
  cpu::reduce(K, out, x.to(out.dtype()), mask, scale);
}

// ---- amax, amin: (self, int[] dim, bool keepdim) ----

void meta_amax(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask(call.name(), x, call.ints(1));
  check_nonempty(call.name(), x, mask);
  call.set_output(0, x.dtype(), reduced_shape(x, mask, call.bool_arg(2)));
}
template <cpu::ReduceKind K>
void cpu_extremum(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::reduce(K, call.output(0), x, dim_mask(call.name(), x, call.ints(1)));
}

// ---- max, min: (self) -> the extremum of every element ----
// Their own ops, not amax/amin over every dim, for the gradient: PyTorch splits it among the
// elements equal to the result, and a NaN result's among the NaN elements (amax's gives a NaN
// result no gradient at all). See max_backward in src/autograd/formulas/reduce.cpp.

void meta_full_extremum(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask(call.name(), x, {});
  check_nonempty(call.name(), x, mask);
  call.set_output(0, x.dtype(), reduced_shape(x, mask, false));
}
template <cpu::ReduceKind K>
void cpu_full_extremum(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::reduce(K, call.output(0), x, dim_mask(call.name(), x, {}));
}

// ---- max.dim, min.dim: (self, int dim, bool keepdim) -> (values, indices) ----

void meta_max_dim(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const int64_t dim = wrap_dim(call.name(), call.int_arg(1), x.dim());
  const uint64_t mask = uint64_t{1} << dim;
  check_nonempty(call.name(), x, mask);
  const SymDimVector shape = reduced_shape(x, mask, call.bool_arg(2));
  call.set_output(0, x.dtype(), shape);
  call.set_output(1, kInt64, shape);
}
void cpu_max_dim(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::arg_reduce(call.name() == "max.dim", call.output(0), call.output(1), x,
                  wrap_dim(call.name(), call.int_arg(1), x.dim()));
}

// ---- argmax, argmin: (self, int? dim, bool keepdim) ----

void meta_argmax(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const std::optional<int64_t> dim = call.arg(1).optional_int();
  const bool keepdim = call.bool_arg(2);
  if (!dim) {
    KILN_CHECK(!may_be_empty(x.sym_numel()), IndexError,
               "{}: Expected reduction dim to have non-zero size: the input (shape {}) is empty; "
               "pass a dim or check for empty tensors first",
               call.name(), shape_str(x.sym_sizes()));
    call.set_output(0, kInt64, keepdim ? DimVector(static_cast<size_t>(x.dim()), 1) : DimVector{});
    return;
  }
  const uint64_t mask = uint64_t{1} << wrap_dim(call.name(), *dim, x.dim());
  check_nonempty(call.name(), x, mask);
  call.set_output(0, kInt64, reduced_shape(x, mask, keepdim));
}
void cpu_argmax(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const std::optional<int64_t> dim = call.arg(1).optional_int();
  const bool is_max = call.name() == "argmax";
  if (!dim) {
    cpu::arg_reduce(is_max, Tensor(), call.output(0), x.reshape({x.numel()}), 0);
  } else {
    cpu::arg_reduce(is_max, Tensor(), call.output(0), x, wrap_dim(call.name(), *dim, x.dim()));
  }
}

// ---- var, std: (self, int[] dim, float correction, bool keepdim); logsumexp: (self, int[] dim,
// bool keepdim); norm: (self, Scalar p, int[] dim, bool keepdim). Floating only. ----

void meta_var(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask(call.name(), x, call.ints(1));
  call.set_output(0, x.dtype(), reduced_shape(x, mask, call.bool_arg(3)));
}
void cpu_var(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::variance(call.output(0), x, dim_mask(call.name(), x, call.ints(1)), call.double_arg(2),
                call.name() == "std");
}

void meta_logsumexp(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask("logsumexp", x, call.ints(1));
  call.set_output(0, x.dtype(), reduced_shape(x, mask, call.bool_arg(2)));
}
void cpu_logsumexp(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::logsumexp(call.output(0), x, dim_mask("logsumexp", x, call.ints(1)));
}

void meta_norm(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask("norm", x, call.ints(2));
  call.set_output(0, x.dtype(), reduced_shape(x, mask, call.bool_arg(3)));
}
void cpu_norm(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::norm(call.output(0), x, dim_mask("norm", x, call.ints(2)), call.scalar(1).to_double());
}

// ---- all, any: (self, int[] dim, bool keepdim) -> bool ----

void meta_all(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const uint64_t mask = dim_mask(call.name(), x, call.ints(1));
  call.set_output(0, kBool, reduced_shape(x, mask, call.bool_arg(2)));
}

OpDef reduction(std::string name, std::string schema, MetaFn meta, KernelFn cpu, DTypeSet dtypes,
                uint32_t tags = kTagReduction) {
  return {.name = std::move(name),
          .schema = std::move(schema),
          .family = "reduce",
          .meta = meta,
          .cpu = cpu,
          .dtypes = dtypes,
          .tags = tags};
}

}  // namespace

void register_scan_softmax_ops(OpRegistry& r);  // scan_softmax.cpp

void register_reduce_ops(OpRegistry& r) {
  using cpu::ReduceKind;
  constexpr uint32_t kIntOut = kTagReduction | kTagNondifferentiable;
  r.add(reduction("sum", "sum(Tensor self, int[] dim, bool keepdim, ScalarType? dtype) -> Tensor",
                  meta_sum, cpu_accumulate<ReduceKind::Sum>, dtypes::kAll));
  r.add(reduction("prod", "prod(Tensor self, int[] dim, bool keepdim, ScalarType? dtype) -> Tensor",
                  meta_sum, cpu_accumulate<ReduceKind::Prod>, dtypes::kAll));
  r.add(reduction("mean", "mean(Tensor self, int[] dim, bool keepdim, ScalarType? dtype) -> Tensor",
                  meta_mean, cpu_accumulate<ReduceKind::Sum>, dtypes::kAll));
  r.add(reduction("amax", "amax(Tensor self, int[] dim, bool keepdim) -> Tensor", meta_amax,
                  cpu_extremum<ReduceKind::Max>, dtypes::kAll));
  r.add(reduction("amin", "amin(Tensor self, int[] dim, bool keepdim) -> Tensor", meta_amax,
                  cpu_extremum<ReduceKind::Min>, dtypes::kAll));
  r.add(reduction("max", "max(Tensor self) -> Tensor", meta_full_extremum,
                  cpu_full_extremum<ReduceKind::Max>, dtypes::kAll));
  r.add(reduction("min", "min(Tensor self) -> Tensor", meta_full_extremum,
                  cpu_full_extremum<ReduceKind::Min>, dtypes::kAll));
  r.add(reduction("max.dim",
                  "max.dim(Tensor self, int dim, bool keepdim) -> (Tensor values, Tensor indices)",
                  meta_max_dim, cpu_max_dim, dtypes::kAll));
  r.add(reduction("min.dim",
                  "min.dim(Tensor self, int dim, bool keepdim) -> (Tensor values, Tensor indices)",
                  meta_max_dim, cpu_max_dim, dtypes::kAll));
  r.add(reduction("argmax", "argmax(Tensor self, int? dim, bool keepdim) -> Tensor", meta_argmax,
                  cpu_argmax, dtypes::kAll, kIntOut));
  r.add(reduction("argmin", "argmin(Tensor self, int? dim, bool keepdim) -> Tensor", meta_argmax,
                  cpu_argmax, dtypes::kAll, kIntOut));
  r.add(reduction("var", "var(Tensor self, int[] dim, float correction, bool keepdim) -> Tensor",
                  meta_var, cpu_var, dtypes::kFloating));
  r.add(reduction("std", "std(Tensor self, int[] dim, float correction, bool keepdim) -> Tensor",
                  meta_var, cpu_var, dtypes::kFloating));
  r.add(reduction("logsumexp", "logsumexp(Tensor self, int[] dim, bool keepdim) -> Tensor",
                  meta_logsumexp, cpu_logsumexp, dtypes::kFloating));
  r.add(reduction("norm", "norm(Tensor self, Scalar p, int[] dim, bool keepdim) -> Tensor",
                  meta_norm, cpu_norm, dtypes::kFloating));
  r.add(reduction("all", "all(Tensor self, int[] dim, bool keepdim) -> Tensor", meta_all,
                  cpu_extremum<ReduceKind::All>, dtypes::kAll, kIntOut));
  r.add(reduction("any", "any(Tensor self, int[] dim, bool keepdim) -> Tensor", meta_all,
                  cpu_extremum<ReduceKind::Any>, dtypes::kAll, kIntOut));
  register_scan_softmax_ops(r);
}

// ---- public API ----

namespace {
std::vector<int64_t> dim_list(std::optional<int64_t> dim) {
  return dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
}
std::pair<Tensor, Tensor> two(Stack s) {
  return {std::move(s[0].tensor()), std::move(s[1].tensor())};
}
}  // namespace

Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  static const OpId id = op_id("sum");
  return dispatch::call_tensor(id, x, dims, keepdim, dtype);
}
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  static const OpId id = op_id("mean");
  return dispatch::call_tensor(id, x, dims, keepdim, dtype);
}
Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  static const OpId id = op_id("prod");
  return dispatch::call_tensor(id, x, dim_list(dim), keepdim, dtype);
}
Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) {
  static const OpId id = op_id("amax");
  return dispatch::call_tensor(id, x, dims, keepdim);
}
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) {
  static const OpId id = op_id("amin");
  return dispatch::call_tensor(id, x, dims, keepdim);
}
Tensor max(const Tensor& x) {
  static const OpId id = op_id("max");
  return dispatch::call_tensor(id, x);
}
Tensor min(const Tensor& x) {
  static const OpId id = op_id("min");
  return dispatch::call_tensor(id, x);
}
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  static const OpId id = op_id("max.dim");
  return two(dispatch::call_boxed(id, x, dim, keepdim));
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  static const OpId id = op_id("min.dim");
  return two(dispatch::call_boxed(id, x, dim, keepdim));
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  static const OpId id = op_id("argmax");
  return dispatch::call_tensor(id, x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  static const OpId id = op_id("argmin");
  return dispatch::call_tensor(id, x, dim, keepdim);
}
Tensor var(const Tensor& x, IntArrayRef dims, double correction, bool keepdim) {
  static const OpId id = op_id("var");
  return dispatch::call_tensor(id, x, dims, correction, keepdim);
}
Tensor std(const Tensor& x, IntArrayRef dims, double correction, bool keepdim) {
  static const OpId id = op_id("std");
  return dispatch::call_tensor(id, x, dims, correction, keepdim);
}
Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim) {
  static const OpId id = op_id("logsumexp");
  return dispatch::call_tensor(id, x, dims, keepdim);
}
Tensor norm(const Tensor& x, const Scalar& p, IntArrayRef dims, bool keepdim) {
  static const OpId id = op_id("norm");
  return dispatch::call_tensor(id, x, p, dims, keepdim);
}
Tensor all(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  static const OpId id = op_id("all");
  return dispatch::call_tensor(id, x, dim_list(dim), keepdim);
}
Tensor any(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  static const OpId id = op_id("any");
  return dispatch::call_tensor(id, x, dim_list(dim), keepdim);
}

Tensor Tensor::sum(std::optional<ScalarType> dtype) const {
  return kiln::sum(*this, {}, false, dtype);
}
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return kiln::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const {
  return kiln::mean(*this, {}, false, dtype);
}
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return kiln::mean(*this, dims, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const {
  return kiln::prod(*this, std::nullopt, false, dtype);
}
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return kiln::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return kiln::max(*this); }
Tensor Tensor::min() const { return kiln::min(*this); }
std::pair<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return kiln::max(*this, dim, keepdim);
}
std::pair<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return kiln::min(*this, dim, keepdim);
}
Tensor Tensor::amax(IntArrayRef dims, bool keepdim) const {
  return kiln::amax(*this, dims, keepdim);
}
Tensor Tensor::amin(IntArrayRef dims, bool keepdim) const {
  return kiln::amin(*this, dims, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmin(*this, dim, keepdim);
}
Tensor Tensor::var(IntArrayRef dims, double correction, bool keepdim) const {
  return kiln::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(IntArrayRef dims, double correction, bool keepdim) const {
  return kiln::std(*this, dims, correction, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const {
  return kiln::logsumexp(*this, dims, keepdim);
}
Tensor Tensor::norm(const Scalar& p, IntArrayRef dims, bool keepdim) const {
  return kiln::norm(*this, p, dims, keepdim);
}
Tensor Tensor::all() const { return kiln::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return kiln::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return kiln::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return kiln::any(*this, dim, keepdim); }

}  // namespace kiln
