// Whether a Scalar fits a dtype, as PyTorch's checked conversion decides it for the values that
// fill_, full and masked_fill write (c10::checked_convert): `uint8.fill_(256)`,
// `full({2}, 300, kInt8)` and `masked_fill(int8, 300)` raise instead of wrapping.
//
// Note [Overflowing fill values]
// An integer dtype takes integers within its range; an unsigned one also takes negatives down to
// -max (they wrap, as `a - b` on unsigned tensors does: fill_(-1) on uint8 is 255), but no
// negative floating value. A floating dtype takes any integer or finite value within
// [lowest, max] and every inf and NaN; an integer dtype takes no inf or NaN. bool takes anything.
#pragma once

#include <string_view>

#include "kiln/dtype.h"
#include "kiln/scalar.h"

namespace kiln {

// ValueError naming `op`, the value and the dtype when `value` does not fit `dtype`.
void check_fits(std::string_view op, const Scalar& value, ScalarType dtype);

}  // namespace kiln
