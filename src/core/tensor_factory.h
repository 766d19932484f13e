// Low-level tensor construction for ops and kernels (the public factories, zeros/ones/arange...,
// are ops in src/ops/factory.cpp).
#pragma once

#include <string_view>

#include "kiln/tensor.h"
#include "src/core/shape.h"

namespace kiln {

// A new contiguous tensor with uninitialized data (no data at all on Meta). Sizes may be symbolic
// on Meta (Note [Meta storage of symbolic tensors]); integer shapes pass as is.
Tensor empty_tensor(SymIntArrayRef sizes, ScalarType dtype, Device device = Device::CPU);
Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                            Device device = Device::CPU);
// A view of `base`'s storage with new metadata (shares the version counter).
Tensor make_view(const Tensor& base, SymDimVector sizes, SymDimVector strides, SymInt offset);
// A 0-dim tensor holding `s`, marked as a wrapped number for promotion. dtype defaults to the
// scalar's natural dtype.
Tensor scalar_to_tensor(const Scalar& s, std::optional<ScalarType> dtype = std::nullopt,
                        Device device = Device::CPU);

}  // namespace kiln
