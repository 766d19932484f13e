// torch::data::datasets: LibTorch's dataset bases, the dataset a transform maps, and the datasets
// over tensors (See Note [torch::data] in kiln/torch/data.h).
//
//   struct Pairs : torch::data::datasets::Dataset<Pairs> {        // CRTP, as in LibTorch
//     torch::data::Example<> get(size_t i) override;
//     torch::optional<size_t> size() const override;
//   };
//   auto batches = Pairs().map(AddNoise()).map(torch::data::transforms::Stack<>());
//
// A dataset is a value: map() moves (or, on an lvalue, copies) it into the MapDataset it returns,
// and the data loader copies it once per worker thread, so a dataset's state is per worker, as in
// LibTorch.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/ops/shape.h"
#include "kiln/torch/data_example.h"
#include "kiln/torch/types.h"

namespace torch::data::datasets {

template <typename Source, typename AppliedTransform>
class MapDataset;
template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform);

namespace detail {
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
}  // namespace detail

// A dataset that makes whole batches from a request (a list of indices, by default). A dataset
// whose Batch is an optional is stateful: it says by nullopt that it has run out (LibTorch's
// ChunkDataset); Kiln's data loader takes only stateless ones.
template <typename Self, typename Batch = std::vector<Example<>>,
          typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  static constexpr bool is_stateful = detail::is_optional<BatchType>::value;

  virtual ~BatchDataset() = default;

  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples; nullopt when unknown (a stream).
  virtual optional<size_t> size() const = 0;

  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

// A dataset of single examples: the user writes get(index), and a batch is the examples of its
// indices, in order.
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (const size_t index : indices) batch.push_back(get(index));
    return batch;
  }
};

// A dataset asked for a number of examples rather than for indices (StreamSampler's requests).
template <typename Self, typename Batch = std::vector<Example<>>>
using StreamDataset = BatchDataset<Self, Batch, size_t>;

namespace detail {
template <bool Stateful, typename T>
using optional_if_t = std::conditional_t<Stateful, optional<T>, T>;
}  // namespace detail

// A dataset with a transform applied to each of its batches (Transform applies itself to each
// example of a batch; a BatchTransform such as Stack to the batch as a whole).
template <typename Source, typename AppliedTransform>
class MapDataset
    : public BatchDataset<
          MapDataset<Source, AppliedTransform>,
          detail::optional_if_t<Source::is_stateful, typename AppliedTransform::OutputBatchType>,
          typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType =
      detail::optional_if_t<Source::is_stateful, typename AppliedTransform::OutputBatchType>;

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType request) override {
    if constexpr (Source::is_stateful) {
      auto batch = dataset_.get_batch(std::move(request));
      if (!batch) return nullopt;
      return transform_.apply_batch(std::move(*batch));
    } else {
      return transform_.apply_batch(dataset_.get_batch(std::move(request)));
    }
  }

  optional<size_t> size() const noexcept override { return dataset_.size(); }

  // Resets a stateful source.
  void reset() { dataset_.reset(); }

  const Source& dataset() noexcept { return dataset_; }
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  using SourceBatch =
      std::conditional_t<DatasetType::is_stateful, typename DatasetType::BatchType::value_type,
                         typename DatasetType::BatchType>;
  static_assert(std::is_same_v<SourceBatch, typename TransformType::InputBatchType>,
                "BatchType type of dataset does not match input type of transform");
  return {std::move(dataset), std::move(transform)};
}

// The rows of one tensor, each an example without a target.
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  // Stacks the tensors into one (they must have the same shape).
  explicit TensorDataset(const std::vector<Tensor>& tensors)
      : TensorDataset(kiln::stack(tensors)) {}
  explicit TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {}

  TensorExample get(size_t index) override { return tensor[static_cast<int64_t>(index)]; }
  optional<size_t> size() const override { return static_cast<size_t>(tensor.size(0)); }

  Tensor tensor;
};

// A dataset held by a shared_ptr, so that the copies the data loader makes (one per worker)
// all use the same one; the dataset must then be safe to call from several threads.
template <typename UnderlyingDataset>
class SharedBatchDataset : public BatchDataset<SharedBatchDataset<UnderlyingDataset>,
                                               typename UnderlyingDataset::BatchType,
                                               typename UnderlyingDataset::BatchRequestType> {
 public:
  using BatchType = typename UnderlyingDataset::BatchType;
  using BatchRequestType = typename UnderlyingDataset::BatchRequestType;

  SharedBatchDataset(std::shared_ptr<UnderlyingDataset> dataset) : dataset_(std::move(dataset)) {}

  BatchType get_batch(BatchRequestType request) override {
    return dataset_->get_batch(std::move(request));
  }
  optional<size_t> size() const override { return dataset_->size(); }

  UnderlyingDataset& operator*() { return *dataset_; }
  const UnderlyingDataset& operator*() const { return *dataset_; }
  UnderlyingDataset* operator->() { return dataset_.get(); }
  const UnderlyingDataset* operator->() const { return dataset_.get(); }

  void reset() { dataset_->reset(); }

 private:
  std::shared_ptr<UnderlyingDataset> dataset_;
};

template <typename UnderlyingDataset, typename... Args>
SharedBatchDataset<UnderlyingDataset> make_shared_dataset(Args&&... args) {
  return std::make_shared<UnderlyingDataset>(std::forward<Args>(args)...);
}

}  // namespace torch::data::datasets
