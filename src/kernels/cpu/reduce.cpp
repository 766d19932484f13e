// The reduction layout (Note [Reduction layout]) and the simple reductions: sum, prod, max, min,
// all, any.
//
// Note [Accurate float sums]
// A float32 sum accumulates in float, but never in one running total: a contiguous row is summed
// pairwise (halves recursively, down to blocks summed with 32 independent accumulators, which is
// also what lets the loop vectorize), and the outer fast path sums blocks of rows pairwise the same
// way. The error then grows with log(n) instead of n: 1e7 float32 ones sum to exactly 1e7.
// Half/BFloat16 accumulate in float, float64 in double, integers in uint64 (modular, so signed
// overflow wraps like two's complement without UB).
#include "src/kernels/cpu/reduce.h"

#include <cmath>
#include <limits>
#include <vector>

#include "src/core/cast.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/tensor_iter.h"
#include "src/util/parallel.h"

namespace kiln::cpu {

ReducePlan make_reduce_plan(const Tensor& input, uint64_t mask) {
  ReducePlan plan;
  Tensor x = input.contiguous();
  // Runs of adjacent dims with the same reduce flag (size-1 dims belong to either).
  struct Run {
    bool reduced;
    int64_t size;
  };
  std::vector<Run> runs;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (x.size(d) == 1) continue;
    const bool reduced = (mask >> d) & 1;
    if (!runs.empty() && runs.back().reduced == reduced) {
      runs.back().size *= x.size(d);
    } else {
      runs.push_back({reduced, x.size(d)});
    }
  }
  size_t i = 0;
  if (i < runs.size() && !runs[i].reduced) plan.outer = runs[i++].size;
  if (i < runs.size() && runs[i].reduced) plan.reduce = runs[i++].size;
  if (i < runs.size() && !runs[i].reduced) plan.inner = runs[i++].size;
  if (i == runs.size()) {
    plan.x = x;
    return plan;
  }
  // Interleaved: kept dims first (in order), then the reduced ones, copied once.
  std::vector<int64_t> perm;
  plan.outer = plan.reduce = plan.inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!((mask >> d) & 1)) perm.push_back(d), plan.outer *= x.size(d);
  for (int64_t d = 0; d < x.dim(); ++d)
    if ((mask >> d) & 1) perm.push_back(d), plan.reduce *= x.size(d);
  plan.x = x.permute(perm).contiguous();
  return plan;
}

namespace {

template <typename T, ReduceKind K>
struct Reducer {
  static constexpr bool kFloat = is_floating_v<T>;
  using acc_t = std::conditional_t<
      K == ReduceKind::All || K == ReduceKind::Any, bool,
      std::conditional_t<K == ReduceKind::Sum || K == ReduceKind::Prod,
                         std::conditional_t<kFloat, opmath_t<T>, uint64_t>, opmath_t<T>>>;

  static acc_t identity() {
    if constexpr (K == ReduceKind::Sum) return acc_t(0);
    if constexpr (K == ReduceKind::Prod) return acc_t(1);
    if constexpr (K == ReduceKind::All) return true;
    if constexpr (K == ReduceKind::Any) return false;
    if constexpr (K == ReduceKind::Max) {
      if constexpr (kFloat)
        return -std::numeric_limits<acc_t>::infinity();
      else
        return std::numeric_limits<acc_t>::lowest();
    }
    if constexpr (K == ReduceKind::Min) {
      if constexpr (kFloat)
        return std::numeric_limits<acc_t>::infinity();
      else
        return std::numeric_limits<acc_t>::max();
    }
  }
  static acc_t load(T v) {
    if constexpr (K == ReduceKind::All || K == ReduceKind::Any) {
      return static_cast<opmath_t<T>>(v) != opmath_t<T>(0);
    } else if constexpr (std::is_same_v<acc_t, uint64_t>) {
      return static_cast<uint64_t>(v);  // sign-extends: modular arithmetic stays exact
    } else {
      return static_cast<acc_t>(v);
    }
  }
  static acc_t combine(acc_t a, acc_t b) {
    if constexpr (K == ReduceKind::Sum) return a + b;
    if constexpr (K == ReduceKind::Prod) return a * b;
    if constexpr (K == ReduceKind::All) return a && b;
    if constexpr (K == ReduceKind::Any) return a || b;
    // NaN propagates: a NaN operand wins (a != a is the branch-free NaN test that vectorizes).
    if constexpr (K == ReduceKind::Max) {
      if constexpr (kFloat)
        return (a != a || a > b) ? a : b;
      else
        return a > b ? a : b;
    }
    if constexpr (K == ReduceKind::Min) {
      if constexpr (kFloat)
        return (a != a || a < b) ? a : b;
      else
        return a < b ? a : b;
    }
  }
};

constexpr int64_t kLanes = 32;       // independent accumulators of a row block
constexpr int64_t kRowBlock = 2048;  // pairwise base case of a contiguous row
constexpr int64_t kColRows = 64;     // pairwise base case of the outer fast path (rows)
constexpr int64_t kColChunk = 256;   // columns handled together by the outer fast path

template <typename R, typename T>
typename R::acc_t reduce_row(const T* p, int64_t n) {
  using acc_t = typename R::acc_t;
  if (n > kRowBlock) {
    const int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
    return R::combine(reduce_row<R>(p, half), reduce_row<R>(p + half, n - half));
  }
  acc_t a[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) a[j] = R::identity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) a[j] = R::combine(a[j], R::load(p[i + j]));
  for (int64_t j = 0; i < n; ++i, ++j) a[j] = R::combine(a[j], R::load(p[i]));
  for (int64_t w = kLanes / 2; w > 0; w /= 2)
    for (int64_t j = 0; j < w; ++j) a[j] = R::combine(a[j], a[j + w]);
  return a[0];
}

// Note [Deterministic partial sums]
// A sum split over threads must add in an order that does not depend on the thread count (Note
// [The intra-op pool]). reduce_row's pairwise tree is fixed by n alone, so a long row is split
// along that tree: row_pieces lists the subtrees `leaves` levels down (or fewer, where a subtree
// is a single block), those run in parallel, and combine_row_pieces adds their results up the same
// tree. The sum equals the serial reduce_row's exactly.
template <typename T>
struct RowPiece {
  const T* data;
  int64_t n;
};

template <typename T>
void row_pieces(const T* p, int64_t n, int64_t leaves, std::vector<RowPiece<T>>& out) {
  if (leaves <= 1 || n <= kRowBlock) {
    out.push_back({p, n});
    return;
  }
  const int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;  // as reduce_row splits
  row_pieces(p, half, leaves / 2, out);
  row_pieces(p + half, n - half, leaves - leaves / 2, out);
}

template <typename R>
typename R::acc_t combine_row_pieces(int64_t n, int64_t leaves,
                                     const std::vector<typename R::acc_t>& partial, size_t& next) {
  if (leaves <= 1 || n <= kRowBlock) return partial[next++];
  const int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
  const auto a = combine_row_pieces<R>(half, leaves / 2, partial, next);
  return R::combine(a, combine_row_pieces<R>(n - half, leaves - leaves / 2, partial, next));
}

// acc[c] (c < ncols <= kColChunk) = combine over rows of p[r * stride + c], pairwise over rows.
template <typename R, typename T>
void reduce_cols(const T* p, int64_t rows, int64_t stride, int64_t ncols, typename R::acc_t* acc) {
  using acc_t = typename R::acc_t;
  if (rows > kColRows) {
    const int64_t half = rows / 2;
    reduce_cols<R>(p, half, stride, ncols, acc);
    acc_t tmp[kColChunk];
    reduce_cols<R>(p + half * stride, rows - half, stride, ncols, tmp);
    for (int64_t c = 0; c < ncols; ++c) acc[c] = R::combine(acc[c], tmp[c]);
    return;
  }
  for (int64_t c = 0; c < ncols; ++c) acc[c] = R::identity();
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = p + r * stride;
    for (int64_t c = 0; c < ncols; ++c) acc[c] = R::combine(acc[c], R::load(row[c]));
  }
}

template <typename R, typename T, typename Out, typename Finish>
void run_reduce(const ReducePlan& plan, Out* out, const Finish& finish) {
  using acc_t = typename R::acc_t;
  const T* x = plan.x.data_ptr<T>();
  const int64_t outer = plan.outer, n = plan.reduce, inner = plan.inner;
  const int64_t total = outer * n * inner;
  const int64_t threads = parallel::num_threads();
  const bool parallel = total > kParallelGrain && threads > 1;
  if (inner == 1) {
    if (parallel && outer < threads && n > kRowBlock) {
      // Few long rows: the subtrees of each row's pairwise sum run in parallel, so the sum is
      // the serial one to the last bit (See Note [Deterministic partial sums]).
      std::vector<RowPiece<T>> pieces;
      for (int64_t o = 0; o < outer; ++o) row_pieces(x + o * n, n, threads * 4, pieces);
      std::vector<acc_t> partial(pieces.size());
      parallel::parallel_for(0, static_cast<int64_t>(pieces.size()), 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          partial[static_cast<size_t>(i)] = reduce_row<R>(pieces[i].data, pieces[i].n);
      });
      size_t next = 0;
      for (int64_t o = 0; o < outer; ++o)
        out[o] = finish(combine_row_pieces<R>(n, threads * 4, partial, next));
      return;
    }
    parallel::parallel_for_if(parallel, 0, outer, [&](int64_t o_begin, int64_t o_end) {
      for (int64_t o = o_begin; o < o_end; ++o) out[o] = finish(reduce_row<R>(x + o * n, n));
    });
    return;
  }
  const int64_t chunks = (inner + kColChunk - 1) / kColChunk;
  parallel::parallel_for_if(parallel, 0, outer * chunks, [&](int64_t b, int64_t e) {
    for (int64_t oc = b; oc < e; ++oc) {
      const int64_t o = oc / chunks, ch = oc % chunks;
      const int64_t c0 = ch * kColChunk, nc = std::min(kColChunk, inner - c0);
      acc_t acc[kColChunk];
      reduce_cols<R>(x + o * n * inner + c0, n, inner, nc, acc);
      for (int64_t c = 0; c < nc; ++c) out[o * inner + c0 + c] = finish(acc[c]);
    }
  });
}

template <ReduceKind K, typename T, typename Out>
void reduce_typed(const Tensor& out, const Tensor& x, uint64_t mask, double scale) {
  using R = Reducer<T, K>;
  using acc_t = typename R::acc_t;
  Out* o = out.data_ptr<Out>();
  auto finish = [=](acc_t a) -> Out {
    if constexpr (K == ReduceKind::Sum && is_floating_v<T>) {
      return static_cast<Out>(scale == 1 ? a : static_cast<acc_t>(a * scale));
    } else if constexpr (std::is_same_v<acc_t, uint64_t> || std::is_same_v<Out, bool>) {
      return cast_value<Out>(a);
    } else {
      return static_cast<Out>(a);
    }
  };
  if (out.numel() == 0) return;
  if (x.numel() == 0) {  // reducing zero elements: the identity
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = finish(R::identity());
    return;
  }
  run_reduce<R, T>(make_reduce_plan(x, mask), o, finish);
}

template <ReduceKind K>
void reduce_dispatch(const Tensor& out, const Tensor& x, uint64_t mask, double scale) {
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (K == ReduceKind::All || K == ReduceKind::Any) {
      reduce_typed<K, T, bool>(out, x, mask, scale);
    } else {
      reduce_typed<K, T, T>(out, x, mask, scale);
    }
  });
}

}  // namespace

void reduce(ReduceKind kind, const Tensor& out, const Tensor& x, uint64_t mask, double scale) {
  switch (kind) {
    case ReduceKind::Sum:
      return reduce_dispatch<ReduceKind::Sum>(out, x, mask, scale);
    case ReduceKind::Prod:
      return reduce_dispatch<ReduceKind::Prod>(out, x, mask, scale);
    case ReduceKind::Max:
      return reduce_dispatch<ReduceKind::Max>(out, x, mask, scale);
    case ReduceKind::Min:
      return reduce_dispatch<ReduceKind::Min>(out, x, mask, scale);
    case ReduceKind::All:
      return reduce_dispatch<ReduceKind::All>(out, x, mask, scale);
    case ReduceKind::Any:
      return reduce_dispatch<ReduceKind::Any>(out, x, mask, scale);
  }
}

}  // namespace kiln::cpu
