// Storage: the bytes a tensor (and all its views) look at, plus the version counter that in-place
// ops bump. Meta storage has a size but no data.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iosfwd>

#include "kiln/intrusive_ptr.h"

namespace kiln {

enum class Device : uint8_t { CPU, Meta };
// "cpu" or "meta", as LibTorch prints a device.
std::ostream& operator<<(std::ostream& os, Device device);

class StorageImpl : public RefCounted {
 public:
  // Allocates nbytes on `device` through the caching allocator (no data for Meta).
  StorageImpl(size_t nbytes, Device device);
  // Wraps memory owned elsewhere; `deleter(ctx)` runs when the storage dies (may be null).
  StorageImpl(void* data, size_t nbytes, void (*deleter)(void*), void* ctx);
  ~StorageImpl() override;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Note [Version counter]
  // Shared by every view of this storage: an in-place op on any view bumps it, and autograd
  // compares it with the version it saved to detect a saved tensor modified in place.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_ = Device::CPU;
  bool from_allocator_ = false;
  void (*deleter_)(void*) = nullptr;
  void* deleter_ctx_ = nullptr;
  std::atomic<uint32_t> version_{0};
};

using Storage = IntrusivePtr<StorageImpl>;

// The caching allocator behind CPU storage: freed blocks are kept by size class and reused, so a
// steady-state loop allocates nothing from the system. Blocks are 64-byte aligned.
namespace allocator {
void* allocate(size_t nbytes);
void deallocate(void* ptr, size_t nbytes);
// Returns cached blocks to the system.
void empty_cache();
size_t cached_bytes();
}  // namespace allocator

}  // namespace kiln
