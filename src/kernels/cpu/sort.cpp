// sort and topk along one dim: each [n]-long line is gathered, stable-sorted as (value, index)
// pairs, and written back. NaN compares greater than every number (PyTorch's order), so it sorts
// last ascending and first descending; equal keys keep their input order in both directions.
#include <algorithm>
#include <cmath>
#include <vector>

#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/reduce.h"
#include "src/kernels/cpu/tensor_iter.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// a < b in PyTorch's sort order (NaN largest).
template <typename A>
bool less_nan_last(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(b)) return !std::isnan(a);
    return a < b;
  } else {
    return a < b;
  }
}

// Sorts every line of x along dim and writes the first k of each into values/indices (which have
// x's shape with size k along dim).
void sort_lines(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
                bool descending, int64_t k) {
  if (values.numel() == 0) return;
  ReducePlan plan = make_reduce_plan(x, x.dim() == 0 ? 0 : uint64_t{1} << dim);
  visit_dtype(x.dtype(), [&]<typename T>() {
    using key_t = opmath_t<T>;
    const T* p = plan.x.data_ptr<T>();
    T* vals = values.data_ptr<T>();
    int64_t* idx = indices.data_ptr<int64_t>();
    const int64_t outer = plan.outer, n = plan.reduce, inner = plan.inner;
    parallel::parallel_for_if(outer * inner * n > kParallelGrain && outer * inner > 1, 0,
                              outer * inner, [&](int64_t line_begin, int64_t line_end) {
                                for (int64_t line = line_begin; line < line_end; ++line) {
                                  const int64_t o = line / inner, i = line % inner;
                                  std::vector<std::pair<key_t, int64_t>> v(static_cast<size_t>(n));
                                  const T* src = p + o * n * inner + i;
                                  for (int64_t r = 0; r < n; ++r)
                                    v[r] = {static_cast<key_t>(src[r * inner]), r};
                                  auto cmp = [descending](const auto& a, const auto& b) {
                                    return descending ? less_nan_last(b.first, a.first)
                                                      : less_nan_last(a.first, b.first);
                                  };
                                  std::stable_sort(v.begin(), v.end(), cmp);
                                  const int64_t base = o * k * inner + i;
                                  for (int64_t r = 0; r < k; ++r) {
                                    vals[base + r * inner] = src[v[r].second * inner];
                                    idx[base + r * inner] = v[r].second;
                                  }
                                }
                              });
  });
}

}  // namespace

void sort(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
          bool descending) {
  const int64_t n = x.dim() == 0 ? 1 : int64_t{x.size(dim)};
  sort_lines(values, indices, x, dim, descending, n);
}

void topk(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k, int64_t dim,
          bool largest) {
  sort_lines(values, indices, x, dim, largest, k);
}

}  // namespace kiln::cpu
