#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <numeric>
#include <thread>

#include "kiln/kiln.h"
#include "tests/io/file_helpers.h"

using namespace kiln;
using namespace kiln::data;
using kiln::testing::expect_error;

namespace {

// Example i: data [i, 10 i] (int64), target i.
std::shared_ptr<TensorDataset> numbered(int64_t n) {
  Tensor index = arange(n);
  return std::make_shared<TensorDataset>(cat({index.unsqueeze(1), index.mul(10).unsqueeze(1)}, 1),
                                         index);
}

// The targets of every batch of one pass, in order.
std::vector<std::vector<int64_t>> pass(DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto& batch : loader) batches.push_back(batch.target.to_vector<int64_t>());
  return batches;
}

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

// The same examples as numbered(), without a get_batch of its own: batches are stacked from get().
class NumberedExamples : public Dataset {
 public:
  explicit NumberedExamples(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    KILN_CHECK(i != fail_at_, ValueError, "NumberedExamples: example {} is unreadable", i);
    return {tensor({i, 10 * i}), scalar_tensor(i, kInt64)};
  }

 private:
  int64_t n_;
  int64_t fail_at_;
};

// Counts get_batch calls, so tests can see how far the worker runs ahead.
class CountingDataset : public TensorDataset {
 public:
  CountingDataset() : TensorDataset(arange(100)) {}
  Batch get_batch(const Tensor& indices) const override {
    ++calls;
    return TensorDataset::get_batch(indices);
  }
  mutable std::atomic<int> calls{0};
};

}  // namespace

TEST(DataLoader, BatchesFollowTheDatasetOrderWithoutShuffle) {
  DataLoader loader(numbered(10), {.batch_size = 3});
  EXPECT_EQ(loader.size(), 4);
  std::vector<std::vector<int64_t>> expected{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}};
  EXPECT_EQ(pass(loader), expected);
  EXPECT_EQ(pass(loader), expected);  // a second epoch, same order
}

TEST(DataLoader, BatchStacksDataAndTargets) {
  DataLoader loader(numbered(10), {.batch_size = 4});
  auto it = loader.begin();
  ++it;
  const Batch& batch = *it;
  EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(batch.data.to_vector<int64_t>(), (std::vector<int64_t>{4, 40, 5, 50, 6, 60, 7, 70}));
  EXPECT_EQ(batch.target.sizes().vec(), (std::vector<int64_t>{4}));
}

TEST(DataLoader, DropLastLeavesOutTheShortBatch) {
  DataLoader loader(numbered(10), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(loader.size(), 3);
  EXPECT_EQ(pass(loader), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}));
  DataLoader exact(numbered(9), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(exact.size(), 3);
}

TEST(DataLoader, EmptyDatasetHasNoBatches) {
  DataLoader loader(numbered(0), {.batch_size = 4});
  EXPECT_EQ(loader.size(), 0);
  EXPECT_TRUE(pass(loader).empty());
}

TEST(DataLoader, ShuffledEpochsArePermutationsFixedBySeedAndEpoch) {
  DataLoader loader(numbered(50), {.batch_size = 8, .shuffle = true, .seed = 123});
  DataLoader same_seed(numbered(50), {.batch_size = 8, .shuffle = true, .seed = 123});
  DataLoader other_seed(numbered(50), {.batch_size = 8, .shuffle = true, .seed = 124});
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);

  const std::vector<int64_t> epoch0 = flatten(pass(loader));
  const std::vector<int64_t> epoch1 = flatten(pass(loader));
  std::vector<int64_t> sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(epoch0, identity);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_EQ(epoch0, loader.epoch_order(0));
  EXPECT_EQ(epoch1, loader.epoch_order(1));
  EXPECT_EQ(flatten(pass(same_seed)), epoch0);
  EXPECT_EQ(flatten(pass(same_seed)), epoch1);
  EXPECT_NE(flatten(pass(other_seed)), epoch0);

  // Resuming: set_epoch replays an epoch's order without running the ones before it.
  DataLoader resumed(numbered(50), {.batch_size = 8, .shuffle = true, .seed = 123});
  resumed.set_epoch(1);
  EXPECT_EQ(resumed.next_epoch(), 1);
  EXPECT_EQ(flatten(pass(resumed)), epoch1);
  EXPECT_EQ(resumed.next_epoch(), 2);
}

// Fisher-Yates with an unbiased draw makes all 24 orders of 4 elements equally likely; the common
// bug (drawing j from the whole range) makes some twice as likely as others.
TEST(DataLoader, ShuffleIsUniformOverPermutations) {
  DataLoader loader(numbered(4), {.batch_size = 4, .shuffle = true, .seed = 9});
  std::map<std::vector<int64_t>, int> counts;
  const int epochs = 24000;
  for (int e = 0; e < epochs; ++e) ++counts[loader.epoch_order(e)];
  EXPECT_EQ(counts.size(), 24u);
  for (const auto& [order, count] : counts) {
    // Expected 1000 each, standard deviation about 31: 4 sigma either side.
    EXPECT_GT(count, 875) << ::testing::PrintToString(order);
    EXPECT_LT(count, 1125) << ::testing::PrintToString(order);
  }
}

TEST(DataLoader, PrefetchingGivesTheSameBatchesAsLoadingInline) {
  std::vector<std::vector<std::vector<int64_t>>> passes;
  for (int64_t prefetch : {0, 1, 3}) {
    DataLoader loader(numbered(37),
                      {.batch_size = 5, .shuffle = true, .seed = 4, .prefetch = prefetch});
    passes.push_back(pass(loader));
    passes.push_back(pass(loader));
  }
  EXPECT_EQ(passes[0], passes[2]);
  EXPECT_EQ(passes[0], passes[4]);
  EXPECT_EQ(passes[1], passes[3]);
  EXPECT_EQ(passes[1], passes[5]);
}

TEST(DataLoader, DatasetsWithoutGetBatchAreStackedPerExample) {
  DataLoader stacked(std::make_shared<NumberedExamples>(11), {.batch_size = 4, .shuffle = true});
  DataLoader fast(numbered(11), {.batch_size = 4, .shuffle = true});
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto a = stacked.begin();
    auto b = fast.begin();
    for (; a != stacked.end() && b != fast.end(); ++a, ++b) {
      EXPECT_EQ(a->data.sizes().vec(), b->data.sizes().vec());
      EXPECT_EQ(a->data.to_vector<int64_t>(), b->data.to_vector<int64_t>());
      EXPECT_EQ(a->target.to_vector<int64_t>(), b->target.to_vector<int64_t>());
    }
    EXPECT_TRUE(a == stacked.end() && b == fast.end());
  }
}

TEST(DataLoader, WorkerExceptionIsRethrownInTheCallerAtThatBatch) {
  for (int64_t prefetch : {0, 2}) {
    SCOPED_TRACE(prefetch);
    DataLoader loader(std::make_shared<NumberedExamples>(10, /*fail_at=*/5),
                      {.batch_size = 2, .prefetch = prefetch});
    int batches_seen = 0;
    expect_error<ValueError>(
        [&] {
          for (auto& batch : loader) {
            EXPECT_EQ(batch.target.numel(), 2);
            ++batches_seen;
          }
        },
        {"example 5 is unreadable"});
    EXPECT_EQ(batches_seen, 2);  // batches {0, 1} and {2, 3}; {4, 5} fails
    // The loader stays usable: the next epoch runs (and fails at the same example again).
    expect_error<ValueError>([&] { pass(loader); }, {"example 5 is unreadable"});
  }
}

TEST(DataLoader, ErrorInTheFirstBatchIsThrownByBegin) {
  DataLoader loader(std::make_shared<NumberedExamples>(4, /*fail_at=*/0), {.batch_size = 2});
  expect_error<ValueError>([&] { loader.begin(); }, {"example 0"});
}

TEST(DataLoader, WorkerPrefetchesAheadButNoFurtherThanTheQueueBound) {
  auto dataset = std::make_shared<CountingDataset>();
  DataLoader loader(dataset, {.batch_size = 10, .prefetch = 2});
  auto it = loader.begin();  // the caller holds batch 0; the worker fills the queue with 1 and 2
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (dataset->calls < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(dataset->calls, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(dataset->calls, 3) << "the worker ran past the queue bound";
  ++it;
  EXPECT_EQ(it->target.defined(), false);
  EXPECT_EQ(it->data.to_vector<int64_t>()[0], 10);
}

TEST(DataLoader, StoppingEarlyEndsTheWorkerCleanly) {
  auto dataset = std::make_shared<CountingDataset>();
  {
    DataLoader loader(dataset, {.batch_size = 1, .prefetch = 4});
    for (auto& batch : loader) {
      EXPECT_EQ(batch.data.numel(), 1);
      break;  // the worker is blocked on a full queue now
    }
  }  // the destructor must wake and join it
  EXPECT_LT(dataset->calls, 100);
}

TEST(DataLoader, BeginEndsTheIterationInProgress) {
  DataLoader loader(numbered(20), {.batch_size = 2});
  auto old_iteration = loader.begin();
  ++old_iteration;
  auto new_iteration = loader.begin();
  EXPECT_EQ(new_iteration->target.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  expect_error<ValueError>([&] { ++old_iteration; }, {"epoch has ended"});
  EXPECT_EQ(loader.next_epoch(), 2);
}

TEST(DataLoader, IteratorPastTheEndThrows) {
  DataLoader loader(numbered(2), {.batch_size = 2});
  auto it = loader.begin();
  ++it;
  EXPECT_TRUE(it == loader.end());
  expect_error<ValueError>([&] { *it; }, {"past the last batch"});
  expect_error<ValueError>([&] { ++it; }, {"past the last batch"});
}

TEST(DataLoader, BatchesDoNotRecordGradients) {
  Tensor data = randn({6, 3});
  data.requires_grad_();
  DataLoader loader(std::make_shared<TensorDataset>(data), {.batch_size = 3});
  for (auto& batch : loader) EXPECT_FALSE(batch.data.requires_grad());
}

TEST(DataLoader, BadOptionsAreValueErrors) {
  expect_error<ValueError>([] { DataLoader(numbered(3), {.batch_size = 0}); }, {"batch_size"});
  expect_error<ValueError>([] { DataLoader(numbered(3), {.prefetch = -1}); }, {"prefetch"});
  expect_error<ValueError>([] { DataLoader(nullptr); }, {"null"});
  DataLoader loader(numbered(3));
  expect_error<ValueError>([&] { loader.set_epoch(-1); }, {"epoch"});
}

TEST(TensorDataset, ChecksSizesAndIndices) {
  expect_error<ShapeError>([] { TensorDataset(zeros({4, 2}), zeros({3})); }, {"4", "3"});
  expect_error<ShapeError>([] { TensorDataset(scalar_tensor(1.0)); }, {"0-dim"});
  TensorDataset dataset(zeros({4, 2}), arange(4));
  EXPECT_EQ(dataset.size(), 4);
  EXPECT_EQ(dataset.get(3).target.item<int64_t>(), 3);
  expect_error<IndexError>([&] { dataset.get(4); }, {"index 4", "4 examples"});
  expect_error<ValueError>([&] { dataset.get_batch(zeros({2})); }, {"1-D integer"});
}
