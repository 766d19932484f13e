#include "kiln/storage.h"

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

struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;
  size_t cached = 0;
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
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
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
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cached + size <= kMaxCachedBytes) {
      c.free_blocks[size].push_back(ptr);
      c.cached += size;
      return;
    }
  }
  std::free(ptr);
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [size, blocks] : c.free_blocks)
    for (void* p : blocks) std::free(p);
  c.free_blocks.clear();
  c.cached = 0;
}

size_t cached_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
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
