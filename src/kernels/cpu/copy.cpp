#include "src/kernels/cpu/copy.h"

#include <cstring>

#include "src/core/cast.h"
#include "src/kernels/cpu/loops.h"
#include "src/util/parallel.h"

namespace kiln::cpu {

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.nbytes()));
    return;
  }
  TensorIter iter("copy_", {dst}, {src});
  visit_dtype(dst.dtype(), [&]<typename To>() {
    visit_dtype(src.dtype(), [&]<typename From>() {
      cpu_kernel<To, From>(iter, [](From v) { return cast_value<To>(v); });
    });
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  visit_dtype(dst.dtype(), [&]<typename T>() {
    const T v = value.to<T>();
    if (dst.is_contiguous()) {
      T* p = static_cast<T*>(dst.data_ptr());
      const int64_t n = dst.numel();
      parallel::parallel_for_if(n > 4 * kParallelGrain, 0, n, [&](int64_t i_begin, int64_t i_end) {
        for (int64_t i = i_begin; i < i_end; ++i) p[i] = v;
      });
      return;
    }
    TensorIter iter("fill_", {dst}, {});
    iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(data[0] + i * strides[0]) = v;
    });
  });
}

}  // namespace kiln::cpu
