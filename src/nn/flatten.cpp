#include "kiln/nn/flatten.h"

#include <fmt/ranges.h>

namespace kiln::nn {

Flatten::Flatten(int64_t start_dim, int64_t end_dim)
    : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}

Tensor Flatten::forward(const Tensor& input) { return input.flatten(start_dim, end_dim); }

std::string Flatten::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", start_dim, end_dim);
}

Unflatten::Unflatten(int64_t dim, std::vector<int64_t> sizes)
    : Module("Unflatten"), dim(dim), sizes(std::move(sizes)) {}

Tensor Unflatten::forward(const Tensor& input) { return input.unflatten(dim, sizes); }

std::string Unflatten::extra_repr() const {
  return fmt::format("dim={}, unflattened_size=({})", dim, fmt::join(sizes, ", "));
}

}  // namespace kiln::nn
