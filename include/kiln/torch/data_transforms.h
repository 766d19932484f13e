// torch::data::transforms: what MapDataset applies to a dataset's batches (See Note [torch::data]
// in kiln/torch/data.h). Two kinds, as in LibTorch:
//  - a BatchTransform takes the whole batch: Stack collates a vector of examples into one example
//    of stacked tensors (put it last in a chain of map()s);
//  - a Transform takes one example at a time (Normalize, TensorTransform, Lambda); its
//    apply_batch applies it to each example of the batch, inside the dataset's get_batch, so on
//    the data loader's worker threads.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "kiln/ops/shape.h"
#include "kiln/torch/data_example.h"
#include "kiln/torch/types.h"

namespace torch::data::transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;

  virtual ~BatchTransform() = default;

  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;

  virtual OutputType apply(InputType input) = 0;

  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output_batch;
    output_batch.reserve(input_batch.size());
    for (auto& input : input_batch) output_batch.push_back(apply(std::move(input)));
    return output_batch;
  }
};

// A BatchTransform from a function of the batch.
template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using typename BatchTransform<Input, Output>::InputBatchType;
  using typename BatchTransform<Input, Output>::OutputBatchType;
  using FunctionType = std::function<OutputBatchType(InputBatchType)>;

  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}

  OutputBatchType apply_batch(InputBatchType input_batch) override {
    return function_(std::move(input_batch));
  }

 private:
  FunctionType function_;
};

// A Transform from a function of one example.
template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using typename Transform<Input, Output>::InputType;
  using typename Transform<Input, Output>::OutputType;
  using FunctionType = std::function<Output(Input)>;

  explicit Lambda(FunctionType function) : function_(std::move(function)) {}

  OutputType apply(InputType input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// Collations: batch transforms from a vector of examples to one.
template <typename T, typename BatchType = std::vector<T>>
using Collation = BatchTransform<BatchType, T>;
template <typename T, typename BatchType = std::vector<T>>
using Collate = BatchLambda<BatchType, T>;

// Stacks the examples' data (and targets) along a new first dimension: B examples of data
// [1, 28, 28] and 0-dim targets give data [B, 1, 28, 28] and targets [B].
template <typename T = Example<>>
struct Stack;

template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& example : examples) {
      data.push_back(std::move(example.data));
      targets.push_back(std::move(example.target));
    }
    return {kiln::stack(data), kiln::stack(targets)};
  }
};

template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& example : examples) data.push_back(std::move(example.data));
    return kiln::stack(data);
  }
};

// A transform of an example's data tensor; the target passes through. Subclasses define
// operator().
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  using typename Transform<E, E>::InputType;
  using typename Transform<E, E>::OutputType;

  virtual Tensor operator()(Tensor input) = 0;

  OutputType apply(InputType input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

// A TensorTransform from a function of the data tensor.
template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;

  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}

  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

namespace detail {
// The values as a float32 tensor [C, 1, 1], so that it broadcasts per channel over [C, H, W].
Tensor channel_tensor(ArrayRef<double> values);
}  // namespace detail

// (data - mean) / stddev, per channel: one value each for all channels (Normalize<>(0.5, 0.5)),
// or one per channel of a [C, H, W] image (Normalize<>({0.485, 0.456, 0.406}, {0.229, ...})).
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(detail::channel_tensor(mean)), stddev(detail::channel_tensor(stddev)) {}

  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

  Tensor mean, stddev;
};

}  // namespace torch::data::transforms
