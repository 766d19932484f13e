// DataLoader: iterates a Dataset in batches, optionally shuffled, while a background thread
// prepares the next batches, as torch.utils.data.DataLoader with one worker:
//
//   auto train = std::make_shared<kiln::data::FashionMNIST>();
//   kiln::data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 0});
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (auto& batch : loader) step(batch.data, batch.target);  // a new order every epoch
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  // Visit the examples in a new random order every epoch. The order of epoch e is a pure
  // function of (seed, e): the same seed replays the same orders, on any machine.
  bool shuffle = false;
  uint64_t seed = 0;
  // Leave out the last batch when it would be smaller than batch_size.
  bool drop_last = false;
  // How many batches the background thread prepares ahead of the caller. 0 prepares each batch in
  // the caller's thread when it is needed (no thread at all).
  int64_t prefetch = 2;
};

class DataLoader {
  class Epoch;  // one pass over the data: the order, the queue, the worker thread

 public:
  // ValueError for a null dataset, batch_size < 1 or prefetch < 0.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  // Stops the background thread, also when the caller stopped iterating early.
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  class Sentinel {};
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    // Moves to the next batch; rethrows, in the caller's thread, an exception the dataset threw
    // while preparing it.
    Iterator& operator++();
    bool operator==(Sentinel) const;

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {}
    std::shared_ptr<Epoch> epoch_;
  };

  // Starts the next epoch (see set_epoch) and returns its first batch. Ends an iteration still in
  // progress: one DataLoader runs one epoch at a time, and an iterator of an ended epoch throws
  // ValueError when advanced.
  Iterator begin();
  Sentinel end() const { return {}; }

  // Batches per epoch.
  int64_t size() const;
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  // Epochs are numbered from 0; each begin() runs the next one. set_epoch(e) makes the next
  // begin() run epoch e (to resume a training run from a checkpoint at the same order).
  int64_t next_epoch() const { return next_epoch_; }
  void set_epoch(int64_t epoch);
  // The order in which epoch `epoch` visits the examples: 0..size-1, or with shuffle a
  // permutation drawn from (seed, epoch) (see Note [Epoch permutations] in
  // src/data/dataloader.cpp).
  std::vector<int64_t> epoch_order(int64_t epoch) const;

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t next_epoch_ = 0;
  std::shared_ptr<Epoch> current_;
};

}  // namespace kiln::data
