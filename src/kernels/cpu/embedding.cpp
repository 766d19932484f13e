// embedding: a row gather. Indices are validated on one thread first (an error must not be
// thrown inside an OpenMP region), then rows are copied in parallel.
#include <cstring>
#include <vector>

#include "src/core/shape.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/nn_kernels.h"

namespace kiln::cpu {

void embedding(const Tensor& weight, const Tensor& indices, const Tensor& out) {
  const int64_t n = indices.numel();
  const int64_t rows = weight.size(0), dim = weight.size(1);
  if (n == 0) return;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  visit_dtype_in<dtypes::kIntegral>(indices.dtype(), "embedding", [&]<typename I>() {
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
                 "embedding: index {} (at position {} of indices of shape {}) is out of range "
                 "for a table of {} rows (weight of shape {}); indices must be in [0, {})",
                 v, i, shape_str(indices.sizes()), rows, shape_str(weight.sizes()), rows);
      idx[static_cast<size_t>(i)] = static_cast<int64_t>(v);
    }
  });
  if (dim == 0) return;
  const Tensor w = weight.stride(1) == 1 ? weight : weight.contiguous();
  const int64_t row_stride = w.stride(0) * w.element_size();
  const int64_t row_bytes = dim * w.element_size();
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
#pragma omp parallel for if (n * dim > kParallelGrain) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * row_bytes, src + idx[static_cast<size_t>(i)] * row_stride,
                static_cast<size_t>(row_bytes));
  }
}

}  // namespace kiln::cpu
