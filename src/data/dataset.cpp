#include "kiln/data/dataset.h"

#include <vector>

#include "kiln/ops/shape.h"

namespace kiln::data {

namespace {

void check_indices(const Tensor& indices) {
  KILN_CHECK(indices.defined() && indices.dim() == 1 && is_integral(indices.dtype()), ValueError,
             "Dataset::get_batch: indices must be a 1-D integer tensor, got {}",
             indices.defined() ? fmt::format("{}-D {}", indices.dim(), dtype_name(indices.dtype()))
                               : std::string("an undefined tensor"));
}

}  // namespace

Batch Dataset::get_batch(const Tensor& indices) const {
  check_indices(indices);
  std::vector<Tensor> data, targets;
  data.reserve(indices.numel());
  targets.reserve(indices.numel());
  for (int64_t index : indices.to_vector<int64_t>()) {
    Example example = get(index);
    data.push_back(std::move(example.data));
    if (example.target.defined()) targets.push_back(std::move(example.target));
  }
  KILN_CHECK(targets.empty() || targets.size() == data.size(), ValueError,
             "Dataset::get_batch: some examples have a target and some do not");
  Batch batch;
  if (!data.empty()) batch.data = stack(data);
  if (!targets.empty()) batch.target = stack(targets);
  return batch;
}

TensorDataset::TensorDataset(Tensor data, Tensor targets)
    : data_(std::move(data)), targets_(std::move(targets)) {
  KILN_CHECK(data_.defined() && data_.dim() >= 1, ShapeError,
             "TensorDataset: data must be a tensor with a leading example dimension, got {}",
             data_.defined() ? "a 0-dim tensor" : "an undefined tensor");
  KILN_CHECK(!targets_.defined() || (targets_.dim() >= 1 && targets_.size(0) == data_.size(0)),
             ShapeError, "TensorDataset: data has {} examples (size of dim 0) but targets has {}",
             data_.size(0), targets_.dim() >= 1 ? std::to_string(targets_.size(0)) : "no dim 0");
}

int64_t TensorDataset::size() const { return data_.size(0); }

Example TensorDataset::get(int64_t index) const {
  KILN_CHECK(index >= 0 && index < size(), IndexError,
             "TensorDataset::get: index {} is out of range for a dataset of {} examples", index,
             size());
  return {data_.select(0, index), targets_.defined() ? targets_.select(0, index) : Tensor()};
}

Batch TensorDataset::get_batch(const Tensor& indices) const {
  check_indices(indices);
  return {data_.index_select(0, indices),
          targets_.defined() ? targets_.index_select(0, indices) : Tensor()};
}

}  // namespace kiln::data
