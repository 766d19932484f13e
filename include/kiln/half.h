// 16-bit floating types: IEEE binary16 (Half) and bfloat16 (BFloat16). Arithmetic happens in
// float: both convert implicitly to float and are constructed from float with
// round-to-nearest-even.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace kiln {

namespace detail {
inline float bits_to_float(uint32_t bits) { return std::bit_cast<float>(bits); }
inline uint32_t float_to_bits(float value) { return std::bit_cast<uint32_t>(value); }

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal half: normalize into a float.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    const uint32_t float_exponent = static_cast<uint32_t>(127 - 15 - shift + 1);
    return bits_to_float(sign | (float_exponent << 23) | (mantissa << 13));
  }
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_to_float(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

inline uint16_t float_to_half_bits(float value) {
  const uint32_t bits = float_to_bits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs_bits < 0x38800000u) {  // result is subnormal or zero: let the FPU round for us
    const float magic = bits_to_float(0x3f000000u);  // 0.5: shifts the mantissa into place
    const float shifted = bits_to_float(abs_bits) + magic;
    return static_cast<uint16_t>(sign | (float_to_bits(shifted) - float_to_bits(magic)));
  }
  const uint32_t mantissa_odd = (abs_bits >> 13) & 1u;
  uint32_t rounded = abs_bits + 0xc8000fffu + mantissa_odd;  // rebias exponent, round to even
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

inline uint16_t float_to_bfloat16_bits(float value) {
  uint32_t bits = float_to_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}
}  // namespace detail

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float value) : bits(detail::float_to_half_bits(value)) {}
  operator float() const { return detail::half_bits_to_float(bits); }
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float value) : bits(detail::float_to_bfloat16_bits(value)) {}
  operator float() const { return detail::bits_to_float(static_cast<uint32_t>(bits) << 16); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

}  // namespace kiln
