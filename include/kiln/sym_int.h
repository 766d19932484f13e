// SymInt: a size, stride or offset. One 64-bit word: a plain integer in eager mode, and (once
// capture exists) a tagged pointer to a symbolic expression while tracing.
//
// Note [SymInt representation]
// Integers in [kSymbolicTagMin, kSymbolicTagMax] are reserved for tagged pointers; no tensor can
// have a size that large (it is below -2^62), so eager code pays nothing for symbolic support: a
// span of concrete SymInts is bit-identical to a span of int64_t (see TensorImpl::sizes()).
#pragma once

#include <cstdint>
#include <ostream>
#include <span>

#include "kiln/array_ref.h"

namespace kiln {

class SymInt {
 public:
  static constexpr int64_t kSymbolicTagMin = INT64_MIN;
  static constexpr int64_t kSymbolicTagMax = INT64_MIN + (int64_t{1} << 62);

  constexpr SymInt() = default;
  constexpr SymInt(int64_t value) : data_(value) {}

  constexpr bool is_symbolic() const {
    return data_ >= kSymbolicTagMin && data_ <= kSymbolicTagMax;
  }
  // The concrete value. Symbolic values arrive with capture; until then every SymInt is concrete.
  constexpr int64_t expect_int() const { return data_; }
  constexpr int64_t raw() const { return data_; }

  friend constexpr SymInt operator+(SymInt a, SymInt b) { return a.data_ + b.data_; }
  friend constexpr SymInt operator-(SymInt a, SymInt b) { return a.data_ - b.data_; }
  friend constexpr SymInt operator*(SymInt a, SymInt b) { return a.data_ * b.data_; }
  friend constexpr bool operator==(SymInt a, SymInt b) { return a.data_ == b.data_; }
  friend constexpr bool operator==(SymInt a, int64_t b) { return a.data_ == b; }
  friend constexpr auto operator<=>(SymInt a, SymInt b) { return a.data_ <=> b.data_; }
  friend std::ostream& operator<<(std::ostream& os, SymInt s) { return os << s.data_; }

 private:
  int64_t data_ = 0;
};
static_assert(sizeof(SymInt) == sizeof(int64_t));

using IntArrayRef = ArrayRef<int64_t>;
using SymIntArrayRef = ArrayRef<SymInt>;

}  // namespace kiln
