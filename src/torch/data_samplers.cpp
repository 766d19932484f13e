// torch::data's samplers (kiln/torch/data_samplers.h).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/generator.h"
#include "kiln/torch/data_samplers.h"

namespace torch::data::samplers {

namespace {

// A uniform random permutation of 0..n-1 from Kiln's default generator, so that
// torch::manual_seed decides it as it decides torch::randperm's. Fisher-Yates over counters the
// generator reserves for this call (one Philox block per swap: Note [Counter-based random
// numbers] in kiln/generator.h); step i draws j in [0, i] as the high word of a 64-bit random
// number times i + 1, whose bias (below 2^-32 for any n that fits in memory) does not matter for
// shuffling examples.
std::vector<size_t> random_permutation(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  if (n < 2) return order;
  const auto [seed, first] = kiln::default_generator().reserve(n);
  for (size_t i = n - 1; i > 0; --i) {
    const std::array<uint32_t, 4> bits = kiln::philox4x32_10(seed, first + i);
    const uint64_t random = (uint64_t{bits[0]} << 32) | bits[1];
    const auto j = static_cast<size_t>((static_cast<unsigned __int128>(random) * (i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  return order;
}

// The next min(batch_size, remaining) of `indices` from `index` on; nullopt when none remain.
optional<std::vector<size_t>> take(const std::vector<size_t>& indices, size_t& index, size_t end,
                                   size_t batch_size) {
  if (index >= end) return nullopt;
  const size_t count = std::min(batch_size, end - index);
  std::vector<size_t> batch(indices.begin() + static_cast<std::ptrdiff_t>(index),
                            indices.begin() + static_cast<std::ptrdiff_t>(index + count));
  index += count;
  return batch;
}

}  // namespace

namespace detail {
void sampler_serialization_unsupported(const char* what) {
  throw kiln::NotImplementedError(
      std::string("torch::data::samplers::Sampler::") + what +
      ": Kiln's samplers are not saved into checkpoints; to resume an epoch, make a new sampler "
      "(and re-seed with torch::manual_seed for the same RandomSampler order)");
}
}  // namespace detail

void SequentialSampler::reset(optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  if (index_ >= size_) return nullopt;
  std::vector<size_t> batch(std::min(batch_size, size_ - index_));
  std::iota(batch.begin(), batch.end(), index_);
  index_ += batch.size();
  return batch;
}

RandomSampler::RandomSampler(int64_t size, ScalarType index_dtype) {
  TORCH_CHECK(size >= 0, "RandomSampler: the size must be >= 0, got ", size);
  TORCH_CHECK(kiln::is_integral(index_dtype),
              "RandomSampler: index_dtype must be an integer type, got ",
              kiln::dtype_name(index_dtype));
  reset(static_cast<size_t>(size));
}

void RandomSampler::reset(optional<size_t> new_size) {
  indices_ = random_permutation(new_size.value_or(indices_.size()));
  index_ = 0;
}

optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  return take(indices_, index_, indices_.size(), batch_size);
}

namespace detail {

optional<std::vector<size_t>> DistributedShard::next(size_t batch_size) {
  return take(all_indices_, sample_index_, end_index_, batch_size);
}

void DistributedShard::populate_indices() {
  const size_t local = local_sample_count();
  // One replica takes everything; otherwise the replicas' equal shares cover local * replicas
  // indices, padded past size_ by starting over from 0 (with allow_duplicates) or cut short.
  const size_t count = num_replicas_ == 1 ? size_ : local * num_replicas_;
  all_indices_.resize(count);
  for (size_t i = 0; i < count; ++i) all_indices_[i] = size_ == 0 ? 0 : i % size_;
  begin_index_ = rank_ * local;
  end_index_ = begin_index_ + local;
  sample_index_ = begin_index_;
}

}  // namespace detail

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedShard(size, num_replicas, rank, allow_duplicates) {
  reset(size_);
}

void DistributedRandomSampler::reset(optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
  // Seeded by the epoch, not by Kiln's generator: every replica must draw the same permutation.
  std::mt19937 engine(static_cast<std::mt19937::result_type>(epoch_));
  std::shuffle(all_indices_.begin(), all_indices_.end(), engine);
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas,
                                                           size_t rank, bool allow_duplicates)
    : DistributedShard(size, num_replicas, rank, allow_duplicates) {
  reset(size_);
}

void DistributedSequentialSampler::reset(optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
}

void StreamSampler::reset(optional<size_t> new_size) {
  if (new_size) epoch_size_ = *new_size;
  examples_retrieved_so_far_ = 0;
}

optional<BatchSize> StreamSampler::next(size_t batch_size) {
  if (examples_retrieved_so_far_ >= epoch_size_) return nullopt;
  const size_t count = std::min(batch_size, epoch_size_ - examples_retrieved_so_far_);
  examples_retrieved_so_far_ += count;
  return BatchSize(count);
}

}  // namespace torch::data::samplers
