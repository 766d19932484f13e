// Random tensors and dropout, as in LibTorch. Each call draws from `gen` or, by default, from the
// default generator (kiln::manual_seed). See Note [Counter-based random numbers] in
// kiln/generator.h: a given seed gives the same values on any thread count.
#pragma once

#include "kiln/generator.h"
#include "kiln/tensor.h"

namespace kiln {

// Uniform on [0, 1); floating dtypes.
Tensor rand(IntArrayRef sizes, TensorOptions options = {});
Tensor rand(IntArrayRef sizes, Generator& gen, TensorOptions options = {});
// Standard normal; floating dtypes.
Tensor randn(IntArrayRef sizes, TensorOptions options = {});
Tensor randn(IntArrayRef sizes, Generator& gen, TensorOptions options = {});
// Uniform integers in [low, high), any numeric dtype (default int64). uint64 bounds above
// INT64_MAX are exact: randint(0, UINT64_MAX, {n}, kUInt64).
Tensor randint(const Scalar& low, const Scalar& high, IntArrayRef sizes,
               TensorOptions options = TensorOptions(kInt64));
Tensor randint(const Scalar& low, const Scalar& high, IntArrayRef sizes, Generator& gen,
               TensorOptions options = TensorOptions(kInt64));
Tensor randint(const Scalar& high, IntArrayRef sizes,
               TensorOptions options = TensorOptions(kInt64));

Tensor rand_like(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor randn_like(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor randint_like(const Tensor& t, const Scalar& low, const Scalar& high,
                    std::optional<ScalarType> dtype = std::nullopt);

// Zeroes each element with probability p and scales the rest by 1/(1-p) when `train`; returns
// `input` itself otherwise. p outside [0, 1] raises ValueError.
Tensor dropout(const Tensor& input, double p, bool train = true);
Tensor dropout(const Tensor& input, double p, bool train, Generator& gen);

}  // namespace kiln
