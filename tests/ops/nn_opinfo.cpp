// OpInfos for the nn normalizations and embedding (attention and losses: nn_loss_opinfo.cpp).
#include "tests/ops/nn_reference.h"

namespace kiln::testing {
namespace {

using namespace nn_ref;
using Ints = std::vector<int64_t>;

// Mean and rstd = 1 / sqrt(biased variance + eps) of the n values of x starting at `begin`.
struct Stats {
  double mean, rstd;
};
Stats stats(const std::vector<double>& x, int64_t begin, int64_t n, double eps) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[static_cast<size_t>(begin + i)];
  const double m = s / static_cast<double>(n);
  double v = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[static_cast<size_t>(begin + i)] - m;
    v += d * d;
  }
  return {m, 1.0 / std::sqrt(v / static_cast<double>(n) + eps)};
}

// ---- layer_norm ----

std::vector<Tensor> ref_layer_norm(const Stack& a, bool native) {
  const Tensor x = a[0].tensor();
  const Ints ns = a[1].int_list().vec();
  const Tensor w = opt(a[2]), b = opt(a[3]);
  const double eps = a[4].to_double();
  const int64_t N = prod(ns), M = N == 0 ? 0 : x.numel() / N;
  const std::vector<double> xv = vals(x);
  const std::vector<double> wv = w.defined() ? vals(w) : std::vector<double>();
  const std::vector<double> bv = b.defined() ? vals(b) : std::vector<double>();
  std::vector<double> out(xv.size()), mean(static_cast<size_t>(M)), rstd(static_cast<size_t>(M));
  for (int64_t r = 0; r < M; ++r) {
    const Stats s = stats(xv, r * N, N, eps);
    mean[static_cast<size_t>(r)] = s.mean;
    rstd[static_cast<size_t>(r)] = s.rstd;
    for (int64_t i = 0; i < N; ++i) {
      const size_t k = static_cast<size_t>(r * N + i);
      out[k] = (xv[k] - s.mean) * s.rstd * (wv.empty() ? 1.0 : wv[static_cast<size_t>(i)]) +
               (bv.empty() ? 0.0 : bv[static_cast<size_t>(i)]);
    }
  }
  Ints stat = shape_of(x);
  for (size_t d = stat.size() - ns.size(); d < stat.size(); ++d) stat[d] = 1;
  std::vector<Tensor> r{result(out, shape_of(x), x.dtype())};
  if (native) {
    r.push_back(result(mean, stat, x.dtype()));
    r.push_back(result(rstd, stat, x.dtype()));
  }
  return r;
}

std::vector<SampleInput> layer_norm_samples(ScalarType dt, std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) { return make_tensor(s, dt, rng, -5, 5, l); };
  std::vector<SampleInput> s;
  s.push_back({{t({33, 65}), Ints{65}, t({65}), t({65}), 1e-5}, "[33, 65] over [65], affine"});
  s.push_back({{t({2, 3, 4}), Ints{3, 4}, IValue(), IValue(), 1e-5}, "[2, 3, 4] over [3, 4]"});
  s.push_back({{t({5, 6}, Layout::NonContiguous), Ints{6}, t({6}), IValue(), 1e-3},
               "non-contiguous [5, 6], weight only, eps 1e-3"});
  s.push_back(
      {{t({4, 3}, Layout::Expanded), Ints{3}, IValue(), t({3}), 1e-5}, "expanded, bias only"});
  s.push_back({{t({0, 4}), Ints{4}, IValue(), IValue(), 1e-5}, "zero-size [0, 4]"});
  s.push_back({{t({7}), Ints{7}, IValue(), IValue(), 1e-5}, "1-D [7]"});
  s.push_back(
      {{t({3, 5}), Ints{5}, make_tensor({5}, kFloat32, rng), make_tensor({5}, kFloat64, rng), 1e-5},
       "float32 weight, float64 bias"});
  s.push_back({{t({64, 1024}), Ints{1024}, t({1024}), t({1024}), 1e-5},
               "large [64, 1024] (parallel path)"});
  return s;
}

// float64 samples small enough for finite differences (every floating input is differentiated).
std::vector<SampleInput> layer_norm_grad_samples(std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) {
    return make_tensor(s, kFloat64, rng, -2, 2, l);
  };
  std::vector<SampleInput> s;
  s.push_back({{t({3, 5}), Ints{5}, t({5}), t({5}), 1e-5}, "[3, 5] over [5], affine"});
  s.push_back({{t({2, 3, 4}), Ints{3, 4}, IValue(), IValue(), 1e-5}, "[2, 3, 4] over [3, 4]"});
  s.push_back({{t({4, 6}, Layout::NonContiguous), Ints{6}, t({6}), IValue(), 1e-3},
               "non-contiguous [4, 6], weight only"});
  s.push_back(
      {{t({4, 3}, Layout::Expanded), Ints{3}, IValue(), t({3}), 1e-5}, "expanded, bias only"});
  s.push_back({{t({7}), Ints{7}, t({7}), t({7}), 1e-5}, "1-D [7], affine"});
  return s;
}

std::vector<ErrorCase> layer_norm_errors() {
  return {
      {{zeros({2, 3}), Ints{4}, IValue(), IValue(), 1e-5},
       ErrorKind::Shape,
       "normalized_shape [4] vs input [2, 3]"},
      {{zeros({3}), Ints{2, 3}, IValue(), IValue(), 1e-5},
       ErrorKind::Shape,
       "normalized_shape longer than the input"},
      {{zeros({2, 3}), Ints{3}, zeros({4}), IValue(), 1e-5}, ErrorKind::Shape, "weight [4]"},
      {{zeros({2, 3}), Ints{3}, IValue(), zeros({2, 3}), 1e-5}, ErrorKind::Shape, "bias [2, 3]"},
      {{zeros({2, 3}), Ints{}, IValue(), IValue(), 1e-5},
       ErrorKind::Value,
       "empty normalized_shape"},
      {{zeros({2, 3}, kInt64), Ints{3}, IValue(), IValue(), 1e-5},
       ErrorKind::DType,
       "int64 input"}};
}

// ---- batch_norm ----

// args in native order: input, weight, bias, running_mean, running_var, training, momentum, eps
std::vector<Tensor> ref_batch_norm_native(const Tensor& x, const Tensor& w, const Tensor& b,
                                          const Tensor& rm, const Tensor& rv, bool training,
                                          double eps) {
  const int64_t N = x.size(0), C = x.size(1),
                S = C == 0 ? 0 : x.numel() / std::max<int64_t>(N * C, 1);
  const std::vector<double> xv = vals(x);
  std::vector<double> mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    if (training) {
      double s = 0, q = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) s += xv[static_cast<size_t>((n * C + c) * S + i)];
      const double m = s / static_cast<double>(N * S);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) {
          const double d = xv[static_cast<size_t>((n * C + c) * S + i)] - m;
          q += d * d;
        }
      mean[static_cast<size_t>(c)] = m;
      invstd[static_cast<size_t>(c)] = 1.0 / std::sqrt(q / static_cast<double>(N * S) + eps);
    } else {
      mean[static_cast<size_t>(c)] = vals(rm)[static_cast<size_t>(c)];
      invstd[static_cast<size_t>(c)] = 1.0 / std::sqrt(vals(rv)[static_cast<size_t>(c)] + eps);
    }
  }
  const std::vector<double> wv =
      w.defined() ? vals(w) : std::vector<double>(static_cast<size_t>(C), 1.0);
  const std::vector<double> bv =
      b.defined() ? vals(b) : std::vector<double>(static_cast<size_t>(C), 0.0);
  std::vector<double> out(xv.size());
  for (size_t k = 0; k < xv.size(); ++k) {
    const size_t c = static_cast<size_t>((static_cast<int64_t>(k) / std::max<int64_t>(S, 1)) % C);
    out[k] = (xv[k] - mean[c]) * invstd[c] * wv[c] + bv[c];
  }
  const ScalarType dt = x.dtype();
  if (!training) return {result(out, shape_of(x), dt), result({}, {0}, dt), result({}, {0}, dt)};
  return {result(out, shape_of(x), dt), result(mean, {C}, dt), result(invstd, {C}, dt)};
}

// Samples in native order; batch_norm reorders them.
std::vector<SampleInput> batch_norm_samples(ScalarType dt, std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) { return make_tensor(s, dt, rng, -5, 5, l); };
  auto var = [&](int64_t c) { return make_tensor({c}, kFloat32, rng, 0.5, 2); };
  auto mean = [&](int64_t c) { return make_tensor({c}, kFloat32, rng); };
  std::vector<SampleInput> s;
  s.push_back(
      {{t({8, 3}), t({3}), t({3}), mean(3), var(3), true, 0.1, 1e-5}, "(N, C) training, affine"});
  s.push_back({{t({4, 3, 5}), IValue(), IValue(), mean(3), var(3), true, 0.3, 1e-5},
               "(N, C, L) training, running stats only"});
  s.push_back(
      {{t({2, 3, 4, 5}), t({3}), t({3}), mean(3), var(3), false, 0.1, 1e-5}, "(N, C, H, W) eval"});
  s.push_back(
      {{t({6, 4}, Layout::NonContiguous), IValue(), IValue(), IValue(), IValue(), true, 0.1, 1e-3},
       "non-contiguous training without running stats"});
  s.push_back(
      {{t({0, 3}), IValue(), IValue(), mean(3), var(3), false, 0.1, 1e-5}, "zero-size eval"});
  s.push_back({{t({16, 8, 300}), t({8}), t({8}), mean(8), var(8), true, 0.1, 1e-5},
               "large training (parallel path)"});
  return s;
}

// float64 samples in native order. Training: the running statistics are updated but the output
// does not depend on them (zero gradient); eval: the output is affine in them.
std::vector<SampleInput> batch_norm_grad_samples(std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) {
    return make_tensor(s, kFloat64, rng, -2, 2, l);
  };
  auto var = [&](int64_t c) { return make_tensor({c}, kFloat64, rng, 0.5, 2); };
  std::vector<SampleInput> s;
  s.push_back({{t({6, 3}), t({3}), t({3}), t({3}), var(3), true, 0.1, 1e-5},
               "(N, C) training, affine, running stats"});
  s.push_back({{t({4, 2, 3}), IValue(), IValue(), IValue(), IValue(), true, 0.1, 1e-5},
               "(N, C, L) training, no parameters"});
  s.push_back({{t({3, 2, 2, 2}, Layout::NonContiguous), t({2}), IValue(), IValue(), IValue(), true,
                0.1, 1e-3},
               "non-contiguous (N, C, H, W) training, weight only"});
  s.push_back(
      {{t({2, 3, 2, 2}), t({3}), t({3}), t({3}), var(3), false, 0.1, 1e-5}, "(N, C, H, W) eval"});
  s.push_back(
      {{t({5, 3}), IValue(), t({3}), t({3}), var(3), false, 0.1, 1e-5}, "(N, C) eval, bias only"});
  return s;
}

std::vector<ErrorCase> batch_norm_errors_native() {
  return {{{zeros({4}), IValue(), IValue(), IValue(), IValue(), true, 0.1, 1e-5},
           ErrorKind::Shape,
           "1-D input"},
          {{zeros({4, 3}), zeros({2}), IValue(), IValue(), IValue(), true, 0.1, 1e-5},
           ErrorKind::Shape,
           "weight of 2 for 3 channels"},
          {{zeros({4, 3}), IValue(), IValue(), zeros({4}), ones({3}), true, 0.1, 1e-5},
           ErrorKind::Shape,
           "running_mean of 4 for 3 channels"},
          {{zeros({4, 3}), IValue(), IValue(), IValue(), IValue(), false, 0.1, 1e-5},
           ErrorKind::Value,
           "eval without running stats"},
          {{zeros({1, 3}), IValue(), IValue(), IValue(), IValue(), true, 0.1, 1e-5},
           ErrorKind::Value,
           "one value per channel in training"}};
}

// native order -> batch_norm order (input, rm, rv, weight, bias, training, momentum, eps)
Stack to_functional_order(const Stack& a) {
  return {a[0], a[3], a[4], a[1], a[2], a[5], a[6], a[7]};
}

// ---- group_norm ----

std::vector<Tensor> ref_group_norm(const Tensor& x, const Tensor& w, const Tensor& b, int64_t G,
                                   double eps, bool native) {
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t S = N * C == 0 ? 0 : x.numel() / (N * C), block = C / G * S;
  const std::vector<double> xv = vals(x);
  const std::vector<double> wv =
      w.defined() ? vals(w) : std::vector<double>(static_cast<size_t>(C), 1.0);
  const std::vector<double> bv =
      b.defined() ? vals(b) : std::vector<double>(static_cast<size_t>(C), 0.0);
  std::vector<double> out(xv.size()), mean(static_cast<size_t>(N * G)),
      rstd(static_cast<size_t>(N * G));
  for (int64_t ng = 0; ng < N * G; ++ng) {
    const Stats s = stats(xv, ng * block, block, eps);
    mean[static_cast<size_t>(ng)] = s.mean;
    rstd[static_cast<size_t>(ng)] = s.rstd;
    for (int64_t i = 0; i < block; ++i) {
      const size_t k = static_cast<size_t>(ng * block + i);
      const size_t c = static_cast<size_t>((ng % G) * (C / G) + i / S);
      out[k] = (xv[k] - s.mean) * s.rstd * wv[c] + bv[c];
    }
  }
  std::vector<Tensor> r{result(out, shape_of(x), x.dtype())};
  if (native) {
    r.push_back(result(mean, {N, G}, x.dtype()));
    r.push_back(result(rstd, {N, G}, x.dtype()));
  }
  return r;
}

// Samples in native order: input, weight, bias, num_groups, eps.
std::vector<SampleInput> group_norm_samples(ScalarType dt, std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) { return make_tensor(s, dt, rng, -5, 5, l); };
  std::vector<SampleInput> s;
  s.push_back({{t({2, 6, 5}), t({6}), t({6}), int64_t{3}, 1e-5}, "[2, 6, 5] 3 groups, affine"});
  s.push_back({{t({3, 4}), IValue(), IValue(), int64_t{2}, 1e-5}, "(N, C) 2 groups"});
  s.push_back({{t({2, 4, 3, 3}), t({4}), IValue(), int64_t{4}, 1e-5}, "[2, 4, 3, 3] 4 groups"});
  s.push_back({{t({2, 6, 4}, Layout::NonContiguous), IValue(), t({6}), int64_t{1}, 1e-3},
               "non-contiguous, 1 group"});
  s.push_back({{t({0, 4, 2}), IValue(), IValue(), int64_t{2}, 1e-5}, "zero-size batch"});
  s.push_back({{t({4, 32, 512}), t({32}), t({32}), int64_t{8}, 1e-5}, "large (parallel path)"});
  return s;
}

std::vector<ErrorCase> group_norm_errors_native() {
  return {{{zeros({2, 6, 3}), IValue(), IValue(), int64_t{4}, 1e-5},
           ErrorKind::Shape,
           "6 channels in 4 groups"},
          {{zeros({2, 6, 3}), zeros({3}), IValue(), int64_t{3}, 1e-5},
           ErrorKind::Shape,
           "weight of 3 for 6 channels"},
          {{zeros({2, 6, 3}), IValue(), IValue(), int64_t{0}, 1e-5}, ErrorKind::Value, "0 groups"},
          {{zeros({6}), IValue(), IValue(), int64_t{3}, 1e-5}, ErrorKind::Shape, "1-D input"}};
}

// native order -> group_norm order (input, num_groups, weight, bias, eps)
Stack to_group_norm_order(const Stack& a) { return {a[0], a[3], a[1], a[2], a[4]}; }

// ---- embedding ----

std::vector<SampleInput> embedding_samples(ScalarType dt, std::mt19937_64& rng) {
  auto idx = [&](Ints s, ScalarType it) { return random_ints(s, 0, 9, it, rng); };
  const Tensor table = make_tensor({10, 4}, dt, rng);
  std::vector<SampleInput> s;
  s.push_back({{table, idx({3, 5}, kInt64), IValue()}, "int64 indices [3, 5]"});
  s.push_back({{table, idx({7}, kInt32), int64_t{0}}, "int32 indices, padding_idx 0"});
  s.push_back({{table, idx({2, 2}, kUInt8), int64_t{-1}}, "uint8 indices, padding_idx -1"});
  s.push_back({{table, idx({4}, kUInt64), IValue()}, "uint64 indices"});
  s.push_back({{table, idx({}, kInt16), IValue()}, "0-dim index"});
  s.push_back({{table, idx({0}, kInt64), IValue()}, "no indices"});
  s.push_back(
      {{make_tensor({10, 3}, dt, rng, -5, 5, Layout::NonContiguous), idx({6}, kInt64), IValue()},
       "non-contiguous table"});
  s.push_back({{make_tensor({10, 4}, dt, rng).t().contiguous().t(), idx({6}, kInt64), IValue()},
               "column-major table"});
  s.push_back(
      {{make_tensor({10, 64}, dt, rng), idx({1024}, kInt64), IValue()}, "large (parallel path)"});
  return s;
}

// float64 tables. The padding row gets no gradient (as in PyTorch), though the forward copies it,
// so the samples with a padding_idx never pick that row; tests/autograd/nn_grad_test.cpp checks
// that a picked padding row gets zeros.
std::vector<SampleInput> embedding_grad_samples(std::mt19937_64& rng) {
  const Tensor table = make_tensor({6, 3}, kFloat64, rng);
  std::vector<SampleInput> s;
  s.push_back({{table, from_vector(std::vector<int64_t>{1, 4, 1, 0, 5, 4}, Ints{2, 3}), IValue()},
               "[2, 3] indices with repeats"});
  s.push_back(
      {{table, random_ints({5}, 1, 5, kInt32, rng), int64_t{0}}, "padding_idx 0, not picked"});
  s.push_back(
      {{table, random_ints({4}, 0, 4, kUInt8, rng), int64_t{-1}}, "padding_idx -1, not picked"});
  s.push_back({{table, random_ints({}, 0, 5, kInt64, rng), IValue()}, "0-dim index"});
  s.push_back({{make_tensor({6, 3}, kFloat64, rng, -5, 5, Layout::NonContiguous),
                random_ints({4}, 0, 5, kInt64, rng), IValue()},
               "non-contiguous table"});
  return s;
}

std::vector<Tensor> ref_embedding(const Stack& a) {
  const Tensor w = a[0].tensor(), i = a[1].tensor();
  const std::vector<int64_t> iv = i.to_vector<int64_t>();
  const int64_t D = w.size(1);
  Ints shape = shape_of(i);
  shape.push_back(D);
  return visit_dtype(w.dtype(), [&]<typename T>() {
    const std::vector<T> wv = w.to_vector<T>();
    std::vector<T> out;
    for (int64_t r : iv)
      for (int64_t d = 0; d < D; ++d) out.push_back(wv[static_cast<size_t>(r * D + d)]);
    return std::vector<Tensor>{from_vector(out, shape)};
  });
}

std::vector<ErrorCase> embedding_errors() {
  return {{{zeros({10, 4}), tensor({0, 10}), IValue()}, ErrorKind::Index, "index == rows"},
          {{zeros({10, 4}), tensor({-1}), IValue()}, ErrorKind::Index, "negative index"},
          {{zeros({10, 4}), tensor({1.0}), IValue()}, ErrorKind::DType, "float indices"},
          {{zeros({10}), tensor({1}), IValue()}, ErrorKind::Shape, "1-D table"},
          {{zeros({10, 4}), tensor({1}), int64_t{10}}, ErrorKind::Index, "padding_idx 10"}};
}

const bool registered = [] {
  register_op_info({.name = "native_layer_norm",
                    .samples = layer_norm_samples,
                    .reference = [](const Stack& a) { return ref_layer_norm(a, true); },
                    .error_cases = layer_norm_errors,
                    .grad_samples = layer_norm_grad_samples});
  register_op_info({.name = "layer_norm",
                    .samples = layer_norm_samples,
                    .reference = [](const Stack& a) { return ref_layer_norm(a, false); },
                    .error_cases = layer_norm_errors,
                    .grad_samples = layer_norm_grad_samples});
  register_op_info({.name = "native_batch_norm",
                    .samples = batch_norm_samples,
                    .reference =
                        [](const Stack& a) {
                          return ref_batch_norm_native(a[0].tensor(), opt(a[1]), opt(a[2]),
                                                       opt(a[3]), opt(a[4]), a[5].to_bool(),
                                                       a[7].to_double());
                        },
                    .error_cases = batch_norm_errors_native,
                    .grad_samples = batch_norm_grad_samples});
  register_op_info({.name = "batch_norm",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          std::vector<SampleInput> s = batch_norm_samples(dt, rng);
                          for (SampleInput& x : s) x.args = to_functional_order(x.args);
                          return s;
                        },
                    .reference =
                        [](const Stack& a) {
                          return std::vector<Tensor>{ref_batch_norm_native(
                              a[0].tensor(), opt(a[3]), opt(a[4]), opt(a[1]), opt(a[2]),
                              a[5].to_bool(), a[7].to_double())[0]};
                        },
                    .error_cases =
                        [] {
                          std::vector<ErrorCase> e = batch_norm_errors_native();
                          for (ErrorCase& c : e) c.args = to_functional_order(c.args);
                          return e;
                        },
                    .grad_samples =
                        [](std::mt19937_64& rng) {
                          std::vector<SampleInput> s = batch_norm_grad_samples(rng);
                          for (SampleInput& x : s) x.args = to_functional_order(x.args);
                          return s;
                        }});
  register_op_info({.name = "native_group_norm",
                    .samples = group_norm_samples,
                    .reference =
                        [](const Stack& a) {
                          return ref_group_norm(a[0].tensor(), opt(a[1]), opt(a[2]), a[3].to_int(),
                                                a[4].to_double(), true);
                        },
                    .error_cases = group_norm_errors_native});
  register_op_info({.name = "group_norm",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          std::vector<SampleInput> s = group_norm_samples(dt, rng);
                          for (SampleInput& x : s) x.args = to_group_norm_order(x.args);
                          return s;
                        },
                    .reference =
                        [](const Stack& a) {
                          return ref_group_norm(a[0].tensor(), opt(a[2]), opt(a[3]), a[1].to_int(),
                                                a[4].to_double(), false);
                        },
                    .error_cases =
                        [] {
                          std::vector<ErrorCase> e = group_norm_errors_native();
                          for (ErrorCase& c : e) c.args = to_group_norm_order(c.args);
                          return e;
                        }});
  register_op_info({.name = "embedding",
                    .samples = embedding_samples,
                    .reference = ref_embedding,
                    .error_cases = embedding_errors,
                    .grad_samples = embedding_grad_samples});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
