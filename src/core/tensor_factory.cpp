#include "src/core/tensor_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/core/cast.h"

namespace kiln {

Tensor empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device) {
  // The hot path of every op's output: sizes, strides and the element count in one pass.
  const size_t nd = sizes.size();
  SymDimVector sym_sizes(nd), strides(nd);
  int64_t stride = 1;  // product of the later sizes, 0 and 1 counted as 1 (contiguous_strides)
  int64_t count = 1;
  bool overflow = false;
  for (size_t i = nd; i-- > 0;) {
    const int64_t s = sizes[i];
    if (s < 0) checked_numel("empty", sizes);  // throws, naming the shape
    overflow |= __builtin_mul_overflow(count, s, &count);
    sym_sizes[i] = s;
    strides[i] = stride;
    overflow |= __builtin_mul_overflow(stride, s > 1 ? s : 1, &stride);
  }
  int64_t bytes = 0;
  overflow |= __builtin_mul_overflow(count, element_size(dtype), &bytes);
  KILN_CHECK(!overflow, ValueError, "empty: shape {} of {} needs more bytes than fit in int64",
             shape_str(sizes), dtype_name(dtype));
  auto storage = make_intrusive<StorageImpl>(static_cast<size_t>(bytes), device);
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
