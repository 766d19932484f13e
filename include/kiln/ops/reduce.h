// Reductions, scans, softmax and sorting, as in LibTorch (torch.sum, torch.softmax, ...).
//
// Dims: `dims` lists the dims to reduce (negative counts from the end); an empty list reduces
// every dim. keepdim keeps reduced dims with size 1. dtype (where offered) converts the input to
// that dtype first and accumulates in it.
//
// Result dtypes follow PyTorch: sum/prod/cumsum/cumprod of bool and signed integers give int64;
// of unsigned integers Kiln gives uint64 (PyTorch has no rule; the sum is modular, as uint64
// arithmetic is). mean, var, std, logsumexp, norm, softmax and log_softmax need a floating input
// (or, for mean/softmax/log_softmax, a floating dtype=). max/min/amax/amin/argmax/argmin/sort/topk
// take every dtype; NaN propagates through max/min and counts as the largest value in sort/topk.
// Reductions that have no value on zero elements (max, min, amax, amin, argmax, argmin) raise
// IndexError; sum of nothing is 0, prod 1, mean NaN.
#pragma once

#include <optional>
#include <utility>

#include "kiln/tensor.h"

namespace kiln {

Tensor sum(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false,
           std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// (values, indices) along dim.
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
// First occurrence; without dim, the index into the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// correction = 1 is Bessel's correction (the unbiased estimate); 0 the population variance.
Tensor var(const Tensor& x, IntArrayRef dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, IntArrayRef dims = {}, double correction = 1, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim = false);
// p = 2, 1, inf, -inf, 0 (count of nonzeros) or any other p: (sum |x|^p)^(1/p).
Tensor norm(const Tensor& x, const Scalar& p = 2, IntArrayRef dims = {}, bool keepdim = false);
// bool results for every input dtype.
Tensor all(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor any(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

// Sorting is always stable here (stable=false allows any order, so stable is a valid answer).
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                               bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (smallest when largest=false) along dim, returned in sorted order.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                               bool sorted = true);

}  // namespace kiln
