// The background compile pool: compile_async hands builds to it so that tracing and lowering of
// the next graph overlap with the C++ compiler (which is a separate process; the threads mostly
// wait on it, so one per core keeps every core busy).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "src/runtime/code_cache.h"
#include "src/util/interop_threads.h"

namespace kiln::runtime {

namespace {

class CompilePool {
 public:
  static CompilePool& instance() {
    ensure_registry_outlives_pool();
    static CompilePool pool;
    return pool;
  }

  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

  // At exit: builds already running finish; queued ones are dropped, so their futures report a
  // broken promise to anyone still waiting.
  ~CompilePool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      tasks_.clear();
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

 private:
  CompilePool() {
    const int threads = parallel::start_interop_threads();  // kiln::set_num_interop_threads
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (stopping_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();  // never throws: compile_async's task stores its exception in the future
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

void submit_to_compile_pool(std::function<void()> task) {
  CompilePool::instance().submit(std::move(task));
}

}  // namespace kiln::runtime
