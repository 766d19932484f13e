// Datasets, as torch.utils.data: a Dataset maps an index to one Example; a DataLoader
// (kiln/data/dataloader.h) groups examples into Batches.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::data {

// One example: its input and its target (a label, a regression value, or undefined when the
// dataset has none).
struct Example {
  Tensor data;
  Tensor target;
};

// Examples stacked along a new leading dimension: data [B, ...], target [B, ...].
struct Batch {
  Tensor data;
  Tensor target;
};

// The interface every dataset implements. get() and get_batch() are const and must be safe to
// call from another thread: the DataLoader prepares batches on a background thread.
class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // The example at `index` in [0, size()); IndexError otherwise.
  virtual Example get(int64_t index) const = 0;
  // The examples at `indices` (a 1-D integer tensor), stacked. The default calls get() once per
  // index and stacks the results (every example must have the same shapes, ShapeError otherwise);
  // datasets that hold whole tensors override it with one index_select per tensor, which is what
  // makes a 60000-image epoch cheap.
  virtual Batch get_batch(const Tensor& indices) const;
};

// A dataset held as whole tensors: example i is (data[i], targets[i]). `targets` may be undefined
// (a dataset without targets); otherwise both tensors must have the same size along dim 0
// (ShapeError). get_batch is one index_select per tensor.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(Tensor data, Tensor targets = Tensor());

  int64_t size() const override;
  Example get(int64_t index) const override;
  Batch get_batch(const Tensor& indices) const override;

  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_;
  Tensor targets_;
};

}  // namespace kiln::data
