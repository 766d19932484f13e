// Counts heap allocations on this thread (the test binary replaces global operator new), so tests
// can assert that a hot path does not allocate.
#pragma once

#include <cstddef>

namespace kiln::sym::test_support {

size_t allocations_on_this_thread();

}  // namespace kiln::sym::test_support
