#include "src/util/interop_threads.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "kiln/error.h"

namespace kiln::parallel {

namespace {

struct InteropState {
  std::mutex mutex;
  int count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool set = false;
  bool started = false;
};

InteropState& state() {
  static InteropState s;
  return s;
}

}  // namespace

void set_interop_threads(int n) {
  InteropState& s = state();
  std::lock_guard lock(s.mutex);
  KILN_CHECK(n >= 1, ValueError,
             "set_num_interop_threads: expected a thread count of at least 1, got {}", n);
  KILN_CHECK(!s.started, ValueError,
             "set_num_interop_threads: the inter-op pool has already started (it starts with the "
             "first background compile); call it once, at the start of the program");
  KILN_CHECK(!s.set, ValueError,
             "set_num_interop_threads: the count was already set to {}; it can be set once",
             s.count);
  s.count = n;
  s.set = true;
}

int interop_threads() {
  InteropState& s = state();
  std::lock_guard lock(s.mutex);
  return s.count;
}

int start_interop_threads() {
  InteropState& s = state();
  std::lock_guard lock(s.mutex);
  s.started = true;
  return s.count;
}

}  // namespace kiln::parallel
