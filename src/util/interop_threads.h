// The inter-op thread count (kiln::set_num_interop_threads): how many threads the background
// compile pool starts (src/runtime/compile_pool.cpp). Settable once, before the pool starts.
#pragma once

namespace kiln::parallel {

// ValueError unless n >= 1, or when the pool has started or the count was set before.
void set_interop_threads(int n);
int interop_threads();
// Called by the pool when it starts: from then on the count is fixed. Returns it.
int start_interop_threads();

}  // namespace kiln::parallel
