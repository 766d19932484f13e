// OpInfo for instance_norm: each (sample, channel) plane normalized over its spatial values with
// its own mean and biased variance, or with the running statistics when use_input_stats is false.
// The reference is a float64 loop over the planes; the running-statistic updates are checked
// against PyTorch's numbers in tests/nn/instance_norm_test.cpp.
#include "tests/ops/nn_reference.h"

namespace kiln::testing {
namespace {

using namespace nn_ref;
using Ints = std::vector<int64_t>;

// args: input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
std::vector<Tensor> reference(const Stack& a) {
  const Tensor x = a[0].tensor(), rm = opt(a[1]), rv = opt(a[2]), w = opt(a[3]), b = opt(a[4]);
  const bool use_input_stats = a[5].to_bool();
  const double eps = a[7].to_double();
  const int64_t N = x.size(0), C = x.size(1), S = N * C == 0 ? 0 : x.numel() / (N * C);
  const std::vector<double> xv = vals(x);
  std::vector<double> out(xv.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const auto begin = static_cast<size_t>((n * C + c) * S);
      double mean = 0, var = 0;
      if (use_input_stats) {
        for (int64_t i = 0; i < S; ++i) mean += xv[begin + static_cast<size_t>(i)];
        mean /= static_cast<double>(S);
        for (int64_t i = 0; i < S; ++i) {
          const double d = xv[begin + static_cast<size_t>(i)] - mean;
          var += d * d;
        }
        var /= static_cast<double>(S);
      } else {
        mean = vals(rm)[static_cast<size_t>(c)];
        var = vals(rv)[static_cast<size_t>(c)];
      }
      const double scale = w.defined() ? vals(w)[static_cast<size_t>(c)] : 1.0;
      const double shift = b.defined() ? vals(b)[static_cast<size_t>(c)] : 0.0;
      for (int64_t i = 0; i < S; ++i) {
        const size_t k = begin + static_cast<size_t>(i);
        out[k] = (xv[k] - mean) / std::sqrt(var + eps) * scale + shift;
      }
    }
  return {result(out, shape_of(x), x.dtype())};
}

std::vector<SampleInput> samples(ScalarType dt, std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) { return make_tensor(s, dt, rng, -5, 5, l); };
  auto mean = [&](int64_t c) { return make_tensor({c}, kFloat32, rng); };
  auto var = [&](int64_t c) { return make_tensor({c}, kFloat32, rng, 0.5, 2); };
  const IValue none;
  std::vector<SampleInput> s;
  s.push_back({{t({2, 3, 5}), none, none, t({3}), t({3}), true, 0.1, 1e-5},
               "(N, C, L), affine, no running stats"});
  s.push_back({{t({2, 3, 4, 3}), mean(3), var(3), none, none, true, 0.1, 1e-5},
               "(N, C, H, W) with running stats (updated)"});
  s.push_back({{t({2, 3, 2, 2, 2}), mean(3), var(3), t({3}), none, false, 0.1, 1e-5},
               "(N, C, D, H, W), running stats normalize, weight only"});
  s.push_back({{t({3, 2, 6}, Layout::NonContiguous), none, none, none, t({2}), true, 0.3, 1e-3},
               "non-contiguous, bias only"});
  s.push_back({{t({1, 3, 4}), mean(3), var(3), t({3}), t({3}), true, 0.2, 1e-5},
               "batch of 1 with running stats"});
  s.push_back({{t({0, 3, 4}), mean(3), var(3), none, none, true, 0.1, 1e-5},
               "empty batch (running stats kept)"});
  s.push_back({{t({2, 0, 4}), none, none, none, none, true, 0.1, 1e-5}, "zero channels"});
  s.push_back({{t({4, 3}), mean(3), var(3), none, none, false, 0.1, 1e-5},
               "(N, C) with the running stats"});
  return s;
}

std::vector<SampleInput> grad_samples(std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) {
    return make_tensor(s, kFloat64, rng, -2, 2, l);
  };
  auto var = [&](int64_t c) { return make_tensor({c}, kFloat64, rng, 0.5, 2); };
  const IValue none;
  std::vector<SampleInput> s;
  s.push_back({{t({2, 3, 4}), none, none, t({3}), t({3}), true, 0.1, 1e-5}, "affine"});
  s.push_back({{t({2, 2, 3}), t({2}), var(2), t({2}), none, true, 0.1, 1e-5},
               "running stats updated (no effect on the output)"});
  s.push_back({{t({2, 2, 2, 2}), t({2}), var(2), t({2}), t({2}), false, 0.1, 1e-5},
               "running stats normalize"});
  s.push_back({{t({2, 3, 4}, Layout::NonContiguous), none, none, none, none, true, 0.1, 1e-3},
               "non-contiguous"});
  return s;
}

std::vector<ErrorCase> errors() {
  const IValue none;
  return {{{zeros({6}), none, none, none, none, true, 0.1, 1e-5}, ErrorKind::Shape, "1-D input"},
          {{zeros({2, 3, 4}), none, none, zeros({2}), none, true, 0.1, 1e-5},
           ErrorKind::Shape,
           "weight of 2 for 3 channels"},
          {{zeros({2, 3, 4}), zeros({4}), ones({4}), none, none, true, 0.1, 1e-5},
           ErrorKind::Shape,
           "running_mean of 4 for 3 channels"},
          {{zeros({2, 3, 4}), none, none, none, none, false, 0.1, 1e-5},
           ErrorKind::Value,
           "use_input_stats=false without running stats"},
          {{zeros({2, 3, 1}), none, none, none, none, true, 0.1, 1e-5},
           ErrorKind::Value,
           "one spatial value"},
          {{zeros({2, 3, 4}, kInt64), none, none, none, none, true, 0.1, 1e-5},
           ErrorKind::DType,
           "int64 input"}};
}

const bool registered = register_op_info({.name = "instance_norm",
                                          .samples = samples,
                                          .reference = reference,
                                          .error_cases = errors,
                                          .grad_samples = grad_samples});

}  // namespace
}  // namespace kiln::testing
