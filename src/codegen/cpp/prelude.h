// The text every generated translation unit starts with: fixed-width integer types, float16 and
// bfloat16 conversions, casts with Kiln's semantics (src/core/cast.h), the scalar helpers whose
// semantics C++ operators do not give (floor division, Python remainder, shifts past the width,
// integer pow, NaN-propagating max/min) and, for vectorized builds, the 8-lane float type with
// its loads, stores and math (Note [Generated vector math] in prelude.cpp).
#pragma once

#include <string>

namespace kiln::codegen {

std::string prelude(bool vectorize);

}  // namespace kiln::codegen
