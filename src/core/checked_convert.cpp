#include "src/core/checked_convert.h"

#include <cmath>
#include <limits>

#include "kiln/error.h"
#include "kiln/half.h"

namespace kiln {
namespace {

// The dtype's finite range as doubles (floating) or 128-bit integers (integral).
struct Range {
  __int128 min = 0, max = 0;
  double lowest = 0, highest = 0;
};

Range range_of(ScalarType dtype) {
  Range r;
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_integral_v<T>) {
      r.min = std::numeric_limits<T>::min();
      r.max = std::numeric_limits<T>::max();
    } else if constexpr (std::is_same_v<T, Half>) {
      r.lowest = -65504.0;
      r.highest = 65504.0;
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      r.lowest = -static_cast<double>(std::numeric_limits<float>::max());
      r.highest = static_cast<double>(std::numeric_limits<float>::max());
    } else {
      r.lowest = static_cast<double>(std::numeric_limits<T>::lowest());
      r.highest = static_cast<double>(std::numeric_limits<T>::max());
    }
  });
  return r;
}

bool fits(const Scalar& value, ScalarType dtype) {
  if (dtype == kBool || value.is_bool()) return true;
  const Range r = range_of(dtype);
  if (is_floating(dtype)) {
    if (value.is_integral()) {
      const double v = value.kind() == Scalar::Kind::UInt ? static_cast<double>(value.to_uint64())
                                                          : static_cast<double>(value.to_int64());
      return v >= r.lowest && v <= r.highest;
    }
    const double v = value.to_double();
    return !std::isfinite(v) || (v >= r.lowest && v <= r.highest);
  }
  if (value.is_integral()) {
    const __int128 v = value.kind() == Scalar::Kind::UInt ? static_cast<__int128>(value.to_uint64())
                                                          : static_cast<__int128>(value.to_int64());
    if (is_unsigned(dtype)) return v <= r.max && v >= -r.max;
    return v >= r.min && v <= r.max;
  }
  const double v = value.to_double();
  if (!std::isfinite(v)) return false;
  return v >= static_cast<double>(r.min) && v <= static_cast<double>(r.max);
}

}  // namespace

void check_fits(std::string_view op, const Scalar& value, ScalarType dtype) {
  KILN_CHECK(fits(value, dtype), ValueError,
             "{}: value {} cannot be converted to dtype {} without overflow; use a value in the "
             "dtype's range or a wider dtype",
             op, value.str(), dtype_name(dtype));
}

}  // namespace kiln
