#include <cstdlib>
#include <new>

#include "tests/sym/allocation_counter.h"

namespace {
thread_local size_t allocation_count = 0;
}

void* operator new(std::size_t size) {
  ++allocation_count;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace kiln::sym::test_support {

size_t allocations_on_this_thread() { return allocation_count; }

}  // namespace kiln::sym::test_support
