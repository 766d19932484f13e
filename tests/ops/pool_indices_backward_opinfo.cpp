// OpInfo for max_pool_with_indices_backward(grad_output, self, indices, spatial_dims), the input
// gradient of max_pool3d_with_indices and the adaptive max pools. The reference adds each
// grad_output element at its index in float64; the samples' indices are the forwards' own.
#include <algorithm>

#include "tests/ops/linalg_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

std::vector<Tensor> reference(const Stack& a) {
  const Tensor& self = a[1].tensor();
  const int64_t spatial = a[3].to_int();
  const std::vector<double> dy = a[0].tensor().to_vector<double>();
  const std::vector<int64_t> idx = a[2].tensor().to_vector<int64_t>();
  int64_t box = 1, out_box = 1;
  for (int64_t d = self.dim() - spatial; d < self.dim(); ++d) {
    box *= self.size(d);
    out_box *= a[0].tensor().size(d);
  }
  std::vector<double> g(static_cast<size_t>(self.numel()), 0.0);
  for (size_t o = 0; o < dy.size(); ++o)
    g[static_cast<size_t>(static_cast<int64_t>(o) / out_box * box + idx[o])] += dy[o];
  return {from_vector(g, shape_of(self)).to(self.dtype())};
}

// A sample from a forward's (values, indices) for `self`: a random grad_output.
SampleInput backward_sample(const Tensor& self, const Tensor& indices, int64_t spatial,
                            std::mt19937_64& rng, std::string description,
                            Layout layout = Layout::Contiguous) {
  Tensor dy = make_tensor(indices.sizes(), self.dtype(), rng, -2, 2, layout);
  return {{dy, self, indices, spatial}, std::move(description)};
}

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng) { return make_tensor(s, dt, rng, -5, 5); }

std::vector<SampleInput> samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  Tensor x = mk({2, 2, 4, 5, 6}, dt, rng);
  s.push_back(backward_sample(x, max_pool3d_with_indices(x, 2).second, 3, rng, "max_pool3d 2x2x2"));
  x = mk({1, 2, 3, 4, 4}, dt, rng);
  s.push_back(backward_sample(x, max_pool3d_with_indices(x, 3, 1, 1).second, 3, rng,
                              "max_pool3d 3x3x3, stride 1 (overlapping windows accumulate)"));
  x = mk({2, 3, 5, 7}, dt, rng);
  s.push_back(
      backward_sample(x, adaptive_max_pool2d(x, {3, 4}).second, 2, rng, "adaptive_max_pool2d"));
  x = mk({2, 3, 4, 5}, dt, rng);
  s.push_back(backward_sample(x, adaptive_max_pool3d(x, {2, 2, 3}).second, 3, rng,
                              "adaptive_max_pool3d, unbatched, non-contiguous grad_output",
                              Layout::NonContiguous));
  x = mk({2, 3, 7}, dt, rng);
  s.push_back(backward_sample(x, adaptive_max_pool1d(x, 3).second, 1, rng, "1 spatial dim"));
  x = mk({0, 2, 3, 3, 3}, dt, rng);
  s.push_back(backward_sample(x, max_pool3d_with_indices(x, 2).second, 3, rng, "zero batch"));
  x = mk({1, 1, 1, 1}, dt, rng);
  s.push_back(backward_sample(x, adaptive_max_pool2d(x, 1).second, 2, rng, "sizes 1"));
  return s;
}

std::vector<ErrorCase> errors() {
  const Tensor x = zeros({1, 2, 4, 4});
  const Tensor idx = zeros({1, 2, 2, 2}, kInt64), dy = zeros({1, 2, 2, 2});
  return {{{dy, x, idx, int64_t{0}}, ErrorKind::Value, "spatial_dims 0"},
          {{dy, x, idx, int64_t{4}}, ErrorKind::Value, "spatial_dims 4"},
          {{dy.to(kFloat64), x, idx, int64_t{2}}, ErrorKind::DType, "grad_output float64"},
          {{dy, x, idx.to(kInt32), int64_t{2}}, ErrorKind::DType, "int32 indices"},
          {{dy, x, zeros({1, 2, 2, 3}, kInt64), int64_t{2}},
           ErrorKind::Shape,
           "indices of another shape"},
          {{zeros({2, 2, 2, 2}), x, zeros({2, 2, 2, 2}, kInt64), int64_t{2}},
           ErrorKind::Shape,
           "grad_output of another batch"},
          {{zeros({2, 2, 2}), x, zeros({2, 2, 2}, kInt64), int64_t{2}},
           ErrorKind::Shape,
           "grad_output of another rank"},
          {{dy, x, full({1, 2, 2, 2}, 16, kInt64), int64_t{2}},
           ErrorKind::Index,
           "an index past the plane"},
          {{dy, zeros({1, 2, 4, 4, 4, 4}), idx, int64_t{3}}, ErrorKind::Shape, "6-D input"}};
}

// Values 0.25 apart in random order, so the forward's argmax is unambiguous.
Tensor distinct(Shape shape, std::mt19937_64& rng) {
  const int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.25 * static_cast<double>(i - n / 2);
  std::shuffle(v.begin(), v.end(), rng);
  return from_vector(v, shape);
}

std::vector<SampleInput> grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  Tensor x = distinct({1, 1, 3, 4, 4}, rng);
  s.push_back(
      backward_sample(x, max_pool3d_with_indices(x, 3, 1, 1).second, 3, rng, "overlapping"));
  x = distinct({1, 2, 4, 5}, rng);
  s.push_back(backward_sample(x, adaptive_max_pool2d(x, {3, 2}).second, 2, rng, "adaptive 2-d"));
  return s;
}

const bool registered = register_op_info({.name = "max_pool_with_indices_backward",
                                          .samples = samples,
                                          .reference = reference,
                                          .error_cases = errors,
                                          .grad_samples = grad_samples});

}  // namespace
}  // namespace kiln::testing
