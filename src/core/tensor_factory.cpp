#include "src/core/tensor_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/core/cast.h"

namespace kiln {

namespace {

// Note [Meta storage of symbolic tensors]
// A Meta tensor has no data; its storage's nbytes only bounds as_strided views. For a symbolic
// shape it holds the byte count under the symbols' hints (0 when a size is unbacked), and
// as_strided skips its bounds check when any size involved is symbolic.
Tensor empty_symbolic_tensor(SymIntArrayRef sizes, ScalarType dtype, Device device) {
  KILN_CHECK(device == Device::Meta, ValueError,
             "empty: symbolic shape {} on {}; tensors with symbolic sizes exist only on the Meta "
             "device (fake tensors while tracing)",
             shape_str(sizes), device == Device::CPU ? "cpu" : "meta");
  const SymInt numel = sym_checked_numel("empty", sizes);
  int64_t hint_numel = 0;
  try {
    hint_numel = numel.hint();
  } catch (const Error&) {
    // Unbacked (data-dependent) sizes have no hint: nbytes stays 0.
  }
  const int64_t hint_bytes = hint_numel * element_size(dtype);
  auto storage = make_intrusive<StorageImpl>(static_cast<size_t>(hint_bytes), device);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype,
                                           SymDimVector(sizes.begin(), sizes.end()),
                                           contiguous_strides(sizes), SymInt(0)));
}

}  // namespace

Tensor empty_tensor(SymIntArrayRef sizes, ScalarType dtype, Device device) {
  // The hot path of every op's output: sizes, strides and the element count in one pass.
  const size_t nd = sizes.size();
  SymDimVector sym_sizes(nd), strides(nd);
  int64_t stride = 1;  // product of the later sizes, 0 and 1 counted as 1 (contiguous_strides)
  int64_t count = 1;
  bool overflow = false;
  for (size_t i = nd; i-- > 0;) {
    if (sizes[i].is_symbolic()) [[unlikely]]
      return empty_symbolic_tensor(sizes, dtype, device);
    const int64_t s = sizes[i].raw();
    if (s < 0)
      checked_numel("empty", IntArrayRef(reinterpret_cast<const int64_t*>(sizes.data()),
                                         nd));  // throws, naming the shape
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
  KILN_CHECK(sizes.size() == strides.size(), ShapeError, "empty_strided: {} sizes but {} strides",
             sizes.size(), strides.size());
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
  return Tensor(make_intrusive<TensorImpl>(
      std::move(storage), dtype, SymDimVector(sizes.begin(), sizes.end()),
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
