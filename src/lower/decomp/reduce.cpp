// Decompositions of composite reductions into sum/amax/amin and pointwise ops: softmax,
// log_softmax, mean, var, std, logsumexp, norm, max.dim, min.dim. Float16/bfloat16 compute in
// float32 as the eager kernels do (opmath); var/std and the p-norms in float64, as theirs do;
// var/std as mean, then the sum of squared deviations (two passes, like the eager kernel; codegen
// may fuse them into Welford).
#include <cmath>
#include <limits>

#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

int64_t wrap(int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  return dim < 0 ? dim + r : dim;
}

// The reduced dims of a reduction node (an empty list means all dims), wrapped.
DimVector reduced_dims(const IValue& dims, int64_t rank) {
  DimVector out;
  for (int64_t d : dims.int_list()) out.push_back(wrap(d, rank));
  if (out.empty()) out = dim_range(0, rank);
  return out;
}

// True when some reduced dim has size 0 (statically: symbolic sizes are never 0).
bool empty_reduction(const Value* x, const DimVector& dims) {
  for (int64_t d : dims)
    if (d < static_cast<int64_t>(x->meta().sizes.size()) && same(x->meta().sizes[d], 0))
      return true;
  return false;
}

// softmax(x, dim, dtype) = exp(x - max) * (1 / sum(exp(x - max))), as the eager kernel
// normalizes: one division per row, and the same reciprocal wherever the row is normalized (Note
// [One value per expression] in src/codegen/cpp/prelude.cpp); the sum is at least 1, so its
// reciprocal is a normal float. log_softmax = (x - max) - log(sum(exp(x - max))). A NaN, a +inf
// or a row of only -inf makes the row NaN, as eager.
std::vector<Value*> softmax_impl(DecompBuilder& b, bool log) {
  Value* x = b.input(0);
  const int64_t rank = static_cast<int64_t>(x->meta().sizes.size());
  const ScalarType out = b.output_meta().dtype;
  if (rank == 0 || empty_reduction(x, {wrap(b.constant(1).to_int(), rank)})) {
    // No row to normalize over (amax would reject it); a 0-dim input is its own row: 1 or 0.
    if (rank == 0) {
      Value* xc = b.to(x, opmath_dtype(out));
      Value* shifted = b.sub(xc, xc);  // 0, or NaN for NaN/inf, as the kernel's x - max
      return {b.as_output(log ? shifted : b.exp(shifted))};
    }
    return {b.copy_as(x, out)};
  }
  const int64_t dim = wrap(b.constant(1).to_int(), rank);
  Value* xc = b.to(x, opmath_dtype(out));
  Value* shifted = b.sub(xc, b.amax(xc, {dim}, true));
  Value* e = b.exp(shifted);
  Value* s = b.sum(e, {dim}, true);
  return {b.as_output(log ? b.sub(shifted, b.log(s)) : b.mul(e, b.unary("reciprocal", s)))};
}
std::vector<Value*> softmax(DecompBuilder& b) { return softmax_impl(b, false); }
std::vector<Value*> log_softmax(DecompBuilder& b) { return softmax_impl(b, true); }

// mean(x, dims, keepdim, dtype) = sum(x, dims, keepdim, dtype) / count (NaN for an empty
// reduction, 0/0, as eager). The mean of integers sums in float64: their float32 sum rounds once
// it passes 2^24, and a compiled loop adds in order where the eager kernel adds pairwise (Note
// [Accurate float sums] in src/kernels/cpu/reduce.cpp), so a long row of large integers drifted
// from eager's mean; in float64 the sum is exact up to 2^53.
std::vector<Value*> mean(DecompBuilder& b) {
  Value* x = b.input(0);
  const ScalarType out = b.output_meta().dtype;
  const DimVector dims = reduced_dims(b.constant(1), static_cast<int64_t>(x->meta().sizes.size()));
  const bool keepdim = b.constant(2).to_bool();
  const ScalarType acc = is_floating(x->meta().dtype) ? opmath_dtype(out) : kFloat64;
  Value* s = b.sum(x, dims, keepdim, acc);
  Value* m = b.div(s, b.count(x, dims));
  return {b.as_output(acc == opmath_dtype(out) ? m : b.to(m, opmath_dtype(out)))};
}

// var/std(x, dims, correction, keepdim) = sum((x - mean)^2) / max(0, N - correction), in
// float64 as the eager kernel (and PyTorch's CPU kernel) computes it: in float32 the squared
// deviations of values near 1e19 (a bfloat16 or float32 tensor holds them) sum past 3.4e38 to inf
// where eager's std is a finite 3.1e18 (kiln-fuzz --seed 5560001 --index 67 --dynamic --grad).
std::vector<Value*> variance(DecompBuilder& b, bool take_sqrt) {
  Value* x = b.input(0);
  const DimVector dims = reduced_dims(b.constant(1), static_cast<int64_t>(x->meta().sizes.size()));
  const double correction = b.constant(2).to_double();
  const bool keepdim = b.constant(3).to_bool();
  Value* xc = b.to(x, kFloat64);
  const DecompBuilder::Count n = b.count(xc, dims);
  Value* m = b.div(b.sum(xc, dims, true), n);
  Value* d = b.sub(xc, m);
  Value* ss = b.sum(b.mul(d, d), dims, keepdim);
  Value* v;
  if (n.value) {
    v = b.div(ss, Scalar(std::max(0.0, static_cast<double>(*n.value) - correction)));
  } else {
    Value* denom = b.clamp(b.sub(n.tensor, Scalar(correction)), Scalar(0.0), std::nullopt);
    v = b.div(ss, b.to(denom, ss->meta().dtype));
  }
  return {b.as_output(take_sqrt ? b.sqrt(v) : v)};
}
std::vector<Value*> var(DecompBuilder& b) { return variance(b, false); }
std::vector<Value*> std_(DecompBuilder& b) { return variance(b, true); }

// The reduction's output shape (x's sizes without, or with size 1 at, the reduced dims).
SymDimVector reduced_sizes(const Value* x, const DimVector& dims, bool keepdim) {
  SymDimVector out;
  const SymDimVector& sizes = x->meta().sizes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    if (!reduced) {
      out.push_back(sizes[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

// logsumexp(x, dims, keepdim) = m + log(sum(exp(x - m))) with m = amax(x), replaced by 0 where
// it is infinite: a row of -inf gives -inf, a +inf gives +inf, a NaN NaN, as eager.
std::vector<Value*> logsumexp(DecompBuilder& b) {
  Value* x = b.input(0);
  const DimVector dims = reduced_dims(b.constant(1), static_cast<int64_t>(x->meta().sizes.size()));
  const bool keepdim = b.constant(2).to_bool();
  const ScalarType dt = x->meta().dtype;
  const SymDimVector out_sizes = reduced_sizes(x, dims, keepdim);
  if (empty_reduction(x, dims))
    return {b.full(out_sizes, Scalar(-std::numeric_limits<double>::infinity()), dt)};
  Value* xc = b.to(x, opmath_dtype(dt));
  Value* m = b.amax(xc, dims, true);
  Value* safe = b.where(b.unary("isinf", m), Scalar(0.0), m);
  Value* s = b.sum(b.exp(b.sub(xc, safe)), dims, keepdim);
  Value* shift = keepdim ? safe : b.view(safe, out_sizes);
  return {b.as_output(b.add(b.log(s), shift))};
}

// norm(x, p, dims, keepdim): max/min of |x| for p = +-inf, the count of nonzeros for p = 0,
// sum |x| for 1, sqrt(sum x^2) for 2, (sum |x|^p)^(1/p) otherwise. Powers other than 1 sum in
// float64, as the eager kernel does: in float32 the squares of [1e30, 1e30, 3] overflow to inf
// where the norm itself (1.4e30) is finite.
std::vector<Value*> norm(DecompBuilder& b) {
  Value* x = b.input(0);
  const double p = b.constant(1).scalar().to_double();
  const DimVector dims = reduced_dims(b.constant(2), static_cast<int64_t>(x->meta().sizes.size()));
  const bool keepdim = b.constant(3).to_bool();
  const ScalarType dt = x->meta().dtype;
  if (empty_reduction(x, dims)) {
    // An empty sum is 0; the eager kernel starts the min at +inf and the max at 0.
    const double v = std::isinf(p) ? (p > 0 ? 0.0 : std::numeric_limits<double>::infinity())
                     : p == 0 || p == 1 || p == 2 ? 0.0
                                                  : std::pow(0.0, 1.0 / p);
    return {b.full(reduced_sizes(x, dims, keepdim), Scalar(v), dt)};
  }
  const bool powers = !std::isinf(p) && p != 0 && p != 1;
  Value* xc = b.to(x, powers ? kFloat64 : opmath_dtype(dt));
  Value* r;
  if (std::isinf(p)) {
    r = p > 0 ? b.amax(b.abs(xc), dims, keepdim) : b.amin(b.abs(xc), dims, keepdim);
  } else if (p == 0) {
    r = b.sum(b.binary("ne", xc, Scalar(int64_t{0})), dims, keepdim, xc->meta().dtype);
  } else if (p == 1) {
    r = b.sum(b.abs(xc), dims, keepdim);
  } else if (p == 2) {
    r = b.sqrt(b.sum(b.mul(xc, xc), dims, keepdim));
  } else {
    Value* s = b.sum(b.binary("pow", b.abs(xc), Scalar(p)), dims, keepdim);
    r = b.binary("pow", s, Scalar(1.0 / p));
  }
  return {b.as_output(r)};
}

// max.dim / min.dim(x, dim, keepdim) -> (values, indices) = (amax, argmax) / (amin, argmin): the
// eager kernel's indices are argmax's (the first extremum, the first NaN), and amax propagates
// NaN as the values do.
std::vector<Value*> extremum_dim(DecompBuilder& b, bool is_max) {
  Value* x = b.input(0);
  const int64_t rank = static_cast<int64_t>(x->meta().sizes.size());
  const int64_t dim = wrap(b.constant(1).to_int(), rank);
  const bool keepdim = b.constant(2).to_bool();
  Value* values = is_max ? b.amax(x, {dim}, keepdim) : b.amin(x, {dim}, keepdim);
  Value* indices = b.call1(
      is_max ? "argmax" : "argmin",
      {DecompBuilder::V(x), DecompBuilder::C(IValue(dim)), DecompBuilder::C(IValue(keepdim))});
  return {values, indices};
}
std::vector<Value*> max_dim(DecompBuilder& b) { return extremum_dim(b, true); }

// max()/min() over every element = amax/amin over every dim (they differ only in the gradient).
std::vector<Value*> full_max(DecompBuilder& b) {
  Value* x = b.input(0);
  return {b.amax(x, dim_range(0, static_cast<int64_t>(x->meta().sizes.size())), false)};
}
std::vector<Value*> full_min(DecompBuilder& b) {
  Value* x = b.input(0);
  return {b.amin(x, dim_range(0, static_cast<int64_t>(x->meta().sizes.size())), false)};
}
std::vector<Value*> min_dim(DecompBuilder& b) { return extremum_dim(b, false); }

}  // namespace

void register_reduce_decompositions(DecompositionTable& t) {
  t.add("max.dim", max_dim);
  t.add("max", full_max);
  t.add("min", full_min);
  t.add("min.dim", min_dim);
  t.add("softmax", softmax);
  t.add("log_softmax", log_softmax);
  t.add("mean", mean);
  t.add("var", var);
  t.add("std", std_);
  t.add("logsumexp", logsumexp);
  t.add("norm", norm);
}

}  // namespace kiln::lower
