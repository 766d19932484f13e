// IntrusivePtr: a refcounted handle whose count lives in the object (one allocation, one word).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace kiln {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

  void retain() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  // Returns true when this was the last reference.
  bool release() const { return refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<uint32_t> refcount_{0};
};

template <typename T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  explicit IntrusivePtr(T* p) : ptr_(p) {
    if (ptr_) ptr_->retain();
  }
  IntrusivePtr(const IntrusivePtr& o) : ptr_(o.ptr_) {
    if (ptr_) ptr_->retain();
  }
  IntrusivePtr(IntrusivePtr&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  template <typename U>
  IntrusivePtr(IntrusivePtr<U> o) : ptr_(o.release_ownership()) {}
  IntrusivePtr& operator=(IntrusivePtr o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  ~IntrusivePtr() { reset(); }

  void reset() {
    if (ptr_ && ptr_->release()) delete ptr_;
    ptr_ = nullptr;
  }
  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  T* release_ownership() { return std::exchange(ptr_, nullptr); }
  friend bool operator==(const IntrusivePtr& a, const IntrusivePtr& b) { return a.ptr_ == b.ptr_; }

 private:
  T* ptr_ = nullptr;
};

template <typename T, typename... Args>
IntrusivePtr<T> make_intrusive(Args&&... args) {
  return IntrusivePtr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace kiln
