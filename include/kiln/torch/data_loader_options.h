// torch::data::DataLoaderOptions: how a data loader batches and prefetches (See Note [torch::data]
// in kiln/torch/data.h).
//
//   torch::data::DataLoaderOptions().batch_size(64).workers(2)
//   torch::data::make_data_loader(dataset, 64)          // a batch size converts to options
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

#include "kiln/torch/arg.h"
#include "kiln/torch/types.h"

namespace torch::data {

struct DataLoaderOptions {
  DataLoaderOptions() = default;
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}

  // Examples per batch (the last batch of an epoch may have fewer, unless drop_last).
  TORCH_ARG(size_t, batch_size) = 1;
  // Threads that make batches beside the one that iterates; 0 makes them on the iterating thread.
  TORCH_ARG(size_t, workers) = 0;
  // Batches requested ahead of the one being consumed, at most; 2 * workers by default.
  TORCH_ARG(optional<size_t>, max_jobs);
  // How long the iterating thread waits for a worker's batch before raising; forever by default.
  TORCH_ARG(optional<std::chrono::milliseconds>, timeout);
  // With workers, deliver the batches in the sampler's order (else as they are ready).
  TORCH_ARG(bool, enforce_ordering) = true;
  // Skip the last batch of an epoch when it has fewer than batch_size examples.
  TORCH_ARG(bool, drop_last) = false;
};

// The options with their defaults filled in, as the loader uses them.
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(DataLoaderOptions options)
      : batch_size(options.batch_size()),
        workers(options.workers()),
        max_jobs(options.max_jobs().value_or(2 * options.workers())),
        timeout(options.timeout()),
        enforce_ordering(options.enforce_ordering()),
        drop_last(options.drop_last()) {}

  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering;
  bool drop_last;
};

}  // namespace torch::data
