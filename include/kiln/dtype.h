// ScalarType: every dtype Kiln has. Unsigned integers are first class (see Note [Unsigned
// integers] in src/core/promotion.cpp).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>

#include "kiln/half.h"

namespace kiln {

enum class ScalarType : uint8_t {
  Bool,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};
inline constexpr int kNumScalarTypes = 13;

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kUInt8 = ScalarType::UInt8;
inline constexpr ScalarType kByte = ScalarType::UInt8;
inline constexpr ScalarType kUInt16 = ScalarType::UInt16;
inline constexpr ScalarType kUInt32 = ScalarType::UInt32;
inline constexpr ScalarType kUInt64 = ScalarType::UInt64;
inline constexpr ScalarType kInt8 = ScalarType::Int8;
inline constexpr ScalarType kChar = ScalarType::Int8;
inline constexpr ScalarType kInt16 = ScalarType::Int16;
inline constexpr ScalarType kShort = ScalarType::Int16;
inline constexpr ScalarType kInt32 = ScalarType::Int32;
inline constexpr ScalarType kInt = ScalarType::Int32;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kLong = ScalarType::Int64;
inline constexpr ScalarType kFloat16 = ScalarType::Float16;
inline constexpr ScalarType kHalf = ScalarType::Float16;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kFloat32 = ScalarType::Float32;
inline constexpr ScalarType kFloat = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;
inline constexpr ScalarType kDouble = ScalarType::Float64;

inline constexpr ScalarType kAllScalarTypes[] = {kBool,     kUInt8,   kUInt16, kUInt32, kUInt64,
                                                 kInt8,     kInt16,   kInt32,  kInt64,  kFloat16,
                                                 kBFloat16, kFloat32, kFloat64};

// "float32", "uint16", ... : the names PyTorch prints (torch.float32 -> "float32").
std::string_view dtype_name(ScalarType t);
// The C++ type's name, as LibTorch prints a dtype (`std::cout << t.dtype()`): "float", "long int",
// "unsigned char", "c10::Half".
std::ostream& operator<<(std::ostream& os, ScalarType t);
// Parses a name from dtype_name; throws ValueError on an unknown name.
ScalarType dtype_from_name(std::string_view name);

constexpr int64_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::UInt8:
    case ScalarType::Int8:
      return 1;
    case ScalarType::UInt16:
    case ScalarType::Int16:
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return 2;
    case ScalarType::UInt32:
    case ScalarType::Int32:
    case ScalarType::Float32:
      return 4;
    default:
      return 8;
  }
}
constexpr bool is_floating(ScalarType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat32 || t == kFloat64;
}
constexpr bool is_unsigned(ScalarType t) {
  return t == kUInt8 || t == kUInt16 || t == kUInt32 || t == kUInt64;
}
constexpr bool is_signed_integral(ScalarType t) {
  return t == kInt8 || t == kInt16 || t == kInt32 || t == kInt64;
}
// Integral excluding bool.
constexpr bool is_integral(ScalarType t) { return is_unsigned(t) || is_signed_integral(t); }
constexpr bool is_integral_or_bool(ScalarType t) { return t == kBool || is_integral(t); }

// A set of dtypes, used by the op table to say which dtypes an op supports.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<ScalarType> types) {
    for (ScalarType t : types) bits_ |= bit(t);
  }
  constexpr bool contains(ScalarType t) const { return bits_ & bit(t); }
  constexpr DTypeSet operator|(DTypeSet other) const { return from_raw(bits_ | other.bits_); }
  constexpr DTypeSet operator-(DTypeSet other) const { return from_raw(bits_ & ~other.bits_); }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint32_t raw() const { return bits_; }
  static constexpr DTypeSet from_raw(uint32_t bits) {
    DTypeSet s;
    s.bits_ = bits;
    return s;
  }
  static constexpr uint32_t bit(ScalarType t) { return 1u << static_cast<int>(t); }

  // Public so a DTypeSet can be a template argument (kernels restrict instantiation with it).
  uint32_t bits_ = 0;
};

namespace dtypes {
inline constexpr DTypeSet kFloating{kFloat16, kBFloat16, kFloat32, kFloat64};
inline constexpr DTypeSet kUnsigned{kUInt8, kUInt16, kUInt32, kUInt64};
inline constexpr DTypeSet kSigned{kInt8, kInt16, kInt32, kInt64};
inline constexpr DTypeSet kIntegral = kUnsigned | kSigned;
inline constexpr DTypeSet kIntegralAndBool = kIntegral | DTypeSet{kBool};
inline constexpr DTypeSet kNumeric = kIntegral | kFloating;  // everything but bool
inline constexpr DTypeSet kAll = kNumeric | DTypeSet{kBool};
}  // namespace dtypes

// C++ type <-> ScalarType.
template <typename T>
struct CppTypeToScalarType;
#define KILN_MAP_TYPE(cpp, st)                          \
  template <>                                           \
  struct CppTypeToScalarType<cpp> {                     \
    static constexpr ScalarType value = ScalarType::st; \
  };
KILN_MAP_TYPE(bool, Bool)
KILN_MAP_TYPE(uint8_t, UInt8)
KILN_MAP_TYPE(uint16_t, UInt16)
KILN_MAP_TYPE(uint32_t, UInt32)
KILN_MAP_TYPE(uint64_t, UInt64)
KILN_MAP_TYPE(int8_t, Int8)
KILN_MAP_TYPE(int16_t, Int16)
KILN_MAP_TYPE(int32_t, Int32)
KILN_MAP_TYPE(int64_t, Int64)
KILN_MAP_TYPE(Half, Float16)
KILN_MAP_TYPE(BFloat16, BFloat16)
KILN_MAP_TYPE(float, Float32)
KILN_MAP_TYPE(double, Float64)
#undef KILN_MAP_TYPE
template <typename T>
inline constexpr ScalarType scalar_type_of = CppTypeToScalarType<T>::value;

template <typename T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;

// The type arithmetic on T is carried out in: float for Half/BFloat16, T otherwise.
template <typename T>
using opmath_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

// Calls f.template operator()<T>() with T the C++ type of `t`.
template <typename F>
decltype(auto) visit_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Bool:
      return f.template operator()<bool>();
    case ScalarType::UInt8:
      return f.template operator()<uint8_t>();
    case ScalarType::UInt16:
      return f.template operator()<uint16_t>();
    case ScalarType::UInt32:
      return f.template operator()<uint32_t>();
    case ScalarType::UInt64:
      return f.template operator()<uint64_t>();
    case ScalarType::Int8:
      return f.template operator()<int8_t>();
    case ScalarType::Int16:
      return f.template operator()<int16_t>();
    case ScalarType::Int32:
      return f.template operator()<int32_t>();
    case ScalarType::Int64:
      return f.template operator()<int64_t>();
    case ScalarType::Float16:
      return f.template operator()<Half>();
    case ScalarType::BFloat16:
      return f.template operator()<BFloat16>();
    case ScalarType::Float32:
      return f.template operator()<float>();
    case ScalarType::Float64:
      return f.template operator()<double>();
  }
  __builtin_unreachable();
}

}  // namespace kiln
