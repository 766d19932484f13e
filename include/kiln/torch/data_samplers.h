// torch::data::samplers: what decides which examples each batch of the data loader holds (See
// Note [torch::data] in kiln/torch/data.h). The loader calls reset() at the start of each epoch
// and next(batch_size) for each batch until it returns nullopt; both run on the thread that
// iterates, never on a worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/torch/types.h"

namespace torch::serialize {
class OutputArchive;
class InputArchive;
}  // namespace torch::serialize

namespace torch::data::samplers {

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;

  virtual ~Sampler() = default;

  // Starts a new epoch, over `new_size` examples when given.
  virtual void reset(optional<size_t> new_size) = 0;
  // The next batch of at most `batch_size` examples; nullopt at the end of the epoch.
  virtual optional<BatchRequest> next(size_t batch_size) = 0;

  // LibTorch saves a sampler's position into a checkpoint; Kiln's samplers do not (a user's
  // sampler may still override these). NotImplementedError.
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);
};

namespace detail {
[[noreturn]] void sampler_serialization_unsupported(const char* what);
}  // namespace detail

template <typename BatchRequest>
void Sampler<BatchRequest>::save(serialize::OutputArchive&) const {
  detail::sampler_serialization_unsupported("save");
}
template <typename BatchRequest>
void Sampler<BatchRequest>::load(serialize::InputArchive&) {
  detail::sampler_serialization_unsupported("load");
}

// 0, 1, ..., size - 1, in order, every epoch.
class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}

  void reset(optional<size_t> new_size = nullopt) override;
  optional<std::vector<size_t>> next(size_t batch_size) override;
  // How many indices this epoch has given so far.
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

// A random permutation of 0, ..., size - 1, drawn afresh at each reset (and at construction, as
// LibTorch) from Kiln's default generator, so torch::manual_seed fixes the orders.
class RandomSampler : public Sampler<> {
 public:
  // The indices are handed out as size_t whatever the dtype; it must be an integer type.
  explicit RandomSampler(int64_t size, ScalarType index_dtype = kInt64);

  void reset(optional<size_t> new_size = nullopt) override;
  optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

// The base of the samplers that give each of num_replicas processes its own share of the
// examples. With allow_duplicates, every replica gets ceil(size / num_replicas) examples (the
// last ones wrap around to the first); without, floor(size / num_replicas).
template <typename BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                     bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {
    TORCH_CHECK(num_replicas_ >= 1 && rank_ < num_replicas_,
                "DistributedSampler: rank must be in [0, num_replicas), got rank ", rank_,
                " of num_replicas ", num_replicas_);
  }

  // The epoch seeds DistributedRandomSampler's shuffle: call before each reset, with the same
  // value on every replica.
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }

 protected:
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }

  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  size_t epoch_ = 0;
  bool allow_duplicates_;
};

namespace detail {
// What the distributed samplers share: this replica's slice of an index list.
class DistributedShard : public DistributedSampler<> {
 public:
  using DistributedSampler<>::DistributedSampler;

  optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return sample_index_ - begin_index_; }

 protected:
  // Rebuilds the indices over size_ (padded to num_replicas_ equal shares) and this replica's
  // slice of them, and rewinds to its start.
  void populate_indices();

  std::vector<size_t> all_indices_;
  size_t begin_index_ = 0;
  size_t end_index_ = 0;
  size_t sample_index_ = 0;
};
}  // namespace detail

// Every replica shuffles all indices with a generator seeded by the epoch alone, so that the
// replicas agree on the permutation, and takes its own contiguous slice of it.
class DistributedRandomSampler : public detail::DistributedShard {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                           bool allow_duplicates = true);

  void reset(optional<size_t> new_size = nullopt) override;
};

// Replica r takes the r-th contiguous slice of 0, ..., size - 1, in order.
class DistributedSequentialSampler : public detail::DistributedShard {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                               bool allow_duplicates = true);

  void reset(optional<size_t> new_size = nullopt) override;
};

// The request of a StreamDataset: a number of examples.
struct CustomBatchRequest {
  virtual ~CustomBatchRequest() = default;
  virtual size_t size() const = 0;
};

struct BatchSize : public CustomBatchRequest {
  explicit BatchSize(size_t size) : size_(size) {}
  size_t size() const noexcept override { return size_; }
  operator size_t() const noexcept { return size_; }
  size_t size_;
};

// Asks a StreamDataset for batch_size examples at a time until epoch_size have been asked for.
class StreamSampler : public Sampler<BatchSize> {
 public:
  explicit StreamSampler(size_t epoch_size) : epoch_size_(epoch_size) {}

  void reset(optional<size_t> new_size = nullopt) override;
  optional<BatchSize> next(size_t batch_size) override;

 private:
  size_t examples_retrieved_so_far_ = 0;
  size_t epoch_size_;
};

}  // namespace torch::data::samplers
