// CPU kernels of the reduction family: reductions, scans, softmax, sorting.
//
// Note [Reduction layout]
// Every reduction kernel first brings its input into the form [outer, reduce, inner] over a
// contiguous buffer: element (o, r, i) lives at (o * reduce + r) * inner + i, and the output
// element (o, i) at o * inner + i, which is exactly the kept dims in their original order (the
// output is always contiguous). A contiguous input whose reduced dims form one block needs no
// copy: reducing the last dims gives inner == 1 (each output reduces a contiguous row: the inner
// fast path), reducing leading or middle dims gives inner > 1 (rows are added element by element,
// vectorized along the columns: the outer fast path). Any other layout (non-contiguous input,
// reduced dims interleaved with kept ones) is permuted kept-dims-first and copied once.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cpu {

struct ReducePlan {
  Tensor x;  // contiguous
  int64_t outer = 1, reduce = 1, inner = 1;
};
// `mask` has bit d set when dim d is reduced. See Note [Reduction layout].
ReducePlan make_reduce_plan(const Tensor& x, uint64_t mask);

enum class ReduceKind { Sum, Prod, Max, Min, All, Any };

// out[...] = reduction of x over the dims in `mask`. Sum/Prod/Max/Min: out has x's dtype, and a
// Sum result is multiplied by `scale` (mean). All/Any: out is bool, x any dtype. Reductions over
// zero elements give the identity (Max/Min must be refused before).
void reduce(ReduceKind kind, const Tensor& out, const Tensor& x, uint64_t mask, double scale = 1);

// values (may be undefined) and indices (int64) of the max or min along `dim`; the first
// occurrence wins and NaN counts as the largest (and smallest) value, so it is always picked.
void arg_reduce(bool is_max, const Tensor& values, const Tensor& indices, const Tensor& x,
                int64_t dim);

// Floating reductions computed per output row in double (x and out share a floating dtype).
void variance(const Tensor& out, const Tensor& x, uint64_t mask, double correction, bool take_sqrt);
void logsumexp(const Tensor& out, const Tensor& x, uint64_t mask);
void norm(const Tensor& out, const Tensor& x, uint64_t mask, double p);

// Inclusive scans along dim; out has x's dtype and shape.
void cumulative(bool is_prod, const Tensor& out, const Tensor& x, int64_t dim);

// softmax / log_softmax along dim; out and x share a floating dtype and shape.
void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log);

// Stable sort along dim (NaN is the largest value, as PyTorch).
void sort(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
          bool descending);
// The k largest (or smallest) along dim, in sorted order, ties broken by the lower index.
void topk(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k, int64_t dim,
          bool largest);

}  // namespace kiln::cpu
