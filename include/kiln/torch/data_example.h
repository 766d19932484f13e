// torch::data::Example: one example (or one collated batch) as LibTorch's data API passes it
// between datasets, transforms and the data loader (See Note [torch::data] in kiln/torch/data.h).
//
//   torch::data::Example<> e{image, label};     // e.data, e.target
//   torch::data::TensorExample t{image};        // data only; converts to the tensor
#pragma once

#include <utility>

#include "kiln/torch/types.h"

namespace torch::data {

template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

  Data data;
  Target target;
};

namespace example {
// The Target of an example that has none (TensorExample).
using NoTarget = void;
}  // namespace example

// An example with data only. It converts both ways with its data, as LibTorch's does, so a
// dataset's get() can return the tensor itself.
template <typename Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  Example(Data data) : data(std::move(data)) {}

  operator Data&() { return data; }
  operator const Data&() const { return data; }

  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace torch::data
