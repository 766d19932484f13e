// Scalar: a number that is not a tensor (the `2` in `t * 2`). Keeps integers exact, including
// uint64 values above INT64_MAX.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "kiln/dtype.h"
#include "kiln/sym_int.h"

namespace kiln {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, UInt, Double };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::Bool) { i_ = v; }
  Scalar(double v) : kind_(Kind::Double) { d_ = v; }
  Scalar(float v) : Scalar(static_cast<double>(v)) {}
  Scalar(Half v) : Scalar(static_cast<double>(static_cast<float>(v))) {}
  Scalar(BFloat16 v) : Scalar(static_cast<double>(static_cast<float>(v))) {}
  // A size used as a number (`x / x.size(-1)`): a Scalar is concrete, so a symbolic SymInt is
  // guarded (Note [Guarding a symbolic value]).
  Scalar(SymInt v) : Scalar(static_cast<int64_t>(v)) {}
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Scalar(T v) {
    if constexpr (std::is_unsigned_v<T>) {
      if (static_cast<uint64_t>(v) > static_cast<uint64_t>(INT64_MAX)) {
        kind_ = Kind::UInt;
        u_ = v;
        return;
      }
    }
    kind_ = Kind::Int;
    i_ = static_cast<int64_t>(v);
  }

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_floating() const { return kind_ == Kind::Double; }
  // True for Int and UInt (not Bool).
  bool is_integral() const { return kind_ == Kind::Int || kind_ == Kind::UInt; }

  // The dtype a scalar of this kind takes when it stands alone: bool, int64 (uint64 above
  // INT64_MAX), float64. Promotion with tensors uses categories instead; see result_type.
  ScalarType natural_dtype() const;

  // Converts with C++ semantics made total: see Note [Casting to integers] in src/core/cast.h.
  template <typename T>
  T to() const;

  double to_double() const;
  int64_t to_int64() const;
  uint64_t to_uint64() const;
  bool to_bool() const;

  Scalar operator-() const;
  bool operator==(const Scalar& other) const;
  std::string str() const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    uint64_t u_;
    double d_;
  };
};

}  // namespace kiln
