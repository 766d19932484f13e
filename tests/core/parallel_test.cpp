// The intra-op pool (Note [The intra-op pool] in src/util/parallel.h) and the thread settings of
// include/kiln/parallel.h.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "src/util/parallel.h"

namespace kiln {
namespace {

// Restores the thread count a test changed.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(get_num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

TEST(Parallel, EveryIndexRunsOnceForAnyThreadCountAndGrain) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadCount count(threads);
    for (int64_t n : {0, 1, 7, 100, 4097, 100003}) {
      for (int64_t grain : {1, 16, 1000, 1 << 20}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
          ASSERT_LE(0, b);
          ASSERT_LT(b, e);
          ASSERT_LE(e, n);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
              << "threads " << threads << " n " << n << " grain " << grain << " index " << i;
      }
    }
  }
}

TEST(Parallel, ChunksAreAtLeastTheGrainButTheLast) {
  ThreadCount count(4);
  std::atomic<int> short_chunks{0};
  const int64_t n = 1000, grain = 64;
  parallel::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    if (e - b < grain && e != n) short_chunks.fetch_add(1);
  });
  EXPECT_EQ(short_chunks.load(), 0);
}

TEST(Parallel, WorkBelowTheGrainRunsOnTheCallingThread) {
  ThreadCount count(4);
  const auto caller = std::this_thread::get_id();
  bool same = false;
  parallel::parallel_for(0, 100, 100,
                         [&](int64_t, int64_t) { same = std::this_thread::get_id() == caller; });
  EXPECT_TRUE(same);
}

TEST(Parallel, TheFirstExceptionReachesTheCallerAndThePoolStaysUsable) {
  ThreadCount count(2);
  EXPECT_THROW(parallel::parallel_for(0, 1000, 1,
                                      [&](int64_t b, int64_t) {
                                        if (b >= 500) throw std::runtime_error("chunk failed");
                                      }),
               std::runtime_error);
  std::atomic<int64_t> total{0};
  parallel::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 1000);
}

TEST(Parallel, AParallelForInsideAChunkRunsOnItsThread) {
  ThreadCount count(2);
  std::atomic<int> nested_splits{0};
  parallel::parallel_for(0, 8, 1, [&](int64_t, int64_t) {
    EXPECT_TRUE(parallel::in_parallel_region());
    const auto outer = std::this_thread::get_id();
    parallel::parallel_for(0, 1000, 1, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != outer) nested_splits.fetch_add(1);
    });
  });
  EXPECT_EQ(nested_splits.load(), 0);
  EXPECT_FALSE(parallel::in_parallel_region());
}

TEST(Parallel, CallersOnTwoThreadsBothGetTheirWorkDone) {
  ThreadCount count(2);
  std::atomic<int64_t> sums[2] = {0, 0};
  auto caller = [&](int which) {
    for (int round = 0; round < 200; ++round)
      parallel::parallel_for(0, 10000, 100,
                             [&](int64_t b, int64_t e) { sums[which].fetch_add(e - b); });
  };
  std::thread other(caller, 1);
  caller(0);
  other.join();
  EXPECT_EQ(sums[0].load(), 200 * 10000);
  EXPECT_EQ(sums[1].load(), 200 * 10000);
}

TEST(Parallel, ThreadCountsAreCheckedAndKept) {
  ThreadCount count(3);
  EXPECT_EQ(get_num_threads(), 3);
  EXPECT_THROW(set_num_threads(0), ValueError);
  EXPECT_THROW(set_num_threads(-2), ValueError);
  EXPECT_EQ(get_num_threads(), 3);
  try {
    set_num_threads(0);
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("set_num_threads"), std::string::npos) << e.what();
  }
}

TEST(Parallel, TheInteropCountIsSetOnceBeforeThePoolStarts) {
  // test_core compiles nothing, so the inter-op pool has not started.
  EXPECT_THROW(set_num_interop_threads(0), ValueError);
  set_num_interop_threads(2);
  EXPECT_EQ(get_num_interop_threads(), 2);
  EXPECT_THROW(set_num_interop_threads(3), ValueError);
  EXPECT_EQ(get_num_interop_threads(), 2);
}

// Note [Deterministic partial sums] and Note [Deterministic weight gradients]: the same inputs
// give the same bits whatever the thread count.
template <typename F>
void expect_same_bits_for_every_thread_count(const F& compute) {
  std::vector<Tensor> first;
  {
    ThreadCount count(1);
    first = compute();
  }
  for (int threads : {2, 3, 4}) {
    ThreadCount count(threads);
    const std::vector<Tensor> again = compute();
    ASSERT_EQ(again.size(), first.size());
    for (size_t i = 0; i < first.size(); ++i)
      EXPECT_EQ(again[i].to_vector<double>(), first[i].to_vector<double>())
          << "output " << i << " with " << threads << " threads differs from one thread's";
  }
}

TEST(Parallel, ReductionsGiveTheSameBitsWhateverTheThreadCount) {
  manual_seed(3);
  const Tensor long_rows = randn({3, 1 << 19});
  const Tensor columns = randn({1 << 12, 64});
  const Tensor logits = randn({1 << 14, 10}), labels = randint(0, 10, {1 << 14});
  const Tensor a = randn({1 << 16}), b = randn({1 << 16});
  expect_same_bits_for_every_thread_count([&] {
    return std::vector<Tensor>{long_rows.sum(),   long_rows.sum(1),
                               long_rows.mean(1), columns.sum(0),
                               mse_loss(a, b),    nll_loss(log_softmax(logits, 1), labels)};
  });
}

TEST(Parallel, ConvolutionGradientsGiveTheSameBitsWhateverTheThreadCount) {
  manual_seed(4);
  const Tensor x = randn({64, 10, 12, 12});
  const Tensor w = randn({20, 10, 5, 5}), bias = randn({20});
  expect_same_bits_for_every_thread_count([&] {
    const Tensor xi = x.clone().requires_grad_(), wi = w.clone().requires_grad_(),
                 bi = bias.clone().requires_grad_();
    conv2d(xi, wi, bi).pow(2).sum().backward();
    return std::vector<Tensor>{xi.grad(), wi.grad(), bi.grad()};
  });
}

}  // namespace
}  // namespace kiln
