// torch::data::Iterator: the iterator of a data loader's epoch, as LibTorch's (See Note
// [torch::data] in kiln/torch/data.h). begin() gives one that fetches its first batch when first
// dereferenced or compared; end() gives the sentinel that every finished epoch equals. Copies
// share their position (an input iterator).
#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>

#include "kiln/torch/types.h"

namespace torch::data {

template <typename Batch>
class Iterator {
 public:
  using difference_type = std::ptrdiff_t;
  using value_type = Batch;
  using pointer = Batch*;
  using reference = Batch&;
  using iterator_category = std::input_iterator_tag;
  // Gives the epoch's next batch, or nullopt after its last.
  using BatchProducer = std::function<optional<Batch>()>;

  // The sentinel.
  Iterator() = default;
  explicit Iterator(BatchProducer next_batch)
      : state_(std::make_shared<State>(std::move(next_batch))) {}

  Iterator& operator++() {
    TORCH_CHECK(state_ != nullptr,
                "Incrementing the DataLoader's past-the-end iterator is not allowed");
    state_->start();
    TORCH_CHECK(state_->batch.has_value(), "Attempted to increment iterator past the end");
    // Assigned only once the producer returns: when it throws, the iterator keeps its batch.
    state_->batch = state_->next_batch();
    return *this;
  }

  Batch& operator*() const {
    TORCH_CHECK(state_ != nullptr,
                "Dereferencing the DataLoader's past-the-end iterator is not allowed");
    state_->start();
    TORCH_CHECK(state_->batch.has_value(),
                "Attempted to dereference iterator that was past the end");
    return *state_->batch;
  }
  Batch* operator->() const { return &**this; }

  // Two iterators of epochs are equal when they are the same one; an epoch's iterator equals the
  // sentinel once it is past its last batch.
  bool operator==(const Iterator& other) const {
    if (state_ == nullptr || other.state_ == nullptr) {
      return (state_ == nullptr || state_->finished()) &&
             (other.state_ == nullptr || other.state_->finished());
    }
    return state_ == other.state_;
  }
  bool operator!=(const Iterator& other) const { return !(*this == other); }

 private:
  struct State {
    explicit State(BatchProducer next) : next_batch(std::move(next)) {}
    void start() {
      if (started) return;
      batch = next_batch();
      started = true;
    }
    bool finished() {
      start();
      return !batch.has_value();
    }

    BatchProducer next_batch;
    optional<Batch> batch;
    bool started = false;
  };
  std::shared_ptr<State> state_;  // null for the sentinel
};

}  // namespace torch::data
