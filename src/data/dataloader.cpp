#include "kiln/data/dataloader.h"

#include <array>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "kiln/autograd.h"
#include "kiln/generator.h"
#include "kiln/ops/creation.h"
#include "src/util/parallel.h"

namespace kiln::data {

// Note [Epoch permutations]
// The order of epoch e is a Fisher-Yates shuffle driven by Philox4x32-10 (kiln/generator.h) with
// key `seed` and counters e * 2^40 + i, so it is a pure function of (seed, e): resuming a run at
// epoch e replays its order without replaying epochs 0..e-1, and the order does not depend on the
// default generator (a model's random initialization does not shift it). Step i draws j uniformly
// from [0, i] by multiplying a 64-bit random number by i + 1 and keeping the high word (Lemire);
// the bias is below 2^-32 for any dataset that fits in memory. The orders are not PyTorch's
// (torch.randperm uses another generator), only equally uniform.
std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  KILN_CHECK(epoch >= 0, ValueError, "DataLoader::epoch_order: epoch must be >= 0, got {}", epoch);
  std::vector<int64_t> order(dataset_->size());
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!options_.shuffle) return order;
  const uint64_t base = static_cast<uint64_t>(epoch) << 40;
  for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
    const std::array<uint32_t, 4> bits = philox4x32_10(options_.seed, base + i);
    const uint64_t random = (uint64_t{bits[0]} << 32) | bits[1];
    const auto j = static_cast<int64_t>(
        (static_cast<unsigned __int128>(random) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  return order;
}

// Note [DataLoader prefetch thread]
// With prefetch > 0 an Epoch owns one worker thread that prepares batches in order into a queue
// of at most `prefetch` batches and waits while it is full; the caller takes them from the front.
// An exception thrown while preparing batch b is queued in b's place and rethrown by the caller's
// ++ (so the caller sees it at the same point as without the thread), ending the epoch. stop()
// (a new begin(), or the DataLoader's destructor) wakes and joins the worker wherever it is, so
// breaking out of a loop early never leaves a thread behind.
// The worker runs its ops on its own thread: splitting them would take the cores of the training
// step the prefetching is meant to overlap with (gathering a batch is a memory copy, fast on one
// core anyway), and a parallel region started from a second thread would start a second libgomp
// pool. It also runs under NoGradGuard: loading data is not differentiable.
class DataLoader::Epoch {
 public:
  Epoch(std::shared_ptr<const Dataset> dataset, const std::vector<int64_t>& order,
        const DataLoaderOptions& options)
      : dataset_(std::move(dataset)),
        order_(from_vector(order)),
        batch_size_(options.batch_size),
        num_batches_(batch_count(static_cast<int64_t>(order.size()), options)),
        capacity_(options.prefetch) {
    if (capacity_ > 0) worker_ = std::thread([this] { run_worker(); });
  }
  ~Epoch() { stop(); }
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  static int64_t batch_count(int64_t size, const DataLoaderOptions& options) {
    return options.drop_last ? size / options.batch_size
                             : (size + options.batch_size - 1) / options.batch_size;
  }

  bool finished() const { return finished_; }

  Batch& current() {
    KILN_CHECK(!finished_, ValueError,
               "DataLoader: dereferenced an iterator past the last batch of the epoch");
    return current_;
  }

  // Makes the next batch current, or finishes the epoch after the last one.
  void advance() {
    KILN_CHECK(!stopped_, ValueError,
               "DataLoader: this iterator's epoch has ended (begin() started a new epoch, or the "
               "DataLoader was destroyed); iterate with a fresh begin()");
    KILN_CHECK(!finished_, ValueError,
               "DataLoader: advanced an iterator past the last batch of the epoch");
    current_ = Batch();
    if (consumed_ == num_batches_) {
      finished_ = true;
      return;
    }
    if (capacity_ == 0) {
      const int64_t index = consumed_++;
      try {
        NoGradGuard no_grad;
        current_ = make_batch(index);
      } catch (...) {
        finished_ = true;
        throw;
      }
      return;
    }
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return !queue_.empty(); });
      slot = std::move(queue_.front());
      queue_.pop_front();
    }
    space_.notify_one();
    ++consumed_;
    if (slot.error) {
      finished_ = true;
      std::rethrow_exception(slot.error);
    }
    current_ = std::move(slot.batch);
  }

  // Ends the epoch: wakes and joins the worker. Idempotent.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_requested_ = true;
    }
    space_.notify_all();
    if (worker_.joinable()) worker_.join();
    stopped_ = true;
  }

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };

  Batch make_batch(int64_t index) const {
    const int64_t start = index * batch_size_;
    const int64_t length = std::min<int64_t>(batch_size_, order_.size(0) - start);
    return dataset_->get_batch(order_.narrow(0, start, length));
  }

  void run_worker() {
    parallel::run_serially_on_this_thread();  // see Note [DataLoader prefetch thread]
    NoGradGuard no_grad;
    for (int64_t index = 0; index < num_batches_; ++index) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        space_.wait(lock, [&] { return stop_requested_ || int64_t(queue_.size()) < capacity_; });
        if (stop_requested_) return;
      }
      Slot slot;
      try {
        slot.batch = make_batch(index);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = static_cast<bool>(slot.error);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(slot));
      }
      ready_.notify_one();
      if (failed) return;
    }
  }

  const std::shared_ptr<const Dataset> dataset_;
  const Tensor order_;  // int64 [N]: the epoch's example indices in visiting order
  const int64_t batch_size_;
  const int64_t num_batches_;
  const int64_t capacity_;  // prefetched batches at most; 0 = no worker

  // Caller-side state (only the caller's thread touches it).
  Batch current_;
  int64_t consumed_ = 0;
  bool finished_ = false;
  bool stopped_ = false;

  // Shared with the worker, under mutex_.
  std::mutex mutex_;
  std::condition_variable ready_;  // the queue got a batch
  std::condition_variable space_;  // the queue has room, or stop was requested
  std::deque<Slot> queue_;
  bool stop_requested_ = false;
  std::thread worker_;
};

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  KILN_CHECK(dataset_ != nullptr, ValueError, "DataLoader: the dataset is null");
  KILN_CHECK(options_.batch_size >= 1, ValueError, "DataLoader: batch_size must be >= 1, got {}",
             options_.batch_size);
  KILN_CHECK(options_.prefetch >= 0, ValueError,
             "DataLoader: prefetch must be >= 0 (0 = no background thread), got {}",
             options_.prefetch);
}

DataLoader::~DataLoader() {
  if (current_) current_->stop();
}

DataLoader::Iterator DataLoader::begin() {
  if (current_) current_->stop();
  current_ = std::make_shared<Epoch>(dataset_, epoch_order(next_epoch_), options_);
  ++next_epoch_;
  current_->advance();
  return Iterator(current_);
}

int64_t DataLoader::size() const { return Epoch::batch_count(dataset_->size(), options_); }

void DataLoader::set_epoch(int64_t epoch) {
  KILN_CHECK(epoch >= 0, ValueError, "DataLoader::set_epoch: epoch must be >= 0, got {}", epoch);
  next_epoch_ = epoch;
}

Batch& DataLoader::Iterator::operator*() const {
  KILN_CHECK(epoch_ != nullptr, ValueError, "DataLoader: dereferenced an empty iterator");
  return epoch_->current();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  KILN_CHECK(epoch_ != nullptr, ValueError, "DataLoader: advanced an empty iterator");
  epoch_->advance();
  return *this;
}

bool DataLoader::Iterator::operator==(Sentinel) const {
  return epoch_ == nullptr || epoch_->finished();
}

}  // namespace kiln::data
