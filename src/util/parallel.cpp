// The intra-op pool (See Note [The intra-op pool] in parallel.h) and the thread-count settings of
// include/kiln/parallel.h.
#include "src/util/parallel.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "kiln/error.h"
#include "kiln/parallel.h"
#include "src/util/interop_threads.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_CPU_RELAX() _mm_pause()
#else
#define KILN_CPU_RELAX() ((void)0)
#endif

namespace kiln::parallel {

namespace {

int threads_from_environment() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);  // OpenMP's list form ("4,2") gives the outer level first
    if (n >= 1) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::atomic<int>& thread_count() {
  static std::atomic<int> count{threads_from_environment()};
  return count;
}

thread_local bool t_in_chunk = false;

// One parallel_for's work, shared by the caller and the workers that picked it up. A worker that
// is descheduled while holding it keeps it alive; the caller's function (`context`) is called
// only for chunk indices below `chunks`, all of which have finished before run() returns.
struct Job {
  detail::ChunkFn fn = nullptr;
  const void* context = nullptr;
  int64_t begin = 0, end = 0, chunk = 0, chunks = 0;
  int workers = 0;               // the pool's workers that may take chunks
  std::atomic<int64_t> next{0};  // the next chunk to take
  std::atomic<int> finished{0};  // chunks run (or skipped after an error); a futex word
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by the thread that set `failed`

  // Takes and runs chunks until none is left; returns how many this thread ran.
  int work() {
    for (int ran = 0;; ++ran) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return ran;
      if (!failed.load(std::memory_order_relaxed)) {
        const int64_t b = begin + c * chunk, e = std::min(end, b + chunk);
        try {
          fn(context, b, e);
        } catch (...) {
          if (!failed.exchange(true)) error = std::current_exception();
        }
      }
      if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) finished.notify_one();
    }
  }
};

// Spins for about this many pause instructions (a few microseconds) before sleeping: back-to-back
// kernels then find their workers awake, and a worker on a contended core gives the core up at
// once.
constexpr int kSpinsBeforeSleeping = 2000;

using Clock = std::chrono::steady_clock;
constexpr Clock::duration kStall = std::chrono::microseconds(250);
constexpr Clock::duration kMinBackoff = std::chrono::milliseconds(1);
constexpr Clock::duration kMaxBackoff = std::chrono::milliseconds(256);

class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool;  // never destroyed: workers may still be sleeping at exit
    return *pool;
  }

  // Runs the job on the calling thread and the workers; false when another thread holds the pool
  // (the caller then runs the range itself).
  bool run(const std::shared_ptr<Job>& job) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    const Clock::time_point start = Clock::now();
    // See Note [Backing off a busy machine].
    job->workers = start < serial_until_ ? 0 : add_workers(job->workers);
    if (job->workers > 0) {
      {
        std::lock_guard lock(mutex_);
        job_ = job;
      }
      generation_.fetch_add(1, std::memory_order_release);
      generation_.notify_all();
    }
    const int own_chunks = job->work();
    const Clock::time_point own_done = Clock::now();
    wait_until_finished(*job);
    if (job->workers > 0) {
      {
        std::lock_guard lock(mutex_);
        job_.reset();
      }
      note_wait(own_chunks, job->chunks, start, own_done, Clock::now());
    }
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  Pool() = default;

  // Starts workers until there are `wanted`; returns how many there are (fewer when the system
  // refuses a thread). A smaller thread count later leaves the extra workers out of the jobs.
  int add_workers(int wanted) {
    while (workers_ < wanted) {
      try {
        std::thread([this, index = workers_] { work(index); }).detach();
      } catch (const std::system_error&) {
        break;
      }
      ++workers_;
    }
    return std::min(wanted, workers_);
  }

  void work(int index) {
    run_serially_on_this_thread();
    uint32_t seen = generation_.load(std::memory_order_acquire);
    for (;;) {
      for (int spin = 0; spin < kSpinsBeforeSleeping; ++spin) {
        if (generation_.load(std::memory_order_acquire) != seen) break;
        KILN_CPU_RELAX();
      }
      generation_.wait(seen, std::memory_order_acquire);
      seen = generation_.load(std::memory_order_acquire);
      std::shared_ptr<Job> job;
      {
        std::lock_guard lock(mutex_);
        job = job_;
      }
      if (job && index < job->workers) (void)job->work();
    }
  }

  // Note [Backing off a busy machine]
  // A worker that the OS deschedules in the middle of a chunk (another process wants its core)
  // holds the caller for a scheduler slice, milliseconds, however small the chunks; a worker
  // sharing its core runs its chunks at a fraction of the caller's speed. On 2 cores with a process
  // spinning on one, 2 threads trained the mnist CNN 1.9x slower than 1 (6.3 s an epoch against
  // 3.4 s). So the caller judges each job by its own speed: `own` is the time it spent in its own
  // chunks. A job is a loss when it took at least 90% of what the caller alone would have taken
  // (own time per chunk times the chunks), or when the caller waited for the workers' last chunks
  // longer than kStall and than two of its chunks. After a loss the following jobs run on the
  // caller alone for a backoff that doubles with each loss in a row (1 ms to 256 ms); a job the
  // workers sped up resets it. On an idle machine large kernels keep their workers, and kernels
  // too small to gain from them run on the caller, as they would below the grain.
  void note_wait(int own_chunks, int64_t chunks, Clock::time_point start,
                 Clock::time_point own_done, Clock::time_point finished) {
    const Clock::duration own = own_done - start, wait = finished - own_done;
    const Clock::duration total = finished - start;
    const Clock::duration per_chunk = own / std::max(own_chunks, 1);
    const bool stalled = wait > kStall && wait > 2 * per_chunk;
    const bool no_gain = own_chunks > 0 && total * 10 >= per_chunk * chunks * 9;
    if (!stalled && !no_gain) {
      backoff_ = Clock::duration::zero();
      return;
    }
    backoff_ = std::clamp<Clock::duration>(2 * backoff_, kMinBackoff, kMaxBackoff);
    serial_until_ = finished + backoff_;
  }

  static void wait_until_finished(Job& job) {
    for (int spin = 0;; ++spin) {
      const int done = job.finished.load(std::memory_order_acquire);
      if (done == job.chunks) return;
      if (spin < kSpinsBeforeSleeping) {
        KILN_CPU_RELAX();
      } else {
        job.finished.wait(done, std::memory_order_acquire);
      }
    }
  }

  std::atomic<bool> busy_{false};
  std::atomic<uint32_t> generation_{0};  // a futex word: workers sleep on it
  std::mutex mutex_;
  std::shared_ptr<Job> job_;
  // Touched only by the thread holding busy_.
  int workers_ = 0;
  Clock::time_point serial_until_{};  // Note [Backing off a busy machine]
  Clock::duration backoff_ = Clock::duration::zero();
};

// Marks the calling thread as running chunks for the scope.
class InChunk {
 public:
  InChunk() { t_in_chunk = true; }
  ~InChunk() { t_in_chunk = false; }
  InChunk(const InChunk&) = delete;
  InChunk& operator=(const InChunk&) = delete;
};

// OpenBLAS and oneDNN called inside a chunk on the calling thread run single-threaded too.
class SerialOpenMp {
 public:
  SerialOpenMp() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SerialOpenMp() { omp_set_num_threads(saved_); }
  SerialOpenMp(const SerialOpenMp&) = delete;
  SerialOpenMp& operator=(const SerialOpenMp&) = delete;

 private:
  int saved_;
};

}  // namespace

int num_threads() { return thread_count().load(std::memory_order_relaxed); }

bool in_parallel_region() { return t_in_chunk || omp_in_parallel(); }

void run_serially_on_this_thread() {
  t_in_chunk = true;
  omp_set_num_threads(1);
}

namespace detail {

void run(int64_t begin, int64_t end, int64_t grain, ChunkFn fn, const void* context) {
  const int64_t n = end - begin, threads = num_threads();
  grain = std::max<int64_t>(grain, 1);
  // A few chunks per thread, so that the threads that are running can take a missing one's share;
  // each at least `grain` long.
  const int64_t chunks = std::min(n / grain, threads * 4);
  if (chunks <= 1) {  // as below the grain
    fn(context, begin, end);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = fn;
  job->context = context;
  job->begin = begin;
  job->end = end;
  job->chunk = (n + chunks - 1) / chunks;
  job->chunks = (n + job->chunk - 1) / job->chunk;
  job->workers = static_cast<int>(threads - 1);
  SerialOpenMp serial;
  InChunk in_chunk;
  if (!Pool::instance().run(job)) fn(context, begin, end);
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace detail
}  // namespace kiln::parallel

namespace kiln {

void set_num_threads(int n) {
  KILN_CHECK(n >= 1, ValueError, "set_num_threads: expected a thread count of at least 1, got {}",
             n);
  parallel::thread_count().store(n, std::memory_order_relaxed);
  // OpenBLAS, oneDNN and the generated kernels thread with OpenMP.
  omp_set_num_threads(n);
}

int get_num_threads() { return parallel::num_threads(); }

void set_num_interop_threads(int n) { parallel::set_interop_threads(n); }

int get_num_interop_threads() { return parallel::interop_threads(); }

}  // namespace kiln
