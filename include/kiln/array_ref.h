// ArrayRef: a non-owning view of a contiguous list, constructible from a braced list, so calls
// read like LibTorch's (`t.view({2, 3})`, `t.sum({0, 1})`). Valid only while the source lives.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace kiln {

class SymInt;

template <typename T>
class ArrayRef {
 public:
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  // Valid for the full expression the braced list appears in (a call's arguments), as LibTorch.
  constexpr ArrayRef(std::initializer_list<T> list) : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
  constexpr ArrayRef(std::span<const T> s) : data_(s.data()), size_(s.size()) {}
  template <typename Container>
  requires requires(const Container& c) {
    { c.data() } -> std::convertible_to<const T*>;
    { c.size() } -> std::convertible_to<size_t>;
  }
  constexpr ArrayRef(const Container& c) : data_(c.data()), size_(c.size()) {}
  // A list of SymInts views a list of int64 words (an IntArrayRef, std::vector<int64_t>,
  // DimVector) in place: a concrete SymInt is its integer's word (Note [SymInt representation] in
  // kiln/sym_int.h), so existing integer shapes pass where a SymIntArrayRef is taken.
  template <typename Container>
  requires std::same_as<T, SymInt> && requires(const Container& c) {
    { c.data() } -> std::convertible_to<const int64_t*>;
    { c.size() } -> std::convertible_to<size_t>;
  }
  ArrayRef(const Container& c)
      : data_(reinterpret_cast<const T*>(static_cast<const int64_t*>(c.data()))), size_(c.size()) {}

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  constexpr const T& front() const { return data_[0]; }
  constexpr const T& back() const { return data_[size_ - 1]; }
  constexpr ArrayRef slice(size_t start, size_t len) const { return {data_ + start, len}; }
  constexpr ArrayRef slice(size_t start) const { return {data_ + start, size_ - start}; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  constexpr operator std::span<const T>() const { return {data_, size_}; }
  friend bool operator==(ArrayRef a, ArrayRef b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)
      if (!(a.data_[i] == b.data_[i])) return false;
    return true;
  }
  // "[2, 3]", as LibTorch prints sizes (`std::cout << t.sizes()`).
  template <typename Stream>
  requires requires(Stream& os, const T& v) { os << v; }
  friend Stream& operator<<(Stream& os, ArrayRef a) {
    os << "[";
    for (size_t i = 0; i < a.size_; ++i) {
      if (i > 0) os << ", ";
      os << a.data_[i];
    }
    os << "]";
    return os;
  }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kiln
