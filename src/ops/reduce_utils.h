// Shared by the reduction family's op files (reduce.cpp, scan_softmax.cpp, sort.cpp): dim lists,
// reduced shapes and the sum-style result dtype.
#pragma once

#include "src/ops/registry.h"
#include "src/sym/expr.h"

namespace kiln::reduce_utils {

// Bit d set for every reduced dim; an empty list means every dim. IndexError on a dim out of
// range, ValueError on a repeated dim (both naming `op`).
inline uint64_t dim_mask(std::string_view op, const Tensor& x, IntArrayRef dims) {
  KILN_CHECK(x.dim() <= 64, ValueError,
             "{}: tensors of more than 64 dims are not supported (got {})", op, x.dim());
  if (dims.empty())
    return x.dim() == 0 ? 1 : (x.dim() == 64 ? ~uint64_t{0} : (uint64_t{1} << x.dim()) - 1);
  uint64_t mask = 0;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, x.dim());
    KILN_CHECK(!((mask >> w) & 1), ValueError,
               "{}: dim {} appears multiple times in the list of dims", op, w);
    mask |= uint64_t{1} << w;
  }
  return mask;
}

// Symbolic when x's sizes are (the kept sizes are x's expressions).
inline SymDimVector reduced_shape(const Tensor& x, uint64_t mask, bool keepdim) {
  SymDimVector shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!((mask >> d) & 1))
      shape.push_back(x.size(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return shape;
}

// Number of elements each output reduces.
inline int64_t reduced_count(const Tensor& x, uint64_t mask) {
  int64_t n = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if ((mask >> d) & 1) n *= x.size(d);
  return n;
}

// max/min/argmax...: a reduced dim of size zero has no answer (IndexError, as PyTorch).
//
// A plain size symbol counts as non-zero with no guard, as it always has: under 0/1
// specialization it is >= 2, and a decomposition over it (softmax's amax over s1) must not
// guard. An expression of symbols (a slice's (s0 - 2) // 3 + 1, a narrow's s0 - 3) may be 0 at a
// later call, so it is compared through the ShapeEnv, which guards on its hint: a call where it
// is 0 retraces and raises as eager does (kiln-fuzz --dynamic --grad --random seed 20261216
// index 433: amin over a slice that became empty ran compiled code instead).
inline bool may_be_empty(SymInt size) {
  if (!size.is_symbolic()) return size.raw() == 0;
  if (size.expr()->is_symbol()) return false;
  return static_cast<bool>(size == 0);
}

inline void check_nonempty(std::string_view op, const Tensor& x, uint64_t mask) {
  for (int64_t d = 0; d < x.dim(); ++d) {
    KILN_CHECK(!((mask >> d) & 1) || !may_be_empty(x.sym_sizes()[d]), IndexError,
               "{}: Expected reduction dim {} to have non-zero size (input of shape {}); reduce "
               "over other dims or check for empty tensors first",
               op, d, shape_str(x.sym_sizes()));
  }
}

// Note [Sum result dtype]: sum, prod, cumsum and cumprod of bool and signed integers give int64
// (PyTorch); of unsigned integers uint64 (Kiln's choice: modular, no sign to lose); floating keep
// their dtype. An explicit dtype wins.
inline ScalarType sum_dtype(ScalarType in, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  if (is_unsigned(in)) return kUInt64;
  if (is_integral_or_bool(in)) return kInt64;
  return in;
}

}  // namespace kiln::reduce_utils
