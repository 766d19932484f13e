// OpInfos for the nn backward ops (src/ops/nn_backward.cpp): native_layer_norm_backward,
// native_batch_norm_backward, native_group_norm_backward, cross_entropy_backward,
// embedding_dense_backward. References are the textbook formulas in double loops; the gradient
// check differentiates each op again (its double-backward formula), with the statistics as
// independent inputs.
#include "tests/ops/nn_reference.h"

namespace kiln::testing {
namespace {

using namespace nn_ref;
using Ints = std::vector<int64_t>;

Tensor t_of(Ints s, ScalarType dt, std::mt19937_64& rng, Layout l = Layout::Contiguous) {
  return make_tensor(s, dt, rng, -2, 2, l);
}
Tensor positive(Ints s, ScalarType dt, std::mt19937_64& rng) {
  return make_tensor(s, dt, rng, 0.5, 2);
}
IValue mask(int64_t a, int64_t b, int64_t c) { return std::vector<int64_t>{a, b, c}; }

// ---- the normalizations ----

// Where element k of the input belongs: its statistics group and its parameter (feature).
struct NormIndex {
  std::function<int64_t(int64_t)> group, param;
  int64_t groups, params;
};

// The backward of Note [Normalization backward] with mean/rstd taken as given:
// dx = rstd (a - mean(a) - xhat mean(a xhat)) (batch statistics) or rstd a (constants),
// dw = sum(g xhat), db = sum(g), a = g w.
std::vector<std::vector<double>> ref_norm_backward(const std::vector<double>& g,
                                                   const std::vector<double>& x,
                                                   const std::vector<double>& mean,
                                                   const std::vector<double>& rstd,
                                                   const std::vector<double>& w,
                                                   const NormIndex& ix, bool batch_stats) {
  const size_t n = x.size();
  std::vector<double> sum_a(static_cast<size_t>(ix.groups)),
      sum_axh(static_cast<size_t>(ix.groups)), count(static_cast<size_t>(ix.groups));
  std::vector<double> dw(static_cast<size_t>(ix.params)), db(static_cast<size_t>(ix.params)), dx(n);
  auto xhat = [&](size_t k) {
    const auto grp = static_cast<size_t>(ix.group(static_cast<int64_t>(k)));
    return (x[k] - mean[grp]) * rstd[grp];
  };
  auto a = [&](size_t k) {
    return g[k] * (w.empty() ? 1.0 : w[static_cast<size_t>(ix.param(static_cast<int64_t>(k)))]);
  };
  for (size_t k = 0; k < n; ++k) {
    const auto grp = static_cast<size_t>(ix.group(static_cast<int64_t>(k)));
    const auto p = static_cast<size_t>(ix.param(static_cast<int64_t>(k)));
    sum_a[grp] += a(k);
    sum_axh[grp] += a(k) * xhat(k);
    count[grp] += 1;
    dw[p] += g[k] * xhat(k);
    db[p] += g[k];
  }
  for (size_t k = 0; k < n; ++k) {
    const auto grp = static_cast<size_t>(ix.group(static_cast<int64_t>(k)));
    dx[k] = batch_stats
                ? rstd[grp] * (a(k) - sum_a[grp] / count[grp] - xhat(k) * sum_axh[grp] / count[grp])
                : rstd[grp] * a(k);
  }
  return {dx, dw, db};
}

// The outputs as the op returns them: a gradient left out by the mask is an empty [0] tensor.
std::vector<Tensor> norm_outputs(const std::vector<std::vector<double>>& r, IntArrayRef mask,
                                 const Tensor& input, const Ints& param_shape) {
  const ScalarType dt = input.dtype();
  return {mask[0] ? result(r[0], shape_of(input), dt) : result({}, {0}, dt),
          mask[1] ? result(r[1], param_shape, dt) : result({}, {0}, dt),
          mask[2] ? result(r[2], param_shape, dt) : result({}, {0}, dt)};
}

// Mean and 1 / sqrt(biased variance + eps) of consecutive blocks of `block` values of x.
std::pair<std::vector<double>, std::vector<double>> block_stats(const Tensor& x, int64_t block,
                                                                double eps) {
  const std::vector<double> v = vals(x);
  const int64_t blocks = block == 0 ? 0 : x.numel() / block;
  std::vector<double> m(static_cast<size_t>(blocks)), r(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < block; ++i) s += v[static_cast<size_t>(b * block + i)];
    const double mu = s / static_cast<double>(block);
    for (int64_t i = 0; i < block; ++i) {
      const double d = v[static_cast<size_t>(b * block + i)] - mu;
      q += d * d;
    }
    m[static_cast<size_t>(b)] = mu;
    r[static_cast<size_t>(b)] = 1.0 / std::sqrt(q / static_cast<double>(block) + eps);
  }
  return {m, r};
}

// ---- native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, mask)
// ----

std::vector<Tensor> ref_layer_norm_backward(const Stack& a) {
  const Tensor x = a[1].tensor(), w = opt(a[5]);
  const Ints ns = a[2].int_list().vec();
  const int64_t N = prod(ns), M = N == 0 ? 0 : x.numel() / N;
  const NormIndex ix{[N](int64_t k) { return k / N; }, [N](int64_t k) { return k % N; }, M, N};
  return norm_outputs(
      ref_norm_backward(vals(a[0].tensor()), vals(x), vals(a[3].tensor()), vals(a[4].tensor()),
                        w.defined() ? vals(w) : std::vector<double>(), ix, true),
      a[6].int_list(), x, ns);
}

std::vector<SampleInput> layer_norm_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  // The statistics of x itself (what native_layer_norm returned), in the input's dtype.
  auto add = [&](Tensor x, Ints ns, IValue w, IValue m, std::string d, bool true_stats = true) {
    Ints stat = shape_of(x);
    for (size_t i = stat.size() - ns.size(); i < stat.size(); ++i) stat[i] = 1;
    Tensor mean, rstd;
    if (true_stats) {
      auto [mv, rv] = block_stats(x, prod(ns), 1e-5);
      mean = result(mv, stat, dt);
      rstd = result(rv, stat, dt);
    } else {
      mean = t_of(stat, dt, rng);
      rstd = positive(stat, dt, rng);
    }
    s.push_back({{t_of(shape_of(x), dt, rng), x, ns, mean, rstd, w, m}, std::move(d)});
  };
  add(t_of({5, 7}, dt, rng), {7}, t_of({7}, dt, rng), mask(1, 1, 1), "[5, 7], affine");
  add(t_of({2, 3, 4}, dt, rng), {3, 4}, IValue(), mask(1, 1, 1),
      "[2, 3, 4] over [3, 4], no weight");
  add(t_of({4, 6}, dt, rng, Layout::NonContiguous), {6}, t_of({6}, dt, rng), mask(1, 0, 0),
      "non-contiguous, grad_input only");
  add(t_of({3, 5}, dt, rng), {5}, t_of({5}, dt, rng), mask(0, 1, 1), "parameter gradients only");
  add(t_of({4, 5}, dt, rng), {5}, t_of({5}, dt, rng), mask(1, 1, 1), "arbitrary mean and rstd",
      false);
  add(t_of({0, 4}, dt, rng), {4}, t_of({4}, dt, rng), mask(1, 1, 1), "zero-size [0, 4]");
  add(t_of({64, 1024}, dt, rng), {1024}, t_of({1024}, dt, rng), mask(1, 1, 1), "large [64, 1024]");
  return s;
}

std::vector<SampleInput> layer_norm_backward_grad_samples(std::mt19937_64& rng) {
  const ScalarType f = kFloat64;
  return {{{t_of({3, 4}, f, rng), t_of({3, 4}, f, rng), Ints{4}, t_of({3, 1}, f, rng),
            positive({3, 1}, f, rng), t_of({4}, f, rng), mask(1, 1, 1)},
           "[3, 4], affine"},
          {{t_of({2, 2, 3}, f, rng), t_of({2, 2, 3}, f, rng), Ints{2, 3}, t_of({2, 1, 1}, f, rng),
            positive({2, 1, 1}, f, rng), IValue(), mask(1, 0, 1)},
           "[2, 2, 3] over [2, 3], no weight"},
          {{t_of({2, 5}, f, rng), t_of({2, 5}, f, rng), Ints{5}, t_of({2, 1}, f, rng),
            positive({2, 1}, f, rng), t_of({5}, f, rng), mask(0, 1, 0)},
           "grad_weight only"}};
}

std::vector<ErrorCase> layer_norm_backward_errors() {
  auto a = [](Tensor g, Tensor x, Ints ns, Tensor m, Tensor r, IValue w, IValue mk) {
    return Stack{g, x, ns, m, r, w, mk};
  };
  return {
      {a(zeros({2, 4}), zeros({2, 3}), {3}, zeros({2, 1}), ones({2, 1}), IValue(), mask(1, 1, 1)),
       ErrorKind::Shape, "grad_out [2, 4] for input [2, 3]"},
      {a(zeros({2, 3}), zeros({2, 3}), {3}, zeros({3}), ones({2, 1}), IValue(), mask(1, 1, 1)),
       ErrorKind::Shape, "mean of 3 values for 2 rows"},
      {a(zeros({2, 3}), zeros({2, 3}), {2}, zeros({2, 1}), ones({2, 1}), IValue(), mask(1, 1, 1)),
       ErrorKind::Shape, "normalized_shape [2] for input [2, 3]"},
      {a(zeros({2, 3}), zeros({2, 3}), {3}, zeros({2, 1}), ones({2, 1}), zeros({4}), mask(1, 1, 1)),
       ErrorKind::Shape, "weight [4]"},
      {a(zeros({2, 3}), zeros({2, 3}), {3}, zeros({2, 1}), ones({2, 1}), IValue(),
         std::vector<int64_t>{1, 1}),
       ErrorKind::Value, "output_mask of 2 flags"},
      {a(zeros({2, 3}, kFloat64), zeros({2, 3}), {3}, zeros({2, 1}), ones({2, 1}), IValue(),
         mask(1, 1, 1)),
       ErrorKind::DType, "float64 grad_out for a float32 input"}};
}

// ---- native_batch_norm_backward(grad_out, input, weight?, mean, invstd, training, mask) ----

std::vector<Tensor> ref_batch_norm_backward(const Stack& a) {
  const Tensor x = a[1].tensor(), w = opt(a[2]);
  const int64_t N = x.size(0), C = x.size(1), S = N * C == 0 ? 0 : x.numel() / (N * C);
  const int64_t s1 = std::max<int64_t>(S, 1);
  const NormIndex ix{[C, s1](int64_t k) { return (k / s1) % C; },
                     [C, s1](int64_t k) { return (k / s1) % C; }, C, C};
  return norm_outputs(
      ref_norm_backward(vals(a[0].tensor()), vals(x), vals(a[3].tensor()), vals(a[4].tensor()),
                        w.defined() ? vals(w) : std::vector<double>(), ix, a[5].to_bool()),
      a[6].int_list(), x, {C});
}

// Batch statistics of x (N, C, *) per channel.
std::pair<Tensor, Tensor> channel_stats(const Tensor& x, ScalarType dt) {
  const Tensor per_channel = x.transpose(0, 1).contiguous();
  auto [m, r] = block_stats(per_channel, x.size(1) == 0 ? 0 : int64_t{x.numel() / x.size(1)}, 1e-5);
  return {result(m, {x.size(1)}, dt), result(r, {x.size(1)}, dt)};
}

std::vector<SampleInput> batch_norm_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto train = [&](Tensor x, IValue w, IValue m, std::string d) {
    auto [mean, invstd] = channel_stats(x, dt);
    s.push_back({{t_of(shape_of(x), dt, rng), x, w, mean, invstd, true, m}, std::move(d)});
  };
  auto eval = [&](Tensor x, IValue w, IValue m, std::string d) {
    const int64_t C = x.size(1);
    s.push_back(
        {{t_of(shape_of(x), dt, rng), x, w, t_of({C}, dt, rng), positive({C}, dt, rng), false, m},
         std::move(d)});
  };
  train(t_of({8, 3}, dt, rng), t_of({3}, dt, rng), mask(1, 1, 1), "(N, C) training, affine");
  train(t_of({2, 3, 4, 5}, dt, rng), IValue(), mask(1, 1, 1), "(N, C, H, W) training, no weight");
  train(t_of({6, 4}, dt, rng, Layout::NonContiguous), t_of({4}, dt, rng), mask(1, 0, 0),
        "non-contiguous training, grad_input only");
  eval(t_of({4, 3, 5}, dt, rng), t_of({3}, dt, rng), mask(1, 1, 1), "(N, C, L) eval");
  eval(t_of({0, 3}, dt, rng), IValue(), mask(1, 1, 1), "zero-size eval");
  train(t_of({16, 8, 300}, dt, rng), t_of({8}, dt, rng), mask(1, 1, 1),
        "large training (parallel path)");
  return s;
}

std::vector<SampleInput> batch_norm_backward_grad_samples(std::mt19937_64& rng) {
  const ScalarType f = kFloat64;
  return {{{t_of({4, 2, 2}, f, rng), t_of({4, 2, 2}, f, rng), t_of({2}, f, rng), t_of({2}, f, rng),
            positive({2}, f, rng), true, mask(1, 1, 1)},
           "training, affine"},
          {{t_of({5, 3}, f, rng), t_of({5, 3}, f, rng), IValue(), t_of({3}, f, rng),
            positive({3}, f, rng), true, mask(1, 0, 1)},
           "training, no weight"},
          {{t_of({3, 2, 3}, f, rng), t_of({3, 2, 3}, f, rng), t_of({2}, f, rng), t_of({2}, f, rng),
            positive({2}, f, rng), false, mask(1, 1, 1)},
           "eval"}};
}

std::vector<ErrorCase> batch_norm_backward_errors() {
  auto a = [](Tensor g, Tensor x, IValue w, Tensor m, Tensor r, IValue mk) {
    return Stack{g, x, w, m, r, true, mk};
  };
  return {
      {a(zeros({4}), zeros({4}), IValue(), zeros({1}), ones({1}), mask(1, 1, 1)), ErrorKind::Shape,
       "1-D input"},
      {a(zeros({4, 3}), zeros({4, 3}), IValue(), zeros({2}), ones({3}), mask(1, 1, 1)),
       ErrorKind::Shape, "mean of 2 for 3 channels"},
      {a(zeros({4, 2}), zeros({4, 3}), IValue(), zeros({3}), ones({3}), mask(1, 1, 1)),
       ErrorKind::Shape, "grad_out [4, 2] for input [4, 3]"},
      {a(zeros({4, 3}), zeros({4, 3}), IValue(), zeros({3}), ones({3}), std::vector<int64_t>{1}),
       ErrorKind::Value, "output_mask of 1 flag"}};
}

// ---- native_group_norm_backward(grad_out, input, mean, rstd, weight?, num_groups, mask) ----

std::vector<Tensor> ref_group_norm_backward(const Stack& a) {
  const Tensor x = a[1].tensor(), w = opt(a[4]);
  const int64_t G = a[5].to_int();
  const int64_t N = x.size(0), C = x.size(1), S = N * C == 0 ? 0 : x.numel() / (N * C);
  const int64_t s1 = std::max<int64_t>(S, 1), block = std::max<int64_t>(C / G * S, 1);
  const NormIndex ix{[block](int64_t k) { return k / block; },
                     [C, s1](int64_t k) { return (k / s1) % C; }, N * G, C};
  return norm_outputs(
      ref_norm_backward(vals(a[0].tensor()), vals(x), vals(a[2].tensor()), vals(a[3].tensor()),
                        w.defined() ? vals(w) : std::vector<double>(), ix, true),
      a[6].int_list(), x, {C});
}

std::vector<SampleInput> group_norm_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, IValue w, int64_t G, IValue m, std::string d) {
    const int64_t N = x.size(0);
    auto [mv, rv] = block_stats(x.contiguous(), N == 0 ? 0 : x.numel() / (N * G), 1e-5);
    s.push_back(
        {{t_of(shape_of(x), dt, rng), x, result(mv, {N, G}, dt), result(rv, {N, G}, dt), w, G, m},
         std::move(d)});
  };
  add(t_of({2, 6, 5}, dt, rng), t_of({6}, dt, rng), 3, mask(1, 1, 1), "[2, 6, 5] 3 groups, weight");
  add(t_of({3, 4}, dt, rng), IValue(), 2, mask(1, 1, 1), "(N, C) 2 groups, no weight");
  add(t_of({2, 4, 3, 3}, dt, rng, Layout::NonContiguous), t_of({4}, dt, rng), 4, mask(1, 0, 1),
      "non-contiguous [2, 4, 3, 3] 4 groups");
  add(t_of({0, 4, 2}, dt, rng), IValue(), 2, mask(1, 1, 1), "zero-size batch");
  add(t_of({4, 32, 512}, dt, rng), t_of({32}, dt, rng), 8, mask(1, 1, 1), "large (parallel path)");
  return s;
}

std::vector<SampleInput> group_norm_backward_grad_samples(std::mt19937_64& rng) {
  const ScalarType f = kFloat64;
  return {{{t_of({2, 4, 2}, f, rng), t_of({2, 4, 2}, f, rng), t_of({2, 2}, f, rng),
            positive({2, 2}, f, rng), t_of({4}, f, rng), int64_t{2}, mask(1, 1, 1)},
           "[2, 4, 2] 2 groups, weight"},
          {{t_of({3, 2, 3}, f, rng), t_of({3, 2, 3}, f, rng), t_of({3, 1}, f, rng),
            positive({3, 1}, f, rng), IValue(), int64_t{1}, mask(1, 1, 0)},
           "1 group, no weight"}};
}

std::vector<ErrorCase> group_norm_backward_errors() {
  auto a = [](Tensor g, Tensor x, Tensor m, Tensor r, int64_t G) {
    return Stack{g, x, m, r, IValue(), G, mask(1, 1, 1)};
  };
  return {{a(zeros({2, 6}), zeros({2, 6}), zeros({2, 4}), ones({2, 4}), 4), ErrorKind::Value,
           "6 channels in 4 groups"},
          {a(zeros({2, 6}), zeros({2, 6}), zeros({2, 2}), ones({2, 3}), 3), ErrorKind::Shape,
           "mean of 4 values for (2, 3)"},
          {a(zeros({2, 5}), zeros({2, 6}), zeros({2, 3}), ones({2, 3}), 3), ErrorKind::Shape,
           "grad_out [2, 5] for input [2, 6]"}};
}

// ---- cross_entropy_backward(grad_output, input, target, weight?, reduction, ignore, eps) ----

// d loss / d input from the loss's definition (PyTorch's formulas, as nn_loss_opinfo.cpp's
// reference computes the loss): per sample p = softmax, T_c = w_c ((1 - eps) [c == t] + eps / C),
// grad = scale (p sum(T) - T); scale = g_s, g or g / sum of the valid targets' weights.
std::vector<Tensor> ref_cross_entropy_backward(const Stack& a) {
  const Tensor x = a[1].tensor(), target = a[2].tensor(), weight = opt(a[3]);
  const std::string red = a[4].string();
  const int64_t ignore = a[5].to_int();
  const double eps = a[6].to_double();
  const int64_t C = x.dim() == 1 ? x.size(0) : x.size(1);
  const int64_t outer = x.dim() == 1 ? 1 : int64_t{x.size(0)},
                inner = C == 0 ? 1 : x.numel() / std::max<int64_t>(outer * C, 1);
  const std::vector<double> xv = vals(x), g = vals(a[0].tensor());
  const std::vector<int64_t> tv = target.to(kInt64).to_vector<int64_t>();
  const std::vector<double> w =
      weight.defined() ? vals(weight) : std::vector<double>(static_cast<size_t>(C), 1.0);
  auto at = [&](int64_t s, int64_t c) {
    return static_cast<size_t>((s / inner * C + c) * inner + s % inner);
  };
  double denom = 0;
  for (int64_t t : tv)
    if (t != ignore) denom += w[static_cast<size_t>(t)];
  std::vector<double> out(xv.size(), 0.0);
  for (int64_t s = 0; s < static_cast<int64_t>(tv.size()); ++s) {
    const int64_t t = tv[static_cast<size_t>(s)];
    if (t == ignore) continue;
    const double scale = red == "none"  ? g[static_cast<size_t>(s)]
                         : red == "sum" ? g[0]
                                        : g[0] / denom;
    double mx = -INFINITY, sum = 0, total = 0;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xv[at(s, c)]);
    for (int64_t c = 0; c < C; ++c) sum += std::exp(xv[at(s, c)] - mx);
    std::vector<double> target_dist(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      target_dist[static_cast<size_t>(c)] =
          w[static_cast<size_t>(c)] * ((1 - eps) * (c == t) + eps / static_cast<double>(C));
      total += target_dist[static_cast<size_t>(c)];
    }
    for (int64_t c = 0; c < C; ++c)
      out[at(s, c)] =
          scale * (std::exp(xv[at(s, c)] - mx) / sum * total - target_dist[static_cast<size_t>(c)]);
  }
  return {result(out, shape_of(x), x.dtype())};
}

std::vector<SampleInput> cross_entropy_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto cls = [&](Ints shape, int64_t C, ScalarType it = kInt64) {
    return random_ints(shape, 0, C - 1, it, rng);
  };
  auto add = [&](Tensor x, Tensor y, IValue w, const char* red, int64_t ignore, double ls,
                 std::string d) {
    Ints loss_shape;
    if (std::string(red) == "none") loss_shape = shape_of(y);
    s.push_back({{t_of(loss_shape, dt, rng), x, y, w, std::string(red), ignore, ls}, std::move(d)});
  };
  Tensor with_ignored = cls({8}, 5);
  with_ignored.data_ptr<int64_t>()[1] = -100;
  with_ignored.data_ptr<int64_t>()[4] = -100;
  add(t_of({6, 5}, dt, rng), cls({6}, 5), IValue(), "mean", -100, 0.0, "(N, C) mean");
  add(t_of({6, 5}, dt, rng), cls({6}, 5), positive({5}, dt, rng), "sum", -100, 0.0, "weighted sum");
  add(t_of({8, 5}, dt, rng), with_ignored, positive({5}, kFloat32, rng), "mean", -100, 0.0,
      "weighted mean with ignored targets, float32 weight");
  add(t_of({8, 5}, dt, rng), with_ignored, IValue(), "none", -100, 0.2,
      "none, smoothing, ignored targets");
  add(t_of({3, 4, 2, 3}, dt, rng), cls({3, 2, 3}, 4, kInt32), positive({4}, dt, rng), "mean", -100,
      0.1, "(N, C, d1, d2) weighted, smoothing");
  add(t_of({5}, dt, rng), cls({}, 5), IValue(), "none", -100, 0.0, "(C) input, 0-dim target");
  add(t_of({6, 5}, dt, rng, Layout::NonContiguous), cls({6}, 5, kUInt8), IValue(), "mean", 2, 0.0,
      "non-contiguous input, uint8 target, ignore_index 2");
  add(t_of({3, 2}, dt, rng), from_vector(std::vector<int64_t>(3, -100)), IValue(), "mean", -100,
      0.0, "all ignored (zeros)");
  add(t_of({0, 5}, dt, rng), cls({0}, 5), IValue(), "sum", -100, 0.0, "zero-size");
  add(t_of({512, 100}, dt, rng), cls({512}, 100), IValue(), "mean", -100, 0.0,
      "large (parallel path)");
  add(t_of({64, 37}, dt, rng), cls({64}, 37), positive({37}, dt, rng), "sum", -100, 0.3,
      "large weighted smoothing, C not a vector multiple");
  return s;
}

std::vector<SampleInput> cross_entropy_backward_grad_samples(std::mt19937_64& rng) {
  const ScalarType f = kFloat64;
  auto cls = [&](Ints shape, int64_t C) { return random_ints(shape, 0, C - 1, kInt64, rng); };
  const Tensor with_ignored = from_vector(std::vector<int64_t>{2, -100, 0, 1});
  auto w = [&](int64_t c) { return positive({c}, f, rng); };
  auto a = [&](Tensor g, Tensor x, Tensor y, IValue wt, const char* red, double ls) {
    return Stack{g, x, y, wt, std::string(red), int64_t{-100}, ls};
  };
  return {{a(t_of({}, f, rng), t_of({4, 3}, f, rng), cls({4}, 3), IValue(), "mean", 0.0), "mean"},
          {a(t_of({}, f, rng), t_of({4, 3}, f, rng), with_ignored, w(3), "mean", 0.2),
           "weighted mean, smoothing, ignored targets"},
          {a(t_of({4}, f, rng), t_of({4, 3}, f, rng), with_ignored, w(3), "none", 0.1),
           "weighted none, smoothing"},
          {a(t_of({}, f, rng), t_of({2, 3, 2}, f, rng), cls({2, 2}, 3), w(3), "sum", 0.0),
           "(N, C, d) weighted sum"},
          {a(t_of({}, f, rng), t_of({4}, f, rng), cls({}, 4), IValue(), "sum", 0.0), "(C) input"}};
}

std::vector<ErrorCase> cross_entropy_backward_errors() {
  auto a = [](Tensor g, Tensor x, Tensor y, const char* red = "mean", double ls = 0.0) {
    return Stack{g, x, y, IValue(), std::string(red), int64_t{-100}, ls};
  };
  return {
      {a(zeros({}), zeros({3, 5}), zeros({3, 5})), ErrorKind::DType, "probability target"},
      {a(zeros({3}), zeros({3, 5}), tensor({0, 1, 2})), ErrorKind::Shape,
       "grad_output [3] for 'mean'"},
      {a(zeros({}), zeros({3, 5}), tensor({0, 1, 2}), "none"), ErrorKind::Shape,
       "0-dim grad_output for 'none'"},
      {a(zeros({}), zeros({3, 5}), tensor({0, 1, 5})), ErrorKind::Index, "target 5 of 5 classes"},
      {a(zeros({}), zeros({3, 5}), tensor({0, 1, 2}), "avg"), ErrorKind::Value, "reduction avg"},
      {a(zeros({}), zeros({3, 5}), tensor({0, 1, 2}), "mean", -0.5), ErrorKind::Value,
       "label_smoothing -0.5"}};
}

// ---- embedding_dense_backward(grad_output, indices, num_weights, padding_idx?) ----

std::vector<Tensor> ref_embedding_backward(const Stack& a) {
  const Tensor g = a[0].tensor();
  const std::vector<int64_t> idx = a[1].tensor().to(kInt64).to_vector<int64_t>();
  const int64_t rows = a[2].to_int(), D = g.size(-1);
  int64_t pad = a[3].is_none() ? -1 : a[3].to_int();
  if (pad < 0 && !a[3].is_none()) pad += rows;
  const std::vector<double> gv = vals(g);
  std::vector<double> out(static_cast<size_t>(rows * D), 0.0);
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] == pad) continue;
    for (int64_t d = 0; d < D; ++d)
      out[static_cast<size_t>(idx[i] * D + d)] +=
          gv[i * static_cast<size_t>(D) + static_cast<size_t>(d)];
  }
  return {result(out, {rows, D}, g.dtype())};
}

std::vector<SampleInput> embedding_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor idx, int64_t rows, int64_t D, IValue pad, std::string d,
                 Layout l = Layout::Contiguous) {
    Ints gs = shape_of(idx);
    gs.push_back(D);
    s.push_back({{t_of(gs, dt, rng, l), idx, rows, pad}, std::move(d)});
  };
  add(random_ints({3, 5}, 0, 9, kInt64, rng), 10, 4, IValue(), "[3, 5] int64 indices");
  add(random_ints({7}, 0, 4, kInt32, rng), 5, 3, int64_t{0}, "int32, padding_idx 0");
  add(random_ints({6}, 0, 3, kUInt8, rng), 4, 2, int64_t{-1}, "uint8, padding_idx -1");
  add(random_ints({}, 0, 3, kInt16, rng), 4, 3, IValue(), "0-dim index");
  add(random_ints({0}, 0, 3, kInt64, rng), 4, 3, IValue(), "no indices (zeros)");
  add(random_ints({5}, 0, 6, kInt64, rng), 7, 4, IValue(), "non-contiguous grad",
      Layout::NonContiguous);
  add(random_ints({1024}, 0, 49, kInt64, rng), 50, 64, int64_t{3}, "large (parallel path)");
  return s;
}

std::vector<ErrorCase> embedding_backward_errors() {
  return {
      {{zeros({3, 4}), tensor({0, 1}), int64_t{5}, IValue()},
       ErrorKind::Shape,
       "grad [3, 4] for 2 indices"},
      {{zeros({2, 4}), tensor({0.0, 1.0}), int64_t{5}, IValue()},
       ErrorKind::DType,
       "float indices"},
      {{zeros({2, 4}), tensor({0, 5}), int64_t{5}, IValue()},
       ErrorKind::Index,
       "index 5 of 5 rows"},
      {{zeros({2, 4}), tensor({0, 1}), int64_t{5}, int64_t{5}}, ErrorKind::Index, "padding_idx 5"},
      {{zeros({2, 4}), tensor({0, 1}), int64_t{-1}, IValue()}, ErrorKind::Value, "num_weights -1"}};
}

// Float32 sums of 1024 products (and their cancellations) need a little more than the default
// float32 tolerance.
std::pair<double, double> backward_tolerance(ScalarType dt) {
  return dt == kFloat32 ? std::pair{1e-4, 1e-4} : default_tolerance(dt);
}

const bool registered = [] {
  register_op_info({.name = "native_layer_norm_backward",
                    .samples = layer_norm_backward_samples,
                    .reference = ref_layer_norm_backward,
                    .error_cases = layer_norm_backward_errors,
                    .tolerance = backward_tolerance,
                    .grad_samples = layer_norm_backward_grad_samples});
  register_op_info({.name = "native_batch_norm_backward",
                    .samples = batch_norm_backward_samples,
                    .reference = ref_batch_norm_backward,
                    .error_cases = batch_norm_backward_errors,
                    .tolerance = backward_tolerance,
                    .grad_samples = batch_norm_backward_grad_samples});
  register_op_info({.name = "native_group_norm_backward",
                    .samples = group_norm_backward_samples,
                    .reference = ref_group_norm_backward,
                    .error_cases = group_norm_backward_errors,
                    .tolerance = backward_tolerance,
                    .grad_samples = group_norm_backward_grad_samples});
  register_op_info({.name = "cross_entropy_backward",
                    .samples = cross_entropy_backward_samples,
                    .reference = ref_cross_entropy_backward,
                    .error_cases = cross_entropy_backward_errors,
                    .tolerance = backward_tolerance,
                    .grad_samples = cross_entropy_backward_grad_samples});
  register_op_info({.name = "embedding_dense_backward",
                    .samples = embedding_backward_samples,
                    .reference = ref_embedding_backward,
                    .error_cases = embedding_backward_errors,
                    .tolerance = backward_tolerance,
                    .grad_samples = [](std::mt19937_64& rng) {
                      return std::vector<SampleInput>{
                          {{t_of({3, 2}, kFloat64, rng), tensor({1, 3, 1}), int64_t{4}, IValue()},
                           "repeated index"},
                          {{t_of({2, 2, 3}, kFloat64, rng), tensor({0, 2, 0, 1}).reshape({2, 2}),
                            int64_t{3}, int64_t{0}},
                           "padding_idx 0 picked"}};
                    }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
