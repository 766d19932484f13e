// Reference machinery for the reduction family's OpInfos: sample inputs with dims/keepdim and
// grouping of a tensor's values by output element, all with plain loops (no Kiln reduction).
#pragma once

#include <cmath>

#include "src/core/cast.h"
#include "tests/ops/harness.h"

namespace kiln::testing::reduce_ref {

struct ReduceSample {
  Tensor x;
  std::vector<int64_t> dims;
  bool keepdim;
  std::string description;
};

inline std::vector<int64_t> shape_of(const Tensor& t) {
  return {t.sizes().begin(), t.sizes().end()};
}

inline int64_t wrap(int64_t d, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  return d < 0 ? d + n : d;
}

inline uint64_t mask_of(const Tensor& x, IntArrayRef dims) {
  if (dims.empty()) return ~uint64_t{0};
  uint64_t m = 0;
  for (int64_t d : dims) m |= uint64_t{1} << wrap(d, x.dim());
  return m;
}

inline std::vector<int64_t> out_shape(const Tensor& x, uint64_t mask, bool keepdim) {
  std::vector<int64_t> s;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!((mask >> d) & 1))
      s.push_back(x.size(d));
    else if (keepdim)
      s.push_back(1);
  }
  return s;
}

// groups[o] = the values reduced into output element o (row-major over the kept dims), in
// row-major order of the reduced dims.
template <typename T>
std::vector<std::vector<T>> group(const Tensor& x, uint64_t mask) {
  std::vector<T> v = x.to_vector<T>();
  int64_t nout = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!((mask >> d) & 1)) nout *= x.size(d);
  std::vector<std::vector<T>> g(static_cast<size_t>(nout));
  std::vector<int64_t> idx(static_cast<size_t>(x.dim()), 0);
  for (size_t flat = 0; flat < v.size(); ++flat) {
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!((mask >> d) & 1)) o = o * x.size(d) + idx[d];
    g[o].push_back(v[flat]);
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      if (++idx[d] < x.size(d)) break;
      idx[d] = 0;
    }
  }
  return g;
}

// Shapes, layouts and dim lists covering every kernel path: full, inner (last dims), outer
// (leading dims), middle, interleaved (copied), non-contiguous, expanded, zero-size, and large
// enough for the parallel paths. `empty_reductions` adds reductions over zero elements.
inline std::vector<ReduceSample> reduce_samples(ScalarType dt, std::mt19937_64& rng, double low,
                                                double high, bool empty_reductions,
                                                bool single_dim) {
  const bool full = is_unsigned(dt);
  auto mk = [&](std::vector<int64_t> shape, Layout layout = Layout::Contiguous) {
    return make_tensor(shape, dt, rng, low, high, layout, full);
  };
  std::vector<ReduceSample> s;
  Tensor big = mk({300, 200});
  Tensor x2 = mk({33, 65});
  Tensor x3 = mk({4, 5, 6});
  s.push_back({mk({}), {0}, false, "0-dim dim 0"});
  s.push_back({mk({7}), {-1}, true, "[7] dim -1 keepdim"});
  s.push_back({x2, {1}, false, "[33, 65] inner dim 1"});
  s.push_back({x2, {0}, false, "[33, 65] outer dim 0"});
  s.push_back({x2, {-1}, true, "[33, 65] dim -1 keepdim"});
  s.push_back({x3, {1}, false, "[4, 5, 6] middle dim 1"});
  s.push_back({mk({5, 6}, Layout::NonContiguous), {1}, false, "non-contiguous [5, 6] dim 1"});
  s.push_back(
      {mk({5, 6}, Layout::NonContiguous), {0}, true, "non-contiguous [5, 6] dim 0 keepdim"});
  s.push_back({mk({4, 3}, Layout::Expanded), {0}, false, "expanded [4, 3] dim 0"});
  s.push_back({mk({6, 4}).t(), {-1}, false, "transposed [4, 6] dim -1"});
  s.push_back({big, {0}, false, "large [300, 200] dim 0 (parallel)"});
  s.push_back({big, {1}, false, "large [300, 200] dim 1 (parallel)"});
  if (!single_dim) {
    s.push_back({mk({}), {}, false, "0-dim all dims"});
    s.push_back({mk({7}), {}, false, "[7] all dims"});
    s.push_back({x2, {}, false, "[33, 65] all dims"});
    s.push_back({x2, {}, true, "[33, 65] all dims keepdim"});
    s.push_back({x3, {0, 2}, false, "[4, 5, 6] interleaved dims 0, 2"});
    s.push_back({x3, {-2, -1}, true, "[4, 5, 6] dims -2, -1 keepdim"});
    s.push_back({x3, {0, 1}, false, "[4, 5, 6] leading dims 0, 1"});
    s.push_back({big, {}, false, "large [300, 200] all dims (split row)"});
    s.push_back({mk({1, 40000}), {}, false, "[1, 40000] all dims (split row)"});
  }
  s.push_back({mk({0, 3}), {1}, false, "zero-size [0, 3] dim 1 (empty output)"});
  if (empty_reductions) {
    s.push_back({mk({0, 3}), {0}, false, "zero-size [0, 3] dim 0: reduces zero elements"});
    s.push_back({mk({2, 0}), {1}, true, "[2, 0] dim 1 keepdim: reduces zero elements"});
    if (!single_dim) s.push_back({mk({0}), {}, false, "[0] all dims"});
  }
  return s;
}

// Gradient-check samples of ops that pick elements (amax, max.dim, sort, topk, std of a
// constant line): the expanded samples repeat rows, and the tie samples repeat values, so the op
// is not differentiable there (finite differences see half of each tie).
inline std::vector<SampleInput> without_ties(std::vector<SampleInput> samples) {
  std::vector<SampleInput> out;
  for (SampleInput& s : samples) {
    if (s.description.find("expanded") != std::string::npos ||
        s.description.find("ties: first") != std::string::npos)
      continue;
    out.push_back(std::move(s));
  }
  return out;
}

// float32 sums and products round differently from a float64 reference; integer inputs with a
// floating result (mean(dtype=), softmax(dtype=)) get float32's tolerance (integer outputs are
// always compared exactly).
inline std::pair<double, double> tolerance(ScalarType dt) {
  if (dt == kFloat32 || !is_floating(dt)) return {1e-4, 1e-5};
  return default_tolerance(dt);
}

}  // namespace kiln::testing::reduce_ref
