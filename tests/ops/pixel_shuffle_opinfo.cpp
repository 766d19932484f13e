// OpInfos for pixel_shuffle and pixel_unshuffle. The reference moves each element to its place
// by the definition, out[.., c, h r + i, w r + j] = in[.., c r^2 + i r + j, h, w], in the
// tensor's own C++ type (exact for every dtype).
#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

// (*, C r^2, H, W) <-> (*, C, H r, W r), element by element; `shuffle` picks the direction.
Tensor reference(const Tensor& x, int64_t r, bool shuffle) {
  Shape in(x.sizes().begin(), x.sizes().end());
  const size_t n = in.size();
  const int64_t c = in[n - 3], h = in[n - 2], w = in[n - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 3 < n; ++d) batch *= in[d];
  // The shuffled layout: C channels of (H r) x (W r); the unshuffled one: C r^2 of H x W.
  const int64_t C = shuffle ? c / (r * r) : c, H = shuffle ? h : h / r, W = shuffle ? w : w / r;
  Shape out = in;
  if (shuffle) {
    out[n - 3] = C, out[n - 2] = H * r, out[n - 1] = W * r;
  } else {
    out[n - 3] = C * r * r, out[n - 2] = H, out[n - 1] = W;
  }
  return visit_dtype(x.dtype(), [&]<typename T>() {
    const std::vector<T> v = x.to_vector<T>();
    std::vector<T> o(v.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < r; ++i)
          for (int64_t j = 0; j < r; ++j)
            for (int64_t y = 0; y < H; ++y)
              for (int64_t z = 0; z < W; ++z) {
                // Position in the (*, C r^2, H, W) layout and in the (*, C, H r, W r) one.
                const int64_t deep = ((b * C * r * r + ch * r * r + i * r + j) * H + y) * W + z;
                const int64_t wide = ((b * C + ch) * H * r + y * r + i) * W * r + z * r + j;
                if (shuffle) {
                  o[static_cast<size_t>(wide)] = v[static_cast<size_t>(deep)];
                } else {
                  o[static_cast<size_t>(deep)] = v[static_cast<size_t>(wide)];
                }
              }
    return from_vector(o, out);
  });
}

std::vector<SampleInput> samples(bool shuffle, ScalarType dt, std::mt19937_64& rng) {
  auto t = [&](Shape s, Layout l = Layout::Contiguous) {
    return make_tensor(s, dt, rng, -9, 9, l);
  };
  // Unshuffle samples are the shuffled shapes: (*, C, H r, W r).
  auto shape = [&](Shape deep, int64_t r) {
    if (shuffle) return deep;
    const size_t n = deep.size();
    deep[n - 3] /= r * r;
    deep[n - 2] *= r;
    deep[n - 1] *= r;
    return deep;
  };
  std::vector<SampleInput> s;
  s.push_back({{t(shape({2, 8, 3, 2}, 2)), int64_t{2}}, "(N, C r^2, H, W), r 2"});
  s.push_back({{t(shape({18, 2, 3}, 3)), int64_t{3}}, "unbatched (C r^2, H, W), r 3"});
  s.push_back({{t(shape({2, 2, 4, 2, 2}, 2)), int64_t{2}}, "two batch dims"});
  s.push_back({{t(shape({2, 3, 2, 2}, 1)), int64_t{1}}, "r 1 (a copy)"});
  s.push_back({{t(shape({2, 4, 3, 2}, 2), Layout::NonContiguous), int64_t{2}}, "non-contiguous"});
  s.push_back({{t(shape({0, 4, 3, 2}, 2)), int64_t{2}}, "empty batch"});
  s.push_back({{t(shape({1, 4, 1, 1}, 2)), int64_t{2}}, "1 x 1 pixels"});
  return s;
}

std::vector<SampleInput> grad_samples(bool shuffle, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  for (SampleInput& x : samples(shuffle, kFloat64, rng))
    if (x.args[0].tensor().numel() <= 80) s.push_back(std::move(x));
  return s;
}

std::vector<ErrorCase> errors(bool shuffle) {
  std::vector<ErrorCase> e = {{{zeros({4, 4}), int64_t{2}}, ErrorKind::Shape, "2-D input"},
                              {{zeros({1, 4, 2, 2}), int64_t{0}}, ErrorKind::Value, "factor 0"},
                              {{zeros({1, 4, 2, 2}), int64_t{-2}}, ErrorKind::Value, "factor -2"}};
  if (shuffle) {
    e.push_back({{zeros({1, 6, 2, 2}), int64_t{2}}, ErrorKind::Shape, "6 channels, r^2 = 4"});
  } else {
    e.push_back({{zeros({1, 1, 3, 4}), int64_t{2}}, ErrorKind::Shape, "height 3, r 2"});
    e.push_back({{zeros({1, 1, 4, 5}), int64_t{2}}, ErrorKind::Shape, "width 5, r 2"});
  }
  return e;
}

const bool registered = [] {
  for (bool shuffle : {true, false}) {
    register_op_info(
        {.name = shuffle ? "pixel_shuffle" : "pixel_unshuffle",
         .samples = [=](ScalarType dt, std::mt19937_64& rng) { return samples(shuffle, dt, rng); },
         .reference =
             [=](const Stack& a) {
               return std::vector<Tensor>{reference(a[0].tensor(), a[1].to_int(), shuffle)};
             },
         .error_cases = [=] { return errors(shuffle); },
         .grad_samples = [=](std::mt19937_64& rng) { return grad_samples(shuffle, rng); }});
  }
  return true;
}();

}  // namespace
}  // namespace kiln::testing
