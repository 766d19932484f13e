// SmallVector: a vector that keeps its first N elements inline, so the sizes and strides of a
// tensor (and the argument stack of an op call) need no heap allocation in the common case.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <new>
#include <span>
#include <utility>

namespace kiln {

template <typename T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(std::initializer_list<T> init) { append(init.begin(), init.end()); }
  explicit SmallVector(size_t count, const T& value = T()) { resize(count, value); }
  template <typename It>
  SmallVector(It first, It last) {
    append(first, last);
  }
  SmallVector(std::span<const T> values) { append(values.begin(), values.end()); }
  SmallVector(const SmallVector& other) { append(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { take(std::move(other)); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      append(other.begin(), other.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      release_heap();
      take(std::move(other));
    }
    return *this;
  }
  ~SmallVector() {
    clear();
    release_heap();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return ptr(); }
  const T* data() const { return ptr(); }
  T* begin() { return ptr(); }
  T* end() { return ptr() + size_; }
  const T* begin() const { return ptr(); }
  const T* end() const { return ptr() + size_; }
  T& operator[](size_t i) { return ptr()[i]; }
  const T& operator[](size_t i) const { return ptr()[i]; }
  T& back() { return ptr()[size_ - 1]; }
  const T& back() const { return ptr()[size_ - 1]; }
  operator std::span<const T>() const { return {ptr(), size_}; }
  operator std::span<T>() { return {ptr(), size_}; }

  void push_back(const T& value) {
    reserve(size_ + 1);
    new (ptr() + size_) T(value);
    ++size_;
  }
  void push_back(T&& value) {
    reserve(size_ + 1);
    new (ptr() + size_) T(std::move(value));
    ++size_;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    reserve(size_ + 1);
    T* slot = new (ptr() + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void pop_back() { ptr()[--size_].~T(); }
  void insert(size_t pos, const T& value) {
    push_back(value);
    std::rotate(begin() + pos, end() - 1, end());
  }
  void erase(size_t pos) {
    std::move(begin() + pos + 1, end(), begin() + pos);
    pop_back();
  }
  void clear() {
    for (size_t i = 0; i < size_; ++i) ptr()[i].~T();
    size_ = 0;
  }
  void resize(size_t count, const T& value = T()) {
    reserve(count);
    while (size_ > count) pop_back();
    while (size_ < count) push_back(value);
  }
  void reserve(size_t count) {
    if (count <= capacity_) return;
    size_t new_capacity = std::max(count, capacity_ * 2);
    T* fresh =
        static_cast<T*>(::operator new(new_capacity * sizeof(T), std::align_val_t(alignof(T))));
    for (size_t i = 0; i < size_; ++i) {
      new (fresh + i) T(std::move(ptr()[i]));
      ptr()[i].~T();
    }
    release_heap();
    heap_ = fresh;
    capacity_ = new_capacity;
  }
  template <typename It>
  void append(It first, It last) {
    reserve(size_ + static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) push_back(*first);
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T* ptr() { return heap_ ? heap_ : reinterpret_cast<T*>(inline_); }
  const T* ptr() const { return heap_ ? heap_ : reinterpret_cast<const T*>(inline_); }
  void release_heap() {
    if (heap_) ::operator delete(heap_, std::align_val_t(alignof(T)));
    heap_ = nullptr;
    capacity_ = N;
  }
  void take(SmallVector&& other) {
    if (other.heap_) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      size_ = other.size_;
      other.heap_ = nullptr;
      other.capacity_ = N;
      other.size_ = 0;
    } else {
      for (size_t i = 0; i < other.size_; ++i) new (ptr() + i) T(std::move(other.ptr()[i]));
      size_ = other.size_;
      other.clear();
    }
  }

  T* heap_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace kiln
