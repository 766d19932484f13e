#include "src/kernels/cpu/index.h"

#include <cstring>

#include "src/core/cast.h"
#include "src/kernels/cpu/tensor_iter.h"

namespace kiln::cpu {
namespace {

template <typename T>
T add_wrapping(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return T(static_cast<opmath_t<T>>(a) + static_cast<opmath_t<T>>(b));
  }
}

}  // namespace

void gather_offsets(const Tensor& out, const Tensor& src, const std::vector<int64_t>& src_offsets) {
  const int64_t n = static_cast<int64_t>(src_offsets.size());
  if (n == 0) return;
  const int64_t es = out.element_size();
  char* o = static_cast<char*>(out.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  auto run = [&]<typename U>() {
    U* op = reinterpret_cast<U*>(o);
    const U* sp = reinterpret_cast<const U*>(s);
#pragma omp parallel for if (n > kParallelGrain)
    for (int64_t p = 0; p < n; ++p) op[p] = sp[src_offsets[static_cast<size_t>(p)]];
  };
  switch (es) {
    case 1:
      run.template operator()<uint8_t>();
      break;
    case 2:
      run.template operator()<uint16_t>();
      break;
    case 4:
      run.template operator()<uint32_t>();
      break;
    default:
      run.template operator()<uint64_t>();
      break;
  }
}

void scatter_offsets(const Tensor& dst, const std::vector<int64_t>& dst_offsets,
                     const Tensor& values, bool accumulate) {
  const int64_t n = static_cast<int64_t>(dst_offsets.size());
  if (n == 0) return;
  // Serial: duplicate offsets must accumulate exactly and, without accumulate, the last write
  // wins deterministically.
  visit_dtype(dst.dtype(), [&]<typename T>() {
    T* d = static_cast<T*>(dst.data_ptr());
    const T* v = static_cast<const T*>(values.data_ptr());
    if (accumulate) {
      for (int64_t p = 0; p < n; ++p) {
        T& slot = d[dst_offsets[static_cast<size_t>(p)]];
        slot = add_wrapping(slot, v[p]);
      }
    } else {
      for (int64_t p = 0; p < n; ++p) d[dst_offsets[static_cast<size_t>(p)]] = v[p];
    }
  });
}

bool AdvancedOffsets::rows_are_contiguous() const {
  if (after.size() < 2) return false;  // rows of one element: the element loops are as fast
  for (size_t a = 0; a < after.size(); ++a)
    if (after[a] != static_cast<int64_t>(a)) return false;
  return true;
}

void gather_rows(const Tensor& out, const Tensor& src, const AdvancedOffsets& offsets) {
  const int64_t rows = static_cast<int64_t>(offsets.before.size() * offsets.index.size());
  const int64_t k = static_cast<int64_t>(offsets.index.size());
  const int64_t row_bytes = static_cast<int64_t>(offsets.after.size()) * out.element_size();
  if (rows == 0 || row_bytes == 0) return;
  char* o = static_cast<char*>(out.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  const int64_t es = src.element_size();
#pragma omp parallel for if (rows * row_bytes > kParallelGrain * 8)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t from =
        offsets.before[static_cast<size_t>(r / k)] + offsets.index[static_cast<size_t>(r % k)];
    std::memcpy(o + r * row_bytes, s + from * es, static_cast<size_t>(row_bytes));
  }
}

void scatter_rows(const Tensor& dst, const AdvancedOffsets& offsets, const Tensor& values) {
  const int64_t rows = static_cast<int64_t>(offsets.before.size() * offsets.index.size());
  const int64_t k = static_cast<int64_t>(offsets.index.size());
  const int64_t row_bytes = static_cast<int64_t>(offsets.after.size()) * dst.element_size();
  if (rows == 0 || row_bytes == 0) return;
  char* d = static_cast<char*>(dst.data_ptr());
  const char* v = static_cast<const char*>(values.data_ptr());
  const int64_t es = dst.element_size();
  // Serial, in order: with duplicate rows the last write wins (Note above).
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t to =
        offsets.before[static_cast<size_t>(r / k)] + offsets.index[static_cast<size_t>(r % k)];
    std::memmove(d + to * es, v + r * row_bytes, static_cast<size_t>(row_bytes));
  }
}

std::vector<int64_t> AdvancedOffsets::flatten() const {
  std::vector<int64_t> out;
  out.reserve(before.size() * index.size() * after.size());
  for (int64_t b : before)
    for (int64_t k : index)
      for (int64_t a : after) out.push_back(b + k + a);
  return out;
}

}  // namespace kiln::cpu
