// embedding: a row gather, and its gradient, a row scatter-add. Indices are validated on one
// thread first (an error must not be thrown inside an OpenMP region), then rows are copied or
// summed in parallel.
#include <algorithm>
#include <cstring>
#include <vector>

#include "src/core/shape.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/nn_kernels.h"
#include "src/kernels/cpu/norm_utils.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// The indices as int64, each checked to be a row of a table of `rows` rows (IndexError naming
// `op` and the table's shape otherwise).
std::vector<int64_t> row_indices(const Tensor& indices, int64_t rows, std::string_view op,
                                 IntArrayRef table_shape) {
  const int64_t n = indices.numel();
  std::vector<int64_t> idx(static_cast<size_t>(n));
  visit_dtype_in<dtypes::kIntegral>(indices.dtype(), op, [&]<typename I>() {
    const std::vector<I> raw = indices.to_vector<I>();
    for (int64_t i = 0; i < n; ++i) {
      const I v = raw[static_cast<size_t>(i)];
      bool ok;
      if constexpr (std::is_signed_v<I>) {
        ok = v >= 0 && static_cast<int64_t>(v) < rows;
      } else {
        ok = static_cast<uint64_t>(v) < static_cast<uint64_t>(rows);
      }
      KILN_CHECK(ok, IndexError,
                 "{}: index {} (at position {} of indices of shape {}) is out of range "
                 "for a table of {} rows (weight of shape {}); indices must be in [0, {})",
                 op, v, i, shape_str(indices.sizes()), rows, shape_str(table_shape), rows);
      idx[static_cast<size_t>(i)] = static_cast<int64_t>(v);
    }
  });
  return idx;
}

}  // namespace

void embedding(const Tensor& weight, const Tensor& indices, const Tensor& out) {
  const int64_t n = indices.numel();
  const int64_t rows = weight.size(0), dim = weight.size(1);
  if (n == 0) return;
  const std::vector<int64_t> idx = row_indices(indices, rows, "embedding", weight.sizes());
  if (dim == 0) return;
  const Tensor w = weight.stride(1) == 1 ? weight : weight.contiguous();
  const int64_t row_stride = w.stride(0) * w.element_size();
  const int64_t row_bytes = dim * w.element_size();
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  parallel::parallel_for_if(n * dim > kParallelGrain, 0, n, [&](int64_t i_begin, int64_t i_end) {
    for (int64_t i = i_begin; i < i_end; ++i) {
      std::memcpy(dst + i * row_bytes, src + idx[static_cast<size_t>(i)] * row_stride,
                  static_cast<size_t>(row_bytes));
    }
  });
}

void embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                        std::optional<int64_t> padding_idx, const Tensor& out) {
  const int64_t n = indices.numel();
  const int64_t dim = out.size(1);
  out.zero_();
  if (n == 0) return;
  const std::vector<int64_t> idx =
      row_indices(indices, num_weights, "embedding_dense_backward", out.sizes());
  if (dim == 0) return;
  // Gradient rows grouped by destination row (a counting sort), so each destination row is
  // summed by one thread in index order: no atomics, and the same result on any thread count.
  std::vector<int64_t> start(static_cast<size_t>(num_weights + 1), 0);
  for (int64_t r : idx) ++start[static_cast<size_t>(r + 1)];
  for (size_t r = 0; r < static_cast<size_t>(num_weights); ++r) start[r + 1] += start[r];
  std::vector<int64_t> order(static_cast<size_t>(n));
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i)
      order[static_cast<size_t>(next[static_cast<size_t>(idx[static_cast<size_t>(i)])]++)] = i;
  }
  const int64_t pad =
      padding_idx ? (*padding_idx < 0 ? *padding_idx + num_weights : *padding_idx) : -1;
  const Tensor g = grad.contiguous();
  visit_dtype_in<dtypes::kFloating>(g.dtype(), "embedding_dense_backward", [&]<typename T>() {
    using A = opmath_t<T>;
    const T* gp = g.data_ptr<T>();
    T* op = out.data_ptr<T>();
    parallel::parallel_for_if(
        n * dim > kParallelGrain, 0, num_weights, [&](int64_t r_begin, int64_t r_end) {
          std::vector<A> acc(static_cast<size_t>(dim));
          for (int64_t r = r_begin; r < r_end; ++r) {
            const int64_t b = start[static_cast<size_t>(r)], e = start[static_cast<size_t>(r + 1)];
            if (b == e || r == pad) continue;
            std::fill(acc.begin(), acc.end(), A(0));
            for (int64_t k = b; k < e; ++k) {
              const T* row = gp + order[static_cast<size_t>(k)] * dim;
              for (int64_t j = 0; j < dim; ++j)
                acc[static_cast<size_t>(j)] += static_cast<A>(row[j]);
            }
            narrow_span(acc.data(), op + r * dim, dim);
          }
        });
  });
}

}  // namespace kiln::cpu
