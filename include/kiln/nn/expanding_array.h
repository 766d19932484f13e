// ExpandingArray<D>: a size per spatial dim, given as one value for all of them or as D values,
// so options read as in PyTorch: Conv2d's kernel_size = 3 means {3, 3}, {3, 1} is taken as is.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kiln/array_ref.h"
#include "kiln/error.h"

namespace kiln::nn {

template <size_t D>
class ExpandingArray {
 public:
  ExpandingArray(int64_t value) { values_.fill(value); }
  ExpandingArray(std::initializer_list<int64_t> values) {
    KILN_CHECK(values.size() == D || values.size() == 1, ValueError,
               "expected {} value(s) (one per spatial dim) or one for all, got {}", D,
               values.size());
    if (values.size() == 1) {
      values_.fill(*values.begin());
    } else {
      size_t i = 0;
      for (int64_t v : values) values_[i++] = v;
    }
  }

  ArrayRef<int64_t> ref() const { return {values_.data(), D}; }
  operator ArrayRef<int64_t>() const { return ref(); }
  int64_t operator[](size_t i) const { return values_[i]; }
  static constexpr size_t size() { return D; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + D; }
  bool all_equal(int64_t v) const {
    for (int64_t x : values_)
      if (x != v) return false;
    return true;
  }
  // Python's tuple repr, as PyTorch's extra_repr prints it: "(3, 3)", "(2,)".
  std::string repr() const {
    std::string s = "(";
    for (size_t i = 0; i < D; ++i) s += (i ? ", " : "") + std::to_string(values_[i]);
    return s + (D == 1 ? ",)" : ")");
  }

 private:
  std::array<int64_t, D> values_{};
};

}  // namespace kiln::nn
