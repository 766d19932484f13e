// torch::ExpandingArray<D>: LibTorch's size-per-spatial-dim argument (kernel_size 3 means {3, 3}),
// with LibTorch's conversions (from one value, a braced list, a vector, an IntArrayRef, a
// std::array) and accessors (*a, a->at(i), a.size()). It converts to Kiln's
// kiln::nn::ExpandingArray, which Kiln's layers take. Like Kiln's, a one-value list is also
// accepted and repeated (LibTorch insists on D values).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/array_ref.h"
#include "kiln/error.h"
#include "kiln/nn/expanding_array.h"

namespace torch {

template <size_t D, typename T = int64_t>
class ExpandingArray {
 public:
  ExpandingArray(std::initializer_list<T> list) : ExpandingArray(kiln::ArrayRef<T>(list)) {}
  ExpandingArray(std::vector<T> vec) : ExpandingArray(kiln::ArrayRef<T>(vec)) {}
  ExpandingArray(kiln::ArrayRef<T> values) {
    KILN_CHECK(values.size() == D || values.size() == 1, ValueError,
               "expected {} value(s) (one per spatial dim) or one for all, got {}", D,
               values.size());
    for (size_t i = 0; i < D; ++i) values_[i] = values[values.size() == 1 ? 0 : i];
  }
  ExpandingArray(T single_size) { values_.fill(single_size); }
  ExpandingArray(const std::array<T, D>& values) : values_(values) {}

  std::array<T, D>& operator*() { return values_; }
  const std::array<T, D>& operator*() const { return values_; }
  std::array<T, D>* operator->() { return &values_; }
  const std::array<T, D>* operator->() const { return &values_; }
  operator kiln::ArrayRef<T>() const { return {values_.data(), D}; }
  const T& operator[](size_t i) const { return values_[i]; }
  static constexpr size_t size() noexcept { return D; }
  friend bool operator==(const ExpandingArray& a, const ExpandingArray& b) {
    return a.values_ == b.values_;
  }

  // Kiln's ExpandingArray of the same values (for Kiln's layer options).
  kiln::nn::ExpandingArray<D> to_kiln() const requires std::is_same_v<T, int64_t> {
    return [this]<size_t... I>(std::index_sequence<I...>) {
      return kiln::nn::ExpandingArray<D>({values_[I]...});
    }
    (std::make_index_sequence<D>());
  }
  operator kiln::nn::ExpandingArray<D>() const requires std::is_same_v<T, int64_t> {
    return to_kiln();
  }

 protected:
  std::array<T, D> values_{};
};

template <size_t D, typename T>
std::ostream& operator<<(std::ostream& os, const ExpandingArray<D, T>& a) {
  if constexpr (D == 1) {
    return os << a[0];
  } else {
    return os << kiln::ArrayRef<T>(a);
  }
}

// A size per dim where an element may be nullopt ("keep the input's size"), as adaptive pooling's
// output_size takes: {7, torch::nullopt}.
template <size_t D, typename T = int64_t>
class ExpandingArrayWithOptionalElem : public ExpandingArray<D, std::optional<T>> {
  using Base = ExpandingArray<D, std::optional<T>>;

 public:
  using Base::Base;
  ExpandingArrayWithOptionalElem(std::initializer_list<T> list)
      : ExpandingArrayWithOptionalElem(kiln::ArrayRef<T>(list)) {}
  ExpandingArrayWithOptionalElem(std::vector<T> vec)
      : ExpandingArrayWithOptionalElem(kiln::ArrayRef<T>(vec)) {}
  ExpandingArrayWithOptionalElem(kiln::ArrayRef<T> values) : Base(std::optional<T>()) {
    KILN_CHECK(values.size() == D || values.size() == 1, ValueError,
               "expected {} value(s) (one per spatial dim) or one for all, got {}", D,
               values.size());
    for (size_t i = 0; i < D; ++i) this->values_[i] = values[values.size() == 1 ? 0 : i];
  }
  ExpandingArrayWithOptionalElem(T single_size) : Base(std::optional<T>(single_size)) {}
  ExpandingArrayWithOptionalElem(const std::array<T, D>& values) : Base(std::optional<T>()) {
    for (size_t i = 0; i < D; ++i) this->values_[i] = values[i];
  }

  bool all_given() const {
    for (const std::optional<T>& v : this->values_)
      if (!v.has_value()) return false;
    return true;
  }
};

}  // namespace torch
