// Threads, as torch.set_num_threads / torch.get_num_threads / torch.set_num_interop_threads.
//
//   kiln::set_num_threads(1);   // every eager kernel on the calling thread
//
// Intra-op threads split one kernel's work (See Note [The intra-op pool] in src/util/parallel.h).
// The default is OMP_NUM_THREADS when it is set, else the number of CPUs this process may run on.
// The count also bounds the OpenMP threads of OpenBLAS, oneDNN and the generated code. Results do
// not depend on it: a reduction is summed in the same order whatever the count.
//
// Inter-op threads run independent work of one program side by side: in Kiln, the background
// compiles of kiln::compile (See src/runtime/compile_pool.cpp). As in PyTorch, the count can be
// set once, before that pool has started.
#pragma once

namespace kiln {

// ValueError unless n >= 1.
void set_num_threads(int n);
int get_num_threads();

// ValueError unless n >= 1, or when the inter-op pool has already started (it starts with the
// first background compile) or the count was set before.
void set_num_interop_threads(int n);
int get_num_interop_threads();

}  // namespace kiln
