#include "kiln/storage.h"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/error.h"

namespace kiln {
namespace allocator {
namespace {

// Note [Caching allocator]
// Small blocks are rounded up to a power of two, large ones (>= 1 MiB) to a multiple of 1 MiB,
// and freed blocks wait in a free list per rounded size. A training loop allocates the same sizes
// every step, so after the first step nothing goes to the system allocator (which for large
// blocks means mmap and page faults on every step). The cache is capped; past the cap, frees go
// straight back to the system.
constexpr size_t kAlignment = 64;
constexpr size_t kLargeStep = size_t{1} << 20;
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

size_t round_size(size_t nbytes) {
  if (nbytes <= kAlignment) return kAlignment;
  if (nbytes >= kLargeStep) return (nbytes + kLargeStep - 1) / kLargeStep * kLargeStep;
  size_t s = kAlignment;
  while (s < nbytes) s <<= 1;
  return s;
}

// Small blocks (power-of-two classes below kLargeStep) live in a fixed array of free lists, so
// the hot path of a small op is a lock and a vector pop, with no hashing.
constexpr int kSmallClasses = 15;  // 64 B .. 512 KiB

int small_class(size_t rounded) {  // rounded is a power of two in [64, kLargeStep)
  return std::countr_zero(rounded) - std::countr_zero(kAlignment);
}

// A spinlock: the critical sections are a few instructions long and almost never contended, so
// a futex-based mutex costs more than the work it protects (it shows in per-op overhead).
class SpinLock {
 public:
  void lock() {
    while (flag_.test_and_set(std::memory_order_acquire)) {
      while (flag_.test(std::memory_order_relaxed)) {
      }
    }
  }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
};

struct Cache {
  SpinLock mutex;
  std::vector<void*> small[kSmallClasses];
  std::unordered_map<size_t, std::vector<void*>> large;
  size_t cached = 0;

  std::vector<void*>& list(size_t rounded) {
    return rounded < kLargeStep ? small[small_class(rounded)] : large[rounded];
  }
};
Cache& cache() {
  static Cache* c = new Cache();  // leaked on purpose: storage may be freed during exit
  return *c;
}
}  // namespace

void* allocate(size_t nbytes) {
  const size_t size = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<SpinLock> lock(c.mutex);
    std::vector<void*>& blocks = c.list(size);
    if (!blocks.empty()) {
      void* p = blocks.back();
      blocks.pop_back();
      c.cached -= size;
      return p;
    }
  }
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) {
    empty_cache();
    p = std::aligned_alloc(kAlignment, size);
  }
  KILN_CHECK(p != nullptr, Error, "out of memory: cannot allocate {} bytes for a tensor", nbytes);
  return p;
}

void deallocate(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  const size_t size = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<SpinLock> lock(c.mutex);
    if (c.cached + size <= kMaxCachedBytes) {
      c.list(size).push_back(ptr);
      c.cached += size;
      return;
    }
  }
  std::free(ptr);
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<SpinLock> lock(c.mutex);
  for (auto& blocks : c.small) {
    for (void* p : blocks) std::free(p);
    blocks.clear();
  }
  for (auto& [size, blocks] : c.large)
    for (void* p : blocks) std::free(p);
  c.large.clear();
  c.cached = 0;
}

size_t cached_bytes() {
  Cache& c = cache();
  std::lock_guard<SpinLock> lock(c.mutex);
  return c.cached;
}

}  // namespace allocator

StorageImpl::StorageImpl(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (device == Device::CPU && nbytes > 0) {
    data_ = allocator::allocate(nbytes);
    from_allocator_ = true;
  }
}

StorageImpl::StorageImpl(void* data, size_t nbytes, void (*deleter)(void*), void* ctx)
    : data_(data), nbytes_(nbytes), deleter_(deleter), deleter_ctx_(ctx) {}

StorageImpl::~StorageImpl() {
  if (from_allocator_) allocator::deallocate(data_, nbytes_);
  if (deleter_ != nullptr) deleter_(deleter_ctx_);
}

}  // namespace kiln
