// Lowerings of the reductions: sum, prod, mean, amax/amin, max.dim/min.dim, argmax/argmin,
// all/any and var/std (Welford). A reduction is always realized (Note [Realization] in
// graph_lowering.cpp): its ComputedBuffer holds a Reduction whose body loads one input element.
#include "kiln/error.h"
#include "src/lower/lowerings/common.h"

namespace kiln::lower {
namespace {

// Which dims of an `ndim`-dim input are reduced: an empty list means all of them.
std::vector<bool> reduced_dims(IntArrayRef dims, int64_t ndim, std::string_view op) {
  std::vector<bool> mask(ndim, dims.empty());
  for (int64_t d : dims) {
    if (ndim == 0) continue;  // dim 0 / -1 of a 0-dim tensor: the one element
    mask[wrap_dim(d, ndim, op)] = true;
  }
  return mask;
}

struct ReductionPlan {
  std::vector<ExprPtr> ranges;            // output sizes
  std::vector<ExprPtr> reduction_ranges;  // sizes of the reduced dims, in order
  std::function<Index(const Index&, const Index&)> input_index;
};

ReductionPlan plan(const TensorBox& x, const std::vector<bool>& mask, bool keepdim) {
  ReductionPlan p;
  const size_t n = x.dim();
  for (size_t d = 0; d < n; ++d) {
    if (mask[d]) {
      p.reduction_ranges.push_back(x.sizes()[d]);
      if (keepdim) p.ranges.push_back(sym::integer(1));
    } else {
      p.ranges.push_back(x.sizes()[d]);
    }
  }
  p.input_index = [mask, keepdim, n](const Index& index, const Index& rindex) {
    Index in(n);
    size_t j = 0, k = 0;
    for (size_t d = 0; d < n; ++d) {
      if (mask[d]) {
        in[d] = rindex[k++];
        if (keepdim) ++j;
      } else {
        in[d] = index[j++];
      }
    }
    return in;
  };
  return p;
}

// A realized reduction of `x` (value cast to `value_dtype` before it is accumulated).
TensorBox reduce(GraphLowering& l, const TensorBox& x, const std::vector<bool>& mask, bool keepdim,
                 ReductionType type, ScalarType value_dtype, ScalarType out_dtype) {
  ReductionPlan p = plan(x, mask, keepdim);
  Loader ld = x.make_loader();
  Reduction r;
  r.dtype = out_dtype;
  r.ranges = p.ranges;
  r.reduction_ranges = p.reduction_ranges;
  r.type = type;
  r.inner_fn = [ld, in = p.input_index, value_dtype](const Index& index, const Index& rindex) {
    return cast(ld(in(index, rindex)), value_dtype);
  };
  return TensorBox::of(std::make_shared<StorageBox>(l.add_computed(std::move(r))));
}

ExprPtr reduced_count(const TensorBox& x, const std::vector<bool>& mask) {
  ExprPtr n = sym::integer(1);
  for (size_t d = 0; d < mask.size(); ++d) {
    if (mask[d]) n = sym::mul(n, x.sizes()[d]);
  }
  return n;
}

// sum/prod/amax/amin/all/any(self, dim[], keepdim[, dtype]).
LoweringFn simple(ReductionType type) {
  return [type](GraphLowering& l, const graph::Node& node) -> std::vector<TensorBox> {
    const TensorBox& x = arg_box(l, node, 0);
    const graph::TensorMeta& out = out_meta(node);
    const auto mask = reduced_dims(arg_constant(node, 1).int_list(), x.dim(), node.op_def().name);
    const bool keepdim = arg_constant(node, 2).to_bool();
    ScalarType value = compute_type(out.dtype);
    if (type == ReductionType::max || type == ReductionType::min) value = compute_type(x.dtype());
    if (type == ReductionType::any || type == ReductionType::all) value = kBool;
    return {reduce(l, x, mask, keepdim, type, value, out.dtype)};
  };
}

// mean = sum / count, in the output dtype; integers sum in float64 (see the mean decomposition,
// src/lower/decomp/reduce.cpp).
std::vector<TensorBox> lower_mean(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  const graph::TensorMeta& out = out_meta(node);
  const auto mask = reduced_dims(arg_constant(node, 1).int_list(), x.dim(), "mean");
  const bool keepdim = arg_constant(node, 2).to_bool();
  const ScalarType c = is_floating(x.dtype()) ? compute_type(out.dtype) : kFloat64;
  TensorBox s = reduce(l, x, mask, keepdim, ReductionType::sum, c, c);
  Loader ld = s.make_loader();
  ExprPtr count = reduced_count(x, mask);
  const ScalarType out_dtype = out.dtype;
  return {make_pointwise(out_dtype, s.sizes(), [=](const Index& i) {
    Val n = cast(ops().index_expr(count, kInt64), c);
    return cast(binary(BinaryOp::truediv, ld(i), n), out_dtype);
  })};
}

// var/std(self, dim[], correction, keepdim): Welford's m2 / max(count - correction, 0), in
// float64 as the eager kernel computes it (see the var decomposition, src/lower/decomp/reduce.cpp:
// in float32 the m2 of values near 1e19 overflows to inf).
LoweringFn lower_var(bool take_sqrt) {
  return [take_sqrt](GraphLowering& l, const graph::Node& node) -> std::vector<TensorBox> {
    const TensorBox& x = arg_box(l, node, 0);
    const graph::TensorMeta& out = out_meta(node);
    const auto mask = reduced_dims(arg_constant(node, 1).int_list(), x.dim(), node.op_def().name);
    const double correction = arg_constant(node, 2).to_double();
    const bool keepdim = arg_constant(node, 3).to_bool();
    const ScalarType c = kFloat64;
    TensorBox m2 = reduce(l, x, mask, keepdim, ReductionType::welford_m2, c, c);
    Loader ld = m2.make_loader();
    ExprPtr count = reduced_count(x, mask);
    const ScalarType out_dtype = out.dtype;
    return {make_pointwise(out_dtype, m2.sizes(), [=](const Index& i) {
      Val n = cast(ops().index_expr(count, kInt64), c);
      Val dof = binary(BinaryOp::maximum, binary(BinaryOp::sub, n, constant(correction, c)),
                       constant(0, c));
      Val v = binary(BinaryOp::truediv, ld(i), dof);
      if (take_sqrt) v = unary(UnaryOp::sqrt, v);
      return cast(v, out_dtype);
    })};
  };
}

// argmax/argmin(self, dim?, keepdim): dim None reduces the flattened tensor.
LoweringFn lower_arg(ReductionType type) {
  return [type](GraphLowering& l, const graph::Node& node) -> std::vector<TensorBox> {
    const TensorBox& x = arg_box(l, node, 0);
    const bool keepdim = arg_constant(node, 2).to_bool();
    std::vector<bool> mask(x.dim(), true);
    if (has_arg(node, 1) && x.dim() > 0) {
      const int64_t d = wrap_dim(arg_constant(node, 1).to_int(), x.dim(), node.op_def().name);
      mask.assign(x.dim(), false);
      mask[d] = true;
    }
    return {reduce(l, x, mask, keepdim, type, compute_type(x.dtype()), kInt64)};
  };
}

// max.dim/min.dim(self, dim, keepdim) -> (values, indices): two sibling reductions.
LoweringFn lower_max_dim(ReductionType value_type, ReductionType index_type) {
  return [=](GraphLowering& l, const graph::Node& node) -> std::vector<TensorBox> {
    const TensorBox& x = arg_box(l, node, 0);
    const bool keepdim = arg_constant(node, 2).to_bool();
    std::vector<bool> mask(x.dim(), x.dim() == 0);
    if (x.dim() > 0)
      mask[wrap_dim(arg_constant(node, 1).to_int(), x.dim(), node.op_def().name)] = true;
    const ScalarType c = compute_type(x.dtype());
    return {reduce(l, x, mask, keepdim, value_type, c, x.dtype()),
            reduce(l, x, mask, keepdim, index_type, c, kInt64)};
  };
}

}  // namespace

void register_reduction_lowerings() {
  register_lowering("sum", simple(ReductionType::sum));
  register_lowering("prod", simple(ReductionType::prod));
  register_lowering("amax", simple(ReductionType::max));
  register_lowering("amin", simple(ReductionType::min));
  register_lowering("all", simple(ReductionType::all));
  register_lowering("any", simple(ReductionType::any));
  register_lowering("mean", lower_mean);
  register_lowering("var", lower_var(false));
  register_lowering("std", lower_var(true));
  register_lowering("argmax", lower_arg(ReductionType::argmax));
  register_lowering("argmin", lower_arg(ReductionType::argmin));
  register_lowering("max.dim", lower_max_dim(ReductionType::max, ReductionType::argmax));
  register_lowering("min.dim", lower_max_dim(ReductionType::min, ReductionType::argmin));
}

}  // namespace kiln::lower
