// Copy with dtype conversion (Note [Casting to integers]) and fill.
#pragma once

#include "kiln/tensor.h"

namespace kiln::cpu {

// dst[...] = cast(src[...]); src broadcasts to dst's shape.
void copy_into(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, const Scalar& value);

}  // namespace kiln::cpu
