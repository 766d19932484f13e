// torch::data's data loader: make_data_loader(dataset, options) over a stateless dataset and a
// sampler, iterated an epoch at a time (See Note [torch::data] in kiln/torch/data.h):
//
//   auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
//       std::move(dataset), torch::data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { ... }      // each begin() starts a new epoch
//
// Note [torch::data workers]
// With workers(n > 0) the loader starts n threads when it is made, each with its own copy of the
// dataset (so a dataset must be copyable, and its state is per worker, as in LibTorch). The
// iterating thread asks the sampler for batch requests and queues up to max_jobs of them ahead;
// a worker takes one, makes the batch with its dataset's get_batch (which runs the per-example
// transforms and then the batch transform such as Stack), and hands it back tagged with its
// sequence number. The iterating thread delivers the batches in sequence order (enforce_ordering,
// the default), each time topping the queue up by one request, so at most max_jobs batches exist
// ahead of the consumer. An exception thrown by get_batch is caught on the worker and rethrown on
// the iterating thread, as a WorkerException holding the original, at the point where that batch
// would have been delivered; the epoch can go on after it, without that batch.
// begin() may be called at any point, also while an epoch is only half consumed (a loop left with
// break): it throws away the queued requests and the batches already made, and tags the new
// epoch's requests with a new epoch number so that a batch a worker is still making for the old
// epoch is dropped when it comes back. It never waits for a worker, so it cannot deadlock.
// (LibTorch refuses such a begin() instead: "Attempted to get a new DataLoader iterator while
// another iterator is not yet exhausted".) An iterator of an abandoned epoch raises when used.
// The workers stop and are joined by join() or the loader's destructor, after finishing the
// batch they are making, if any. How each worker thread runs (serial kernels, no autograd) is
// Note [torch::data worker threads] in src/torch/data_loader.cpp; with workers(0) the batches
// are made on the iterating thread, under NoGradGuard too, so a batch is the same either way.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/torch/data_iterator.h"
#include "kiln/torch/data_loader_options.h"
#include "kiln/torch/data_samplers.h"
#include "kiln/torch/types.h"

namespace torch::data {

// What the iterating thread raises for an exception a worker caught while making a batch. It is
// a kiln::Error (c10::Error), so handlers of either catch it; `original_exception` is the one
// the dataset threw.
struct WorkerException : public kiln::Error {
  explicit WorkerException(std::exception_ptr original);

  std::exception_ptr original_exception;
  std::string message;
};

namespace detail {
// Starts a thread that runs `body` as a data loader worker (Note [torch::data worker threads]).
std::thread start_worker_thread(std::function<void()> body);
// The error for a worker's batch that took longer than `timeout`.
[[noreturn]] void throw_worker_timeout(std::chrono::milliseconds timeout);
}  // namespace detail

// The part of the loader that does not depend on the sampler: epochs, the worker threads and the
// queues between them (Note [torch::data workers]).
template <typename Dataset, typename Batch, typename BatchRequest>
class DataLoaderBase {
 public:
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;

  DataLoaderBase(DataLoaderOptions options, std::unique_ptr<Dataset> main_thread_dataset = nullptr)
      : options_(std::move(options)), main_thread_dataset_(std::move(main_thread_dataset)) {
    TORCH_CHECK(options_.batch_size >= 1, "DataLoader: batch_size must be at least 1");
    TORCH_CHECK(options_.workers == 0 || options_.max_jobs >= 1,
                "DataLoader: max_jobs must be at least 1 with workers, got ", options_.max_jobs);
  }
  DataLoaderBase(const DataLoaderBase&) = delete;
  DataLoaderBase& operator=(const DataLoaderBase&) = delete;
  virtual ~DataLoaderBase() { join(); }

  // Starts a new epoch, abandoning the one in progress if any.
  Iterator<Batch> begin() {
    TORCH_CHECK(!joined_ || options_.workers == 0,
                "DataLoader: join() has stopped the workers; this loader has no more epochs");
    reset();
    return Iterator<Batch>([this, epoch = epoch_] { return next(epoch); });
  }
  Iterator<Batch> end() { return Iterator<Batch>(); }

  // Stops the workers, waiting for the batches they are making. Idempotent.
  void join() {
    if (joined_) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    job_ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    joined_ = true;
  }

  const FullDataLoaderOptions& options() const noexcept { return options_; }

 protected:
  // The next request of the epoch, or nullopt at its end. Called on the iterating thread only.
  virtual optional<BatchRequest> get_batch_request() = 0;

  // Starts an epoch: drops what the last one left queued and queues max_jobs requests.
  virtual void reset() {
    std::deque<Job> stale_jobs;
    std::map<size_t, Result> stale_results;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++epoch_;
      stale_jobs.swap(jobs_);
      stale_results.swap(results_);
    }
    next_sequence_ = 0;
    next_result_ = 0;
    in_flight_ = 0;
    if (options_.workers > 0) prefetch(options_.max_jobs);
  }

  // Starts one worker thread with its own copy of the dataset.
  void start_worker(const Dataset& dataset) {
    workers_.push_back(
        detail::start_worker_thread([this, copy = dataset]() mutable { this->run_worker(copy); }));
  }

  const FullDataLoaderOptions options_;
  std::unique_ptr<Dataset> main_thread_dataset_;  // with workers(0)

 private:
  struct Job {
    size_t epoch;
    size_t sequence;
    BatchRequest request;
  };
  struct Result {
    optional<Batch> batch;
    std::exception_ptr error;
  };

  optional<Batch> next(size_t epoch) {
    TORCH_CHECK(epoch == epoch_,
                "DataLoader: this iterator's epoch has ended (begin() started a new one); "
                "iterate from a fresh begin()");
    if (options_.workers == 0) {
      optional<BatchRequest> request = get_batch_request();
      if (!request) return nullopt;
      kiln::NoGradGuard no_grad;  // see Note [torch::data workers]
      return main_thread_dataset_->get_batch(*request);
    }
    if (in_flight_ == 0) return nullopt;
    Result result;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto ready = [&] {
        return options_.enforce_ordering ? results_.contains(next_result_) : !results_.empty();
      };
      if (!options_.timeout) {
        result_ready_.wait(lock, ready);
      } else if (!result_ready_.wait_for(lock, *options_.timeout, ready)) {
        detail::throw_worker_timeout(*options_.timeout);
      }
      const auto it = options_.enforce_ordering ? results_.find(next_result_) : results_.begin();
      result = std::move(it->second);
      results_.erase(it);
    }
    ++next_result_;
    --in_flight_;
    prefetch(1);
    if (result.error) throw WorkerException(result.error);
    return std::move(result.batch);
  }

  void prefetch(size_t requests) {
    for (size_t i = 0; i < requests; ++i) {
      optional<BatchRequest> request = get_batch_request();
      if (!request) return;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        jobs_.push_back(Job{epoch_, next_sequence_++, std::move(*request)});
      }
      ++in_flight_;
      job_ready_.notify_one();
    }
  }

  void run_worker(Dataset& dataset) {
    while (true) {
      std::unique_lock<std::mutex> lock(mutex_);
      job_ready_.wait(lock, [&] { return quit_ || !jobs_.empty(); });
      if (quit_) return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      Result result;
      try {
        result.batch.emplace(dataset.get_batch(job.request));
      } catch (...) {
        result.error = std::current_exception();
      }
      lock.lock();
      // A batch of an epoch begin() abandoned is dropped (after the unlock, with `result`).
      const bool current = job.epoch == epoch_;
      if (current) results_.emplace(job.sequence, std::move(result));
      lock.unlock();
      if (current) result_ready_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  bool joined_ = false;

  // The iterating thread's.
  size_t next_sequence_ = 0;  // of the next request queued
  size_t next_result_ = 0;    // of the next batch delivered, with enforce_ordering
  size_t in_flight_ = 0;      // requests of this epoch queued and not yet delivered

  // Shared with the workers, under mutex_ (epoch_ is written only by the iterating thread).
  std::mutex mutex_;
  std::condition_variable job_ready_;     // a job was queued, or quit_ set
  std::condition_variable result_ready_;  // a batch came back
  std::deque<Job> jobs_;
  std::map<size_t, Result> results_;  // by sequence number
  size_t epoch_ = 0;
  bool quit_ = false;
};

// The loader of a stateless dataset (one that gives each batch its request asks for): the
// sampler makes the requests.
template <typename Dataset, typename Sampler>
class StatelessDataLoader : public DataLoaderBase<Dataset, typename Dataset::BatchType,
                                                  typename Sampler::BatchRequestType> {
 public:
  using super =
      DataLoaderBase<Dataset, typename Dataset::BatchType, typename Sampler::BatchRequestType>;
  using typename super::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : super(std::move(options)), sampler_(std::move(sampler)) {
    if (this->options_.workers == 0) {
      this->main_thread_dataset_ = std::make_unique<Dataset>(std::move(dataset));
      return;
    }
    for (size_t i = 0; i < this->options_.workers; ++i) this->start_worker(dataset);
  }

 private:
  void reset() override {
    sampler_.reset(nullopt);
    super::reset();
  }

  optional<BatchRequestType> get_batch_request() override {
    optional<BatchRequestType> request = sampler_.next(this->options_.batch_size);
    if (!request || (this->options_.drop_last && request->size() < this->options_.batch_size)) {
      return nullopt;
    }
    TORCH_CHECK(request->size() > 0, "DataLoader: the sampler gave an empty batch request");
    return request;
  }

  Sampler sampler_;
};

template <typename Dataset, typename Sampler>
requires(!Dataset::is_stateful)
    std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
        Dataset dataset, Sampler sampler, DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(
      std::move(dataset), std::move(sampler), std::move(options));
}

// The sampler is made over the dataset's size, which must be known.
template <typename Sampler = samplers::RandomSampler, typename Dataset>
requires(!Dataset::is_stateful && std::is_constructible_v<Sampler, size_t>)
    std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
        Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  const optional<size_t> size = dataset.size();
  TORCH_CHECK(size.has_value(),
              "Expected the dataset to be sized in order to construct the Sampler");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

// LibTorch's StatefulDataLoader (for ChunkDataset and other datasets that say themselves when
// they run out) is not part of Kiln.
template <typename Dataset>
requires Dataset::is_stateful void make_data_loader(Dataset,
                                                    DataLoaderOptions = DataLoaderOptions()) {
  static_assert(!Dataset::is_stateful,
                "Kiln's torch::data has no StatefulDataLoader: make_data_loader takes stateless "
                "datasets (whose BatchType is not an optional)");
}

}  // namespace torch::data
