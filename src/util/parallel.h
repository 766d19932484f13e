// parallel_for: how eager kernels split their work over the intra-op threads.
//
// Note [The intra-op pool]
// OpenMP's parallel regions end in a barrier that waits for every thread of the team, so one
// thread the OS has descheduled (another process is busy on its core) stalls the whole op for a
// scheduler slice: a relu of [64, 10, 24, 24] took 2.1 ms on 2 threads of a loaded 2-core machine
// and 0.018 ms on one. Kiln's eager kernels therefore run on their own pool, built so that a
// missing thread costs nothing:
//  - The work is cut into chunks of at least `grain` elements (a few per thread), and whoever is
//    running takes the next chunk from a shared counter; the calling thread takes chunks too. A
//    worker that wakes late finds the work done and goes back to sleep; the call waits only for
//    chunks already taken, never for a thread to arrive.
//  - Work below `grain` elements runs on the calling thread (as ATen's grain size decides).
//  - Idle workers spin only briefly and then sleep in the kernel (futex); waiting never burns a
//    core that another process needs.
//  - A worker descheduled in the middle of a chunk still holds the caller; when that happens the
//    following kernels run on the caller alone for a while (Note [Backing off a busy machine] in
//    parallel.cpp).
//  - A parallel_for inside a chunk, or while another thread's parallel_for holds the pool, runs on
//    the calling thread.
// How the range is cut depends on the thread count, so a kernel must give the same result for any
// cut: a reduction that combines partial results cuts its input into pieces of its own (by size,
// not by thread count) and calls parallel_for over the pieces (grain 1), so its sums are added in
// the same order whatever the number of threads (See Note [Deterministic partial sums] in
// src/kernels/cpu/reduce.cpp).
#pragma once

#include <cstdint>
#include <type_traits>

namespace kiln::parallel {

// The intra-op thread count (kiln::set_num_threads), the calling thread included.
int num_threads();

// True inside a chunk of a parallel_for (or an OpenMP parallel region): work started here runs on
// the calling thread.
bool in_parallel_region();

// From now on, kernels the calling thread runs never split, and OpenBLAS and oneDNN called from
// it run on it alone: for a helper thread that works beside the one doing the training step (the
// data loader's prefetch thread), where splitting would only take cores from that step.
void run_serially_on_this_thread();

namespace detail {
using ChunkFn = void (*)(const void* context, int64_t begin, int64_t end);
void run(int64_t begin, int64_t end, int64_t grain, ChunkFn fn, const void* context);
}  // namespace detail

// Calls fn(b, e) on disjoint subranges that cover [begin, end), each at least `grain` long (but
// the last), on the intra-op threads; returns when all have run. The first exception fn throws
// is rethrown here, after the chunks already started have finished (the others are skipped).
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& fn) {
  if (end <= begin) return;
  if (end - begin <= grain || num_threads() == 1 || in_parallel_region()) {
    fn(begin, end);
    return;
  }
  detail::run(
      begin, end, grain,
      [](const void* context, int64_t b, int64_t e) { (*static_cast<const F*>(context))(b, e); },
      &fn);
}

// OpenMP's `parallel for if (parallel)`, for loops whose callers size the work per item: when
// `parallel`, [begin, end) is cut into as many chunks as the threads can take (items of 1 grain);
// else it runs on the calling thread.
template <typename F>
void parallel_for_if(bool parallel, int64_t begin, int64_t end, const F& fn) {
  parallel_for(begin, end, parallel ? 1 : end - begin, fn);
}

}  // namespace kiln::parallel
