#include "src/core/tensor_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/core/cast.h"

namespace kiln {

Tensor empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device) {
  const int64_t n = checked_numel("empty", sizes);
  auto storage = make_intrusive<StorageImpl>(static_cast<size_t>(n * element_size(dtype)), device);
  SymDimVector sym_sizes(sizes.begin(), sizes.end());
  SymDimVector strides = contiguous_strides(SymIntArrayRef(sym_sizes));
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, std::move(sym_sizes),
                                           std::move(strides), SymInt(0)));
}

Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                            Device device) {
  KILN_CHECK(sizes.size() == strides.size(), ShapeError,
             "empty_strided: {} sizes but {} strides", sizes.size(), strides.size());
  checked_numel("empty_strided", sizes);
  int64_t extent = 1;  // elements needed: 1 + sum (size-1)*stride
  bool any_zero = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    KILN_CHECK(strides[i] >= 0, ValueError, "empty_strided: negative stride {}", strides[i]);
    if (sizes[i] == 0) any_zero = true;
    extent += (sizes[i] - 1) * strides[i];
  }
  if (any_zero) extent = 0;
  auto storage =
      make_intrusive<StorageImpl>(static_cast<size_t>(extent * element_size(dtype)), device);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype,
                                           SymDimVector(sizes.begin(), sizes.end()),
                                           SymDimVector(strides.begin(), strides.end()), SymInt(0)));
}

Tensor make_view(const Tensor& base, SymDimVector sizes, SymDimVector strides, SymInt offset) {
  auto impl = make_intrusive<TensorImpl>(base.impl()->storage(), base.dtype(), std::move(sizes),
                                         std::move(strides), offset);
  impl->set_keys(base.impl()->keys());
  return Tensor(std::move(impl));
}

Tensor scalar_to_tensor(const Scalar& s, std::optional<ScalarType> dtype, Device device) {
  const ScalarType t = dtype.value_or(s.natural_dtype());
  Tensor out = empty_tensor({}, t, device);
  if (device == Device::CPU) {
    visit_dtype(t, [&]<typename T>() { *static_cast<T*>(out.data_ptr()) = s.to<T>(); });
  }
  out.impl()->set_wrapped_number(true);
  return out;
}

}  // namespace kiln
