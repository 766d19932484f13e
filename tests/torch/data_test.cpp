// torch::data (kiln/torch/data.h): LibTorch's datasets, transforms, samplers, data loader and
// MNIST reader, used as LibTorch programs use them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/generator.h"
#include "kiln/io/io_error.h"
#include "kiln/ops/creation.h"
#include "kiln/torch/data.h"
#include "tests/io/file_helpers.h"

namespace {

using kiln::testing::Bytes;
using kiln::testing::expect_error;
using kiln::testing::idx_file;
using kiln::testing::TempDir;
using kiln::testing::write_file;
using torch::data::Example;
namespace datasets = torch::data::datasets;
namespace samplers = torch::data::samplers;
namespace transforms = torch::data::transforms;

// What the examples a dataset made tell about how the loader called it; shared by the copies of
// the dataset that the workers hold.
struct CallLog {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  bool grad_enabled_seen = false;
};

// Example i: data float32 [2] = (i, 2i), target int64 0-dim = i. get() raises for `failing`;
// index `slow` takes a while, so that later batches are ready before its own.
class IndexDataset : public datasets::Dataset<IndexDataset> {
 public:
  explicit IndexDataset(size_t size, std::shared_ptr<CallLog> log = std::make_shared<CallLog>())
      : size_(size), log_(std::move(log)) {}

  Example<> get(size_t index) override {
    {
      std::lock_guard<std::mutex> lock(log_->mutex);
      log_->threads.insert(std::this_thread::get_id());
      log_->grad_enabled_seen |= kiln::GradMode::is_enabled();
    }
    if (index == failing) throw kiln::ValueError("no example " + std::to_string(index));
    if (index == slow) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto value = static_cast<double>(index);
    return {kiln::tensor({value, 2 * value}),
            kiln::scalar_tensor(static_cast<int64_t>(index), kiln::kInt64)};
  }
  torch::optional<size_t> size() const override { return size_; }

  size_t failing = static_cast<size_t>(-1);
  size_t slow = static_cast<size_t>(-1);

 private:
  size_t size_;
  std::shared_ptr<CallLog> log_;
};

// Adds 0.5 to the data, so a test can see that the transform ran.
struct AddHalf : transforms::TensorTransform<> {
  torch::Tensor operator()(torch::Tensor input) override { return input + 0.5; }
};

std::vector<int64_t> targets_of(const torch::Tensor& target) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < target.size(0); ++i) out.push_back(target[i].item<int64_t>());
  return out;
}

// The examples' indices of each batch of one epoch, checking the batches' shapes on the way.
template <typename Loader>
std::vector<std::vector<int64_t>> epoch_of(Loader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (Example<>& batch : loader) {
    EXPECT_EQ(batch.data.dim(), 2);
    EXPECT_EQ(batch.target.dim(), 1);
    EXPECT_EQ(batch.data.size(0), batch.target.size(0));
    batches.push_back(targets_of(batch.target));
  }
  return batches;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<int64_t> iota(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

// The threads of this process, from /proc/self/task.
size_t thread_count() {
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

// Waits up to a second for the thread count to become `expected` (a joined thread's task can
// outlive the join by a moment) and returns the last count seen.
size_t wait_for_thread_count(size_t expected) {
  size_t count = thread_count();
  for (int i = 0; i < 100 && count != expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = thread_count();
  }
  return count;
}

// A dataset that does not know its size.
class UnsizedDataset : public datasets::Dataset<UnsizedDataset> {
 public:
  Example<> get(size_t index) override { return {kiln::zeros({1}), kiln::zeros({})}; }
  torch::optional<size_t> size() const override { return torch::nullopt; }
};

}  // namespace

TEST(TorchDataLoader, CustomDatasetThroughRandomSamplerWithWorkers) {
  kiln::manual_seed(1);
  auto log = std::make_shared<CallLog>();
  auto dataset = IndexDataset(50, log).map(AddHalf()).map(transforms::Stack<>());
  ASSERT_EQ(dataset.size(), torch::optional<size_t>(50));
  auto loader = torch::data::make_data_loader<samplers::RandomSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(8).workers(2));
  EXPECT_EQ(loader->options().max_jobs, 4u);  // 2 * workers

  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> order;
    std::vector<int64_t> sizes;
    for (const auto& batch : *loader) {
      ASSERT_EQ(batch.data.sizes(), kiln::IntArrayRef({batch.target.size(0), 2}));
      EXPECT_EQ(batch.data.dtype(), kiln::kFloat32);
      EXPECT_EQ(batch.target.dtype(), kiln::kInt64);
      EXPECT_FALSE(batch.data.requires_grad());
      sizes.push_back(batch.target.size(0));
      for (int64_t row = 0; row < batch.target.size(0); ++row) {
        const int64_t index = batch.target[row].item<int64_t>();
        order.push_back(index);
        EXPECT_FLOAT_EQ(batch.data[row][0].item<float>(), static_cast<float>(index) + 0.5f);
        EXPECT_FLOAT_EQ(batch.data[row][1].item<float>(), 2.0f * static_cast<float>(index) + 0.5f);
      }
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{8, 8, 8, 8, 8, 8, 2})) << "epoch " << epoch;
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(0, 50)) << "every index exactly once in epoch " << epoch;
    EXPECT_NE(order, iota(0, 50)) << "RandomSampler gave the examples in order";
    orders.push_back(order);
  }
  EXPECT_NE(orders[0], orders[1]) << "both epochs have the same order";

  // The batches were made on the workers (one may have made them all: they are quick), never on
  // this thread, with autograd off. That workers run side by side shows in the unordered test.
  std::lock_guard<std::mutex> lock(log->mutex);
  EXPECT_GE(log->threads.size(), 1u);
  EXPECT_LE(log->threads.size(), 2u);
  EXPECT_EQ(log->threads.count(std::this_thread::get_id()), 0u);
  EXPECT_FALSE(log->grad_enabled_seen);
}

TEST(TorchDataLoader, SequentialSamplerGivesIndicesInOrder) {
  for (size_t workers : {0, 3}) {
    auto log = std::make_shared<CallLog>();
    IndexDataset source(20, log);
    source.slow = 2;  // with workers, batch 0 comes back after batches 1 and 2
    auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
        source.map(transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(7).workers(workers));
    const std::vector<std::vector<int64_t>> expected = {iota(0, 7), iota(7, 14), iota(14, 20)};
    EXPECT_EQ(epoch_of(*loader), expected) << workers << " workers";
    EXPECT_EQ(epoch_of(*loader), expected) << workers << " workers, second epoch";
    std::lock_guard<std::mutex> lock(log->mutex);
    EXPECT_EQ(log->threads.count(std::this_thread::get_id()), workers == 0 ? 1u : 0u);
  }
}

TEST(TorchDataLoader, UnorderedDeliveryStillGivesEveryBatchOnce) {
  IndexDataset source(20);
  source.slow = 0;
  auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
      source.map(transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(4).workers(3).enforce_ordering(false));
  const auto batches = epoch_of(*loader);
  ASSERT_EQ(batches.size(), 5u);
  EXPECT_NE(batches[0], iota(0, 4)) << "the slow first batch should not come first";
  std::vector<int64_t> all = flat(batches);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(0, 20));
}

TEST(TorchDataLoader, DropLastSkipsThePartialBatch) {
  for (size_t workers : {0, 2}) {
    auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
        IndexDataset(20).map(transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(7).workers(workers).drop_last(true));
    EXPECT_EQ(epoch_of(*loader), (std::vector<std::vector<int64_t>>{iota(0, 7), iota(7, 14)}))
        << workers << " workers";
  }
  // Without drop_last (and a batch size given as a number), the partial batch is there.
  auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
      IndexDataset(20).map(transforms::Stack<>()), 7);
  EXPECT_EQ(epoch_of(*loader).size(), 3u);
}

TEST(TorchDataLoader, ExceptionInGetReachesTheConsumerAtItsBatch) {
  // With workers: batches 0 and 1 arrive, then batch 2 (indices 10..14, 13 fails) raises a
  // WorkerException carrying the dataset's error, which is also a kiln::Error.
  IndexDataset source(30);
  source.failing = 13;
  auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
      source.map(transforms::Stack<>()), torch::data::DataLoaderOptions(5).workers(2));
  std::vector<std::vector<int64_t>> seen;
  try {
    for (auto& batch : *loader) seen.push_back(targets_of(batch.target));
    ADD_FAILURE() << "the epoch ended without an exception";
  } catch (const torch::data::WorkerException& e) {
    EXPECT_NE(std::string(e.what()).find("no example 13"), std::string::npos) << e.what();
    EXPECT_NE(e.message.find("DataLoader worker"), std::string::npos) << e.message;
    EXPECT_THROW(std::rethrow_exception(e.original_exception), kiln::ValueError);
  }
  EXPECT_EQ(seen, (std::vector<std::vector<int64_t>>{iota(0, 5), iota(5, 10)}));
  EXPECT_THROW(epoch_of(*loader), c10::Error) << "a WorkerException is a c10::Error too";

  // Without workers the dataset's exception itself propagates.
  auto serial = torch::data::make_data_loader<samplers::SequentialSampler>(
      source.map(transforms::Stack<>()), torch::data::DataLoaderOptions(5));
  EXPECT_THROW(epoch_of(*serial), kiln::ValueError);
}

TEST(TorchDataLoader, BreakingEarlyThenStartingANewEpochWorks) {
  IndexDataset probe(1);
  (void)probe.get(0);  // any lazily started pools of this thread start now
  const size_t threads_before = thread_count();
  {
    auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
        IndexDataset(40).map(transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(4).workers(2));
    EXPECT_EQ(thread_count(), threads_before + 2);
    for (int round = 0; round < 5; ++round) {
      int taken = 0;
      for (auto& batch : *loader) {
        EXPECT_EQ(targets_of(batch.target), iota(4 * taken, 4 * taken + 4)) << "round " << round;
        if (++taken == round + 1) break;
      }
    }
    // An abandoned epoch's iterator refuses to go on; a full epoch after all that is whole.
    auto stale = loader->begin();
    EXPECT_EQ(targets_of(stale->target), iota(0, 4));
    EXPECT_EQ(flat(epoch_of(*loader)), iota(0, 40));
    EXPECT_THROW(++stale, c10::Error);
    // begin() right after begin(), with nothing consumed.
    (void)loader->begin();
    EXPECT_EQ(flat(epoch_of(*loader)), iota(0, 40));
    // Leaving the loader with batches still in flight.
    auto it = loader->begin();
    EXPECT_EQ(targets_of(it->target), iota(0, 4));
  }
  EXPECT_EQ(wait_for_thread_count(threads_before), threads_before)
      << "the workers were not all joined";
}

TEST(TorchDataLoader, IteratorFollowsLibTorchShape) {
  auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
      IndexDataset(3).map(transforms::Stack<>()), torch::data::DataLoaderOptions(2));
  auto it = loader->begin();
  EXPECT_TRUE(it != loader->end());
  EXPECT_EQ(it->target.size(0), 2);
  ++it;
  EXPECT_EQ((*it).target.size(0), 1);
  ++it;
  EXPECT_TRUE(it == loader->end());
  EXPECT_THROW(++it, c10::Error);
  EXPECT_THROW(*loader->end(), c10::Error);
  // The default sampler is random; a dataset of unknown size cannot make one.
  auto random = torch::data::make_data_loader(IndexDataset(9).map(transforms::Stack<>()), 4);
  std::vector<int64_t> all = flat(epoch_of(*random));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(0, 9));
  EXPECT_THROW(torch::data::make_data_loader(UnsizedDataset().map(transforms::Stack<>())),
               c10::Error);
}

TEST(TorchDataTransforms, NormalizeScalarAndPerChannel) {
  transforms::Normalize<> scalar(0.5, 0.25);
  const torch::Tensor x = kiln::full({1, 2, 2}, 1.0);
  const torch::Tensor y = scalar(x);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_FLOAT_EQ(y.sum().item<float>(), 4 * 2.0f);  // (1 - 0.5) / 0.25 = 2

  transforms::Normalize<> channels({0.0, 1.0, 2.0}, {1.0, 2.0, 4.0});
  const torch::Tensor image = kiln::full({3, 2, 2}, 2.0);
  const torch::Tensor out = channels.apply({image, kiln::scalar_tensor(int64_t{7})}).data;
  ASSERT_EQ(out.sizes(), image.sizes());
  EXPECT_FLOAT_EQ(out[0][1][1].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(out[1][0][1].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(out[2][1][0].item<float>(), 0.0f);
  EXPECT_THROW(transforms::Normalize<>({}, {}), c10::Error);
}

TEST(TorchDataTransforms, StackLambdasAndTensorExamples) {
  // Stack of 0-dim targets gives [B]; of [2] data gives [B, 2].
  std::vector<Example<>> examples;
  for (int64_t i = 0; i < 3; ++i) {
    examples.push_back({kiln::tensor({1.0, 2.0}), kiln::scalar_tensor(i, kiln::kInt64)});
  }
  const Example<> batch = transforms::Stack<>().apply_batch(examples);
  EXPECT_EQ(batch.data.sizes(), kiln::IntArrayRef({3, 2}));
  EXPECT_EQ(batch.target.sizes(), kiln::IntArrayRef({3}));
  EXPECT_EQ(targets_of(batch.target), iota(0, 3));

  // TensorDataset rows are TensorExamples; Stack<TensorExample> collates them.
  auto rows = datasets::TensorDataset(kiln::arange(6, kiln::kFloat32).view({3, 2}))
                  .map(transforms::TensorLambda<torch::data::example::NoTarget>(
                      [](torch::Tensor t) { return t * 10; }))
                  .map(transforms::Stack<torch::data::TensorExample>());
  EXPECT_EQ(rows.size(), torch::optional<size_t>(3));
  const std::vector<size_t> request = {2, 0};
  const torch::data::TensorExample stacked = rows.get_batch(request);
  EXPECT_EQ(stacked.data.sizes(), kiln::IntArrayRef({2, 2}));
  EXPECT_FLOAT_EQ(stacked.data[0][1].item<float>(), 50.0f);
  EXPECT_FLOAT_EQ(stacked.data[1][0].item<float>(), 0.0f);

  // Lambda and BatchLambda over whole examples.
  auto doubled = IndexDataset(4)
                     .map(transforms::Lambda<Example<>>([](Example<> e) {
                       e.target = e.target * 2;
                       return e;
                     }))
                     .map(transforms::Collate<Example<>>([](std::vector<Example<>> b) {
                       return transforms::Stack<>().apply_batch(std::move(b));
                     }));
  const std::vector<size_t> all = {0, 1, 2, 3};
  EXPECT_EQ(targets_of(doubled.get_batch(all).target), (std::vector<int64_t>{0, 2, 4, 6}));
}

TEST(TorchDataDatasets, MapOfAnLvalueCopiesIt) {
  IndexDataset source(5);
  auto mapped = source.map(AddHalf());
  // The source is still usable, and map() chains.
  EXPECT_EQ(source.size(), torch::optional<size_t>(5));
  auto stacked = mapped.map(transforms::Stack<>());
  const std::vector<size_t> request = {4, 1};
  const Example<> batch = stacked.get_batch(request);
  EXPECT_EQ(targets_of(batch.target), (std::vector<int64_t>{4, 1}));
  EXPECT_FLOAT_EQ(batch.data[0][0].item<float>(), 4.5f);
  // The free function, as LibTorch's datasets::map.
  auto direct = datasets::map(IndexDataset(2), transforms::Stack<>());
  EXPECT_EQ(direct.size(), torch::optional<size_t>(2));
}

TEST(TorchDataSamplers, RandomSamplerFollowsManualSeed) {
  const auto epoch = [](samplers::RandomSampler& sampler) {
    std::vector<size_t> all;
    while (auto batch = sampler.next(4)) all.insert(all.end(), batch->begin(), batch->end());
    return all;
  };
  kiln::manual_seed(7);
  samplers::RandomSampler a(10);
  const std::vector<size_t> first = epoch(a);
  a.reset();
  const std::vector<size_t> second = epoch(a);
  kiln::manual_seed(7);
  samplers::RandomSampler b(10);
  EXPECT_EQ(epoch(b), first) << "the same seed gives the same permutation";
  b.reset();
  EXPECT_EQ(epoch(b), second);
  EXPECT_NE(first, second);
  std::vector<size_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  a.reset(3);
  EXPECT_EQ(epoch(a).size(), 3u);
  EXPECT_EQ(a.index(), 3u);
  EXPECT_THROW(samplers::RandomSampler(4, kiln::kFloat32), c10::Error);
}

TEST(TorchDataSamplers, SequentialStreamAndDistributed) {
  samplers::SequentialSampler sequential(5);
  EXPECT_EQ(*sequential.next(3), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(*sequential.next(3), (std::vector<size_t>{3, 4}));
  EXPECT_FALSE(sequential.next(3).has_value());
  sequential.reset(2);
  EXPECT_EQ(*sequential.next(3), (std::vector<size_t>{0, 1}));

  samplers::StreamSampler stream(5);
  EXPECT_EQ(stream.next(3)->size(), 3u);
  EXPECT_EQ(stream.next(3)->size(), 2u);
  EXPECT_FALSE(stream.next(3).has_value());

  // Three replicas of 10 examples: 4 each, together every example (two wrap around).
  std::vector<size_t> all;
  for (size_t rank = 0; rank < 3; ++rank) {
    samplers::DistributedRandomSampler shard(10, 3, rank);
    const auto batch = shard.next(100);
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->size(), 4u);
    all.insert(all.end(), batch->begin(), batch->end());
    EXPECT_FALSE(shard.next(1).has_value());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), 10u);
  samplers::DistributedSequentialSampler second(10, 3, 1, /*allow_duplicates=*/false);
  EXPECT_EQ(*second.next(100), (std::vector<size_t>{3, 4, 5}));
  EXPECT_THROW(samplers::DistributedRandomSampler(10, 2, 2), c10::Error);

  // Saving a sampler into a checkpoint is not supported.
  EXPECT_THROW(samplers::detail::sampler_serialization_unsupported("load"),
               kiln::NotImplementedError);
}

namespace {

const std::string kFashionMNIST = "/usr/share/datasets/fashion-mnist";

// A gzipped file's bytes, read with zlib directly (independently of Kiln's IDX reader).
Bytes gunzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("cannot open " + path);
  Bytes bytes;
  std::vector<uint8_t> chunk(1 << 16);
  int n = 0;
  while ((n = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0)
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  gzclose(file);
  return bytes;
}

}  // namespace

TEST(TorchDataMNIST, ReadsFashionMNISTFromDebiansGzippedFiles) {
  if (!std::filesystem::exists(kFashionMNIST + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << kFashionMNIST << " is absent (apt-get install dataset-fashion-mnist)";
  }
  datasets::MNIST train(kFashionMNIST);
  datasets::MNIST test(kFashionMNIST, datasets::MNIST::Mode::kTest);
  EXPECT_EQ(train.size(), torch::optional<size_t>(60000));
  EXPECT_EQ(test.size(), torch::optional<size_t>(10000));
  EXPECT_TRUE(train.is_train());
  EXPECT_FALSE(test.is_train());
  EXPECT_EQ(train.images().sizes(), kiln::IntArrayRef({60000, 1, 28, 28}));
  EXPECT_EQ(train.targets().sizes(), kiln::IntArrayRef({60000}));

  // The first image and label against the raw bytes: a 16-byte header, then row-major pixels;
  // labels after an 8-byte header.
  const Bytes images = gunzip(kFashionMNIST + "/train-images-idx3-ubyte.gz");
  const Bytes labels = gunzip(kFashionMNIST + "/train-labels-idx1-ubyte.gz");
  ASSERT_EQ(images.size(), 16u + 60000u * 28 * 28);
  ASSERT_EQ(labels.size(), 8u + 60000u);
  const Example<> first = train.get(0);
  ASSERT_EQ(first.data.sizes(), kiln::IntArrayRef({1, 28, 28}));
  EXPECT_EQ(first.data.dtype(), kiln::kFloat32);
  EXPECT_EQ(first.target.dim(), 0);
  EXPECT_EQ(first.target.dtype(), kiln::kInt64);
  EXPECT_EQ(first.target.item<int64_t>(), labels[8]);
  const auto pixels = first.data.accessor<float, 3>();
  for (int r = 0; r < 28; ++r) {
    for (int c = 0; c < 28; ++c) {
      ASSERT_FLOAT_EQ(pixels[0][r][c], static_cast<float>(images[16 + 28 * r + c]) / 255.0f)
          << "pixel (" << r << ", " << c << ")";
    }
  }
  EXPECT_EQ(train.get(59999).target.item<int64_t>(), labels[8 + 59999]);

  // Through LibTorch's pipeline: Normalize then Stack, a batch of 64.
  auto loader = torch::data::make_data_loader<samplers::SequentialSampler>(
      datasets::MNIST(kFashionMNIST, datasets::MNIST::Mode::kTest)
          .map(transforms::Normalize<>(0.5, 0.5))
          .map(transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(64).workers(2));
  auto batch = loader->begin();
  EXPECT_EQ(batch->data.sizes(), kiln::IntArrayRef({64, 1, 28, 28}));
  EXPECT_EQ(batch->target.sizes(), kiln::IntArrayRef({64}));
  EXPECT_FLOAT_EQ(batch->data[0][0][0][0].item<float>(),
                  (test.get(0).data[0][0][0].item<float>() - 0.5f) / 0.5f);
}

TEST(TorchDataMNIST, ReadsUncompressedFilesUnderLibTorchsNames) {
  TempDir dir;
  Bytes pixels(3 * 28 * 28), labels = {7, 0, 9};
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i % 256);
  write_file(dir / "t10k-images-idx3-ubyte", idx_file(0x08, {3, 28, 28}, pixels));
  write_file(dir / "t10k-labels-idx1-ubyte", idx_file(0x08, {3}, labels));
  datasets::MNIST mnist(dir.path().string(), datasets::MNIST::Mode::kTest);
  EXPECT_EQ(mnist.size(), torch::optional<size_t>(3));
  EXPECT_EQ(mnist.get(2).target.item<int64_t>(), 9);
  EXPECT_FLOAT_EQ(mnist.get(1).data[0][0][5].item<float>(),
                  static_cast<float>((28 * 28 + 5) % 256) / 255.0f);
  EXPECT_FLOAT_EQ(mnist.images().max().item<float>(), 1.0f);
}

TEST(TorchDataMNIST, BadRootRaisesNamingThePath) {
  TempDir dir;
  const std::string missing = (dir / "nowhere").string();
  expect_error<kiln::IOError>([&] { datasets::MNIST mnist(missing); },
                              {missing, "does not exist", "train-images-idx3-ubyte"});
  // An images file but no labels: the error names the labels file, both spellings.
  write_file(dir / "train-images-idx3-ubyte", idx_file(0x08, {1, 28, 28}, Bytes(28 * 28)));
  const std::string labels = (dir / "train-labels-idx1-ubyte").string();
  expect_error<kiln::IOError>([&] { datasets::MNIST mnist(dir.path().string()); },
                              {labels, labels + ".gz"});
  // Labels that are not an IDX file; then images of the wrong shape.
  write_file(dir / "train-labels-idx1-ubyte", Bytes{1, 2, 3});
  expect_error<kiln::ValueError>([&] { datasets::MNIST mnist(dir.path().string()); },
                                 {labels, "MNIST"});
  write_file(dir / "train-labels-idx1-ubyte", idx_file(0x08, {1}, Bytes{3}));
  write_file(dir / "train-images-idx3-ubyte", idx_file(0x08, {1, 14, 14}, Bytes(14 * 14)));
  expect_error<kiln::ValueError>(
      [&] { datasets::MNIST mnist(dir.path().string()); },
      {dir.path().string(), "[1, 14, 14]", "expected uint8 [N, 28, 28]"});
}
