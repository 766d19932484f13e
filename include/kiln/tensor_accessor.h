// TensorAccessor<T, N>: indexed element access to an N-dim tensor's data, as LibTorch's
// `t.accessor<float, 2>()`: `a[i][j]` is a T&, `a.size(d)` / `a.stride(d)` the tensor's. No
// bounds checks; it views the tensor's memory and is valid while the tensor lives.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

template <typename T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}

  // One dim fewer, at index i of the first.
  decltype(auto) operator[](int64_t i) const {
    if constexpr (N == 1) {
      return data_[i * strides_[0]];
    } else {
      return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
    }
  }
  int64_t size(size_t d) const { return sizes_[d]; }
  int64_t stride(size_t d) const { return strides_[d]; }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

}  // namespace kiln
