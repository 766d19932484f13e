// Value conversion between dtypes, total and free of undefined behaviour.
//
// Note [Casting to integers]
// C++ leaves float->integer conversion undefined outside the target's range; Kiln defines it:
//  - NaN becomes 0;
//  - the value is truncated toward zero;
//  - a truncated value inside int64's range goes through int64 and then wraps modulo 2^bits into
//    the target (so -1.0 -> uint8 is 255, as PyTorch gives on x86);
//  - a value in [2^63, 2^64) converts exactly to uint64 (and wraps for smaller targets);
//  - anything beyond that (and +-inf) saturates to int64's (uint64's for uint64) limits first.
// Integer->integer conversion is modular (two's complement), integer->float rounds to nearest,
// anything->bool is `value != 0`.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kiln/dtype.h"

namespace kiln {

template <typename To, typename From>
inline To cast_value(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (is_reduced_float_v<From>) {
    return cast_value<To>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (is_reduced_float_v<To>) {
    return To(static_cast<float>(value));
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(value);
  } else if constexpr (std::is_floating_point_v<From>) {  // float -> integer
    if (std::isnan(value)) return To(0);
    const double t = std::trunc(static_cast<double>(value));
    constexpr double kTwo63 = 9223372036854775808.0;
    constexpr double kTwo64 = 18446744073709551616.0;
    if (t >= -kTwo63 && t < kTwo63) return static_cast<To>(static_cast<int64_t>(t));
    if constexpr (std::is_same_v<To, uint64_t>) {
      if (t >= kTwo63 && t < kTwo64) return static_cast<uint64_t>(t);
      return t < 0 ? To(0) : UINT64_MAX;
    } else if (t >= kTwo63 && t < kTwo64) {
      return static_cast<To>(static_cast<uint64_t>(t));
    }
    return static_cast<To>(t < 0 ? INT64_MIN : INT64_MAX);
  } else {
    return static_cast<To>(value);  // integer/bool -> integer: modular
  }
}

}  // namespace kiln
