// OpInfos for scaled_dot_product_attention and the losses.
#include "src/core/promotion.h"
#include "src/core/shape.h"
#include "tests/ops/nn_reference.h"

namespace kiln::testing {
namespace {

using namespace nn_ref;
using Ints = std::vector<int64_t>;

// ---- scaled_dot_product_attention ----

// The reference attention of one call in float64, from argument `first` of the stack on (q, k,
// v, mask, dropout_p, is_causal, scale): the batch shape, the operands broadcast to it and the
// probabilities of each query row.
struct RefAttention {
  Ints batch;
  int64_t B, L, E, S, Ev;
  double scale;
  bool causal;
  Tensor mask;
  std::vector<double> q, k, v, m;

  RefAttention(const Stack& a, size_t first) {
    const Tensor qt = a[first].tensor(), kt = a[first + 1].tensor(), vt = a[first + 2].tensor();
    mask = opt(a[first + 3]);
    causal = a[first + 5].to_bool();
    L = qt.size(-2), E = qt.size(-1), S = kt.size(-2), Ev = vt.size(-1);
    scale =
        a[first + 6].is_none() ? 1.0 / std::sqrt(static_cast<double>(E)) : a[first + 6].to_double();
    auto batch_of = [](const Tensor& t) {
      return t.sizes().slice(0, static_cast<size_t>(t.dim() - 2));
    };
    DimVector bs = broadcast_shapes("ref", batch_of(qt), batch_of(kt));
    bs = broadcast_shapes("ref", bs, batch_of(vt));
    batch.assign(bs.begin(), bs.end());
    B = prod(batch);
    q = vals(qt.expand(full({L, E})));
    k = vals(kt.expand(full({S, E})));
    v = vals(vt.expand(full({S, Ev})));
    if (mask.defined()) m = vals(mask.expand(full({L, S})));
  }

  Ints full(Ints tail) const {
    Ints s = batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  }
  double Q(int64_t b, int64_t i, int64_t e) const {
    return q[static_cast<size_t>((b * L + i) * E + e)];
  }
  double K(int64_t b, int64_t j, int64_t e) const {
    return k[static_cast<size_t>((b * S + j) * E + e)];
  }
  double V(int64_t b, int64_t j, int64_t e) const {
    return v[static_cast<size_t>((b * S + j) * Ev + e)];
  }

  // softmax(scale q k^T + mask) of row i; zeros when every key is masked (PyTorch's
  // _safe_softmax).
  std::vector<double> probabilities(int64_t b, int64_t i) const {
    std::vector<double> p(static_cast<size_t>(S));
    bool all_masked = true;
    double mx = -INFINITY;
    for (int64_t j = 0; j < S; ++j) {
      // The scale goes inside the sum (PyTorch scales q and k): E = 0 gives 0, not 0 * inf.
      double s = 0;
      for (int64_t e = 0; e < E; ++e) s += Q(b, i, e) * scale * K(b, j, e);
      if (causal && j > i) s = -INFINITY;
      if (mask.defined()) {
        const double mj = m[static_cast<size_t>((b * L + i) * S + j)];
        if (mask.dtype() == kBool) {
          if (mj == 0) s = -INFINITY;
        } else {
          s += mj;
        }
      }
      p[static_cast<size_t>(j)] = s;
      if (s != -INFINITY) all_masked = false;
      mx = std::max(mx, s);
    }
    if (all_masked) return std::vector<double>(static_cast<size_t>(S), 0.0);
    double sum = 0;
    for (double& x : p) sum += (x = std::exp(x - mx));
    for (double& x : p) x /= sum;
    return p;
  }
};

std::vector<Tensor> ref_sdpa(const Stack& a) {
  const RefAttention r(a, 0);
  std::vector<double> out(static_cast<size_t>(r.B * r.L * r.Ev), 0.0);
  for (int64_t b = 0; b < r.B; ++b) {
    for (int64_t i = 0; i < r.L; ++i) {
      const std::vector<double> p = r.probabilities(b, i);
      for (int64_t j = 0; j < r.S; ++j)
        for (int64_t e = 0; e < r.Ev; ++e)
          out[static_cast<size_t>((b * r.L + i) * r.Ev + e)] +=
              p[static_cast<size_t>(j)] * r.V(b, j, e);
    }
  }
  return {result(out, r.full({r.L, r.Ev}), a[0].tensor().dtype())};
}

// The textbook gradients of out = P v with P = softmax(scale q k^T + mask), per row:
// dv_j += p_j g, dp_j = g . v_j, ds_j = p_j (dp_j - sum_l p_l dp_l), dq += scale ds_j k_j,
// dk_j += scale ds_j q_i.
std::vector<Tensor> ref_sdpa_backward(const Stack& a) {
  const RefAttention r(a, 1);
  const std::vector<double> g = vals(a[0].tensor().expand(r.full({r.L, r.Ev})));
  std::vector<double> dq(static_cast<size_t>(r.B * r.L * r.E), 0.0),
      dk(static_cast<size_t>(r.B * r.S * r.E), 0.0), dv(static_cast<size_t>(r.B * r.S * r.Ev), 0.0);
  for (int64_t b = 0; b < r.B; ++b) {
    for (int64_t i = 0; i < r.L; ++i) {
      const std::vector<double> p = r.probabilities(b, i);
      auto G = [&](int64_t e) { return g[static_cast<size_t>((b * r.L + i) * r.Ev + e)]; };
      std::vector<double> dp(static_cast<size_t>(r.S), 0.0);
      double dot = 0;
      for (int64_t j = 0; j < r.S; ++j) {
        for (int64_t e = 0; e < r.Ev; ++e) {
          dv[static_cast<size_t>((b * r.S + j) * r.Ev + e)] += p[static_cast<size_t>(j)] * G(e);
          dp[static_cast<size_t>(j)] += G(e) * r.V(b, j, e);
        }
        dot += p[static_cast<size_t>(j)] * dp[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < r.S; ++j) {
        const double ds = p[static_cast<size_t>(j)] * (dp[static_cast<size_t>(j)] - dot);
        for (int64_t e = 0; e < r.E; ++e) {
          dq[static_cast<size_t>((b * r.L + i) * r.E + e)] += r.scale * ds * r.K(b, j, e);
          dk[static_cast<size_t>((b * r.S + j) * r.E + e)] += r.scale * ds * r.Q(b, i, e);
        }
      }
    }
  }
  const IntArrayRef want = a[8].int_list();
  const ScalarType dt = a[1].tensor().dtype();
  return {want[0] ? result(dq, r.full({r.L, r.E}), dt) : result({}, {0}, dt),
          want[1] ? result(dk, r.full({r.S, r.E}), dt) : result({}, {0}, dt),
          want[2] ? result(dv, r.full({r.S, r.Ev}), dt) : result({}, {0}, dt)};
}

std::vector<SampleInput> sdpa_samples(ScalarType dt, std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) { return make_tensor(s, dt, rng, -2, 2, l); };
  std::vector<SampleInput> s;
  auto add = [&](Tensor q, Tensor k, Tensor v, IValue mask, bool causal, IValue scale,
                 std::string d) {
    s.push_back({{q, k, v, mask, 0.0, causal, scale}, std::move(d)});
  };
  add(t({2, 3, 4, 8}), t({2, 3, 6, 8}), t({2, 3, 6, 5}), IValue(), false, IValue(),
      "[2, 3] heads, L 4, S 6");
  add(t({2, 5, 4}), t({2, 5, 4}), t({2, 5, 3}), IValue(), true, IValue(), "causal L == S");
  add(t({1, 3, 4}), t({1, 6, 4}), t({1, 6, 4}), IValue(), true, IValue(), "causal L < S");
  add(t({1, 6, 4}), t({1, 3, 4}), t({1, 3, 4}), IValue(), true, IValue(), "causal L > S");
  // A bool mask broadcast over the batch, with row 2 fully masked (zeros, as PyTorch).
  std::vector<double> keep(35);
  for (size_t i = 0; i < keep.size(); ++i)
    keep[i] = (i / 7 == 2) ? 0 : static_cast<double>(rng() % 4 != 0);
  add(t({2, 5, 4}), t({2, 7, 4}), t({2, 7, 3}), from_vector(keep, Ints{5, 7}).to(kBool), false,
      IValue(), "bool mask [5, 7] with a fully masked row");
  add(t({2, 3, 5, 4}), t({2, 3, 7, 4}), t({2, 3, 7, 3}), t({2, 1, 5, 7}), false, IValue(),
      "float additive mask [2, 1, 5, 7]");
  add(t({3, 4}), t({5, 4}), t({5, 2}), make_tensor({3, 5}, kFloat32, rng), false, 0.3,
      "float32 mask, 2-D, scale 0.3");
  add(t({2, 1, 4, 8}), t({1, 3, 6, 8}), t({3, 6, 8}), IValue(), false, IValue(),
      "broadcast batch dims");
  add(t({2, 4, 6}, Layout::NonContiguous), t({2, 6, 5}).transpose(1, 2),
      t({2, 5, 3}, Layout::Expanded), IValue(), false, IValue(),
      "non-contiguous q, transposed k, expanded v");
  add(t({2, 0, 4}), t({2, 3, 4}), t({2, 3, 5}), IValue(), false, IValue(), "L = 0");
  add(t({2, 3, 4}), t({2, 0, 4}), t({2, 0, 5}), IValue(), false, IValue(), "S = 0 (zeros)");
  add(t({2, 3, 0}), t({2, 4, 0}), t({2, 4, 5}), IValue(), false, IValue(), "E = 0");
  add(t({4, 2, 64, 32}), t({4, 2, 64, 32}), t({4, 2, 64, 32}), IValue(), true, IValue(),
      "large causal (parallel path)");
  return s;
}

// float64 samples small enough for finite differences.
std::vector<SampleInput> sdpa_grad_samples(std::mt19937_64& rng) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) {
    return make_tensor(s, kFloat64, rng, -2, 2, l);
  };
  std::vector<SampleInput> s;
  auto add = [&](Tensor q, Tensor k, Tensor v, IValue mask, bool causal, IValue scale,
                 std::string d) {
    s.push_back({{q, k, v, mask, 0.0, causal, scale}, std::move(d)});
  };
  add(t({1, 3, 2}), t({1, 4, 2}), t({1, 4, 3}), IValue(), false, IValue(), "L 3, S 4");
  add(t({3, 2}), t({3, 2}), t({3, 2}), IValue(), true, IValue(), "causal L == S");
  add(t({1, 4, 2}), t({1, 2, 2}), t({1, 2, 2}), IValue(), true, IValue(),
      "causal L > S (a dead row)");
  std::vector<double> keep{1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0};  // row 1 fully masked
  add(t({2, 3, 2}), t({2, 4, 2}), t({2, 4, 2}), from_vector(keep, Ints{3, 4}).to(kBool), false,
      IValue(), "bool mask [3, 4] with a fully masked row");
  add(t({1, 3, 2}), t({1, 4, 2}), t({1, 4, 2}), t({1, 3, 4}), false, 0.3, "float mask, scale 0.3");
  add(t({2, 1, 2, 2}), t({1, 2, 3, 2}), t({2, 3, 2}), IValue(), false, IValue(),
      "broadcast batch dims");
  add(t({2, 3}, Layout::NonContiguous), t({3, 4}).t(), t({4, 2}, Layout::Expanded), IValue(), false,
      IValue(), "non-contiguous q, transposed k, expanded v");
  return s;
}

// Every forward sample with a gradient of the output's shape, all three gradients wanted, and
// two samples with some left out.
std::vector<SampleInput> sdpa_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  const IValue all = std::vector<int64_t>{1, 1, 1};
  for (SampleInput& f : sdpa_samples(dt, rng)) {
    const Tensor out = ref_sdpa(f.args)[0];
    Stack args{make_tensor(shape_of(out), dt, rng, -2, 2)};
    for (const IValue& arg : f.args) args.push_back(arg);
    args.push_back(all);
    s.push_back({std::move(args), std::move(f.description)});
  }
  auto t = [&](Ints sizes) { return make_tensor(sizes, dt, rng, -2, 2); };
  s.push_back({{t({2, 4, 3}), t({2, 4, 5}), t({2, 6, 5}), t({2, 6, 3}), IValue(), 0.0, false,
                IValue(), std::vector<int64_t>{0, 0, 1}},
               "only grad_value"});
  s.push_back({{t({2, 4, 3}), t({2, 4, 5}), t({2, 6, 5}), t({2, 6, 3}), IValue(), 0.0, true, 0.5,
                std::vector<int64_t>{1, 1, 0}},
               "grad_query and grad_key, causal, scale 0.5"});
  return s;
}

std::vector<ErrorCase> sdpa_backward_errors() {
  auto args = [](Tensor g, Tensor q, IValue mask = std::vector<int64_t>{1, 1, 1}) {
    return Stack{g, q, zeros({5, 4}), zeros({5, 4}), IValue(), 0.0, false, IValue(), mask};
  };
  return {{args(zeros({3, 5}), zeros({3, 4})), ErrorKind::Shape, "grad_out shape"},
          {args(zeros({3, 4}, kFloat64), zeros({3, 4})), ErrorKind::DType, "grad_out dtype"},
          {args(zeros({3, 4}), zeros({3, 5})), ErrorKind::Shape, "E mismatch"},
          {args(zeros({3, 4}), zeros({3, 4}), std::vector<int64_t>{1, 1}), ErrorKind::Value,
           "output_mask of 2 flags"}};
}

std::vector<ErrorCase> sdpa_errors() {
  auto args = [](Tensor q, Tensor k, Tensor v, IValue mask = IValue(), double p = 0.0,
                 bool causal = false) { return Stack{q, k, v, mask, p, causal, IValue()}; };
  return {
      {args(zeros({2, 3, 4}), zeros({2, 5, 6}), zeros({2, 5, 4})), ErrorKind::Shape, "E mismatch"},
      {args(zeros({2, 3, 4}), zeros({2, 5, 4}), zeros({2, 6, 4})), ErrorKind::Shape, "S mismatch"},
      {args(zeros({2, 3, 4}), zeros({3, 5, 4}), zeros({3, 5, 4})), ErrorKind::Shape,
       "batch mismatch"},
      {args(zeros({4}), zeros({5, 4}), zeros({5, 4})), ErrorKind::Shape, "1-D query"},
      {args(zeros({3, 4}), zeros({5, 4}, kFloat64), zeros({5, 4})), ErrorKind::DType,
       "dtype mismatch"},
      {args(zeros({3, 4}), zeros({5, 4}), zeros({5, 4}), zeros({3, 4})), ErrorKind::Shape,
       "mask [3, 4]"},
      {args(zeros({3, 4}), zeros({5, 4}), zeros({5, 4}), zeros({3, 5}, kInt32)), ErrorKind::DType,
       "int mask"},
      {args(zeros({3, 4}), zeros({5, 4}), zeros({5, 4}), zeros({3, 5}), 0.0, true),
       ErrorKind::Value, "mask and is_causal"},
      {args(zeros({3, 4}), zeros({5, 4}), zeros({5, 4}), IValue(), 0.5), ErrorKind::NotImplemented,
       "dropout"}};
}

// ---- cross_entropy / nll_loss ----

// input (C) | (N, C, d...): the log-probabilities (or raw values) of sample s and class c.
struct ClassView {
  int64_t outer = 1, C, inner = 1;
  Ints sample_shape;
  explicit ClassView(const Tensor& x) {
    C = x.dim() == 1 ? x.size(0) : x.size(1);
    if (x.dim() > 1) {
      outer = x.size(0);
      sample_shape.push_back(outer);
      for (int64_t d = 2; d < x.dim(); ++d) {
        inner *= x.size(d);
        sample_shape.push_back(x.size(d));
      }
    }
  }
  size_t at(int64_t s, int64_t c) const {
    return static_cast<size_t>((s / inner * C + c) * inner + s % inner);
  }
};

std::vector<double> log_softmax_ref(const std::vector<double>& x, const ClassView& cv) {
  std::vector<double> lp(x.size());
  for (int64_t s = 0; s < cv.outer * cv.inner; ++s) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cv.C; ++c) mx = std::max(mx, x[cv.at(s, c)]);
    for (int64_t c = 0; c < cv.C; ++c) sum += std::exp(x[cv.at(s, c)] - mx);
    for (int64_t c = 0; c < cv.C; ++c) lp[cv.at(s, c)] = x[cv.at(s, c)] - mx - std::log(sum);
  }
  return lp;
}

// PyTorch's formulas (aten/src/ATen/native/LossNLL.cpp, cross_entropy_loss_label_smoothing and
// cross_entropy_loss_prob_target), written out per sample.
Tensor ref_class_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                      std::string_view red, int64_t ignore, double eps, bool log_softmax) {
  const ClassView cv(input);
  const std::vector<double> x = vals(input);
  const std::vector<double> lp = log_softmax ? log_softmax_ref(x, cv) : x;
  const std::vector<double> w =
      weight.defined() ? vals(weight) : std::vector<double>(static_cast<size_t>(cv.C), 1.0);
  const int64_t n = cv.outer * cv.inner;
  std::vector<double> per(static_cast<size_t>(n));
  double total = 0, wsum = 0, ssum = 0, nll_sum = 0;
  if (is_floating(target.dtype())) {
    const std::vector<double> t = vals(target);
    for (int64_t s = 0; s < n; ++s) {
      double l = 0;
      for (int64_t c = 0; c < cv.C; ++c)
        l -= w[static_cast<size_t>(c)] *
             (t[cv.at(s, c)] * (1 - eps) + eps / static_cast<double>(cv.C)) * lp[cv.at(s, c)];
      per[static_cast<size_t>(s)] = l;
      total += l;
    }
    const double v = red == "sum" ? total : (n == 0 ? kNaN : total / static_cast<double>(n));
    return red == "none" ? result(per, cv.sample_shape, input.dtype())
                         : result({v}, {}, input.dtype());
  }
  const std::vector<int64_t> t = target.to_vector<int64_t>();
  for (int64_t s = 0; s < n; ++s) {
    const int64_t ti = t[static_cast<size_t>(s)];
    if (ti == ignore) continue;
    const double nll = -w[static_cast<size_t>(ti)] * lp[cv.at(s, ti)];
    double smooth = 0;
    for (int64_t c = 0; c < cv.C; ++c) smooth -= w[static_cast<size_t>(c)] * lp[cv.at(s, c)];
    per[static_cast<size_t>(s)] =
        eps > 0 ? (1 - eps) * nll + eps / static_cast<double>(cv.C) * smooth : nll;
    nll_sum += nll;
    ssum += smooth;
    wsum += w[static_cast<size_t>(ti)];
  }
  if (red == "none") return result(per, cv.sample_shape, input.dtype());
  double v = red == "sum" ? nll_sum : nll_sum / wsum;
  if (eps > 0)
    v = (1 - eps) * v + eps / static_cast<double>(cv.C) * (red == "sum" ? ssum : ssum / wsum);
  return result({v}, {}, input.dtype());
}

std::vector<SampleInput> class_loss_samples(ScalarType dt, std::mt19937_64& rng, bool ce) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) { return make_tensor(s, dt, rng, -3, 3, l); };
  auto cls = [&](Ints s, int64_t C, ScalarType it = kInt64) {
    return random_ints(s, 0, C - 1, it, rng);
  };
  std::vector<SampleInput> s;
  // cross_entropy takes a trailing label_smoothing.
  auto add = [&](Tensor x, Tensor y, IValue w, const char* red, int64_t ignore, double ls,
                 std::string d) {
    Stack a{x, y, w, std::string(red), ignore};
    if (ce) {
      a.emplace_back(ls);
    } else if (ls != 0) {
      return;
    }
    s.push_back({a, std::move(d)});
  };
  Tensor with_ignored = cls({8}, 5);
  with_ignored.data_ptr<int64_t>()[1] = -100;
  with_ignored.data_ptr<int64_t>()[4] = -100;
  add(t({6, 5}), cls({6}, 5), IValue(), "mean", -100, 0.0, "(N, C) mean");
  add(t({6, 5}), cls({6}, 5), make_tensor({5}, dt, rng, 0.1, 2), "sum", -100, 0.0, "weighted sum");
  add(t({8, 5}), with_ignored, make_tensor({5}, kFloat32, rng, 0.1, 2), "mean", -100, 0.0,
      "weighted mean with ignored targets");
  add(t({8, 5}), with_ignored, IValue(), "none", -100, 0.0, "none with ignored targets");
  add(t({8, 5}), cls({8}, 5), IValue(), "mean", 2, 0.0, "ignore_index 2 (a real class)");
  add(t({3, 4, 2, 3}), cls({3, 2, 3}, 4), make_tensor({4}, dt, rng, 0.1, 2), "mean", -100, 0.1,
      "(N, C, d1, d2) weighted, label_smoothing 0.1");
  add(t({8, 5}), with_ignored, IValue(), "mean", -100, 0.2, "label_smoothing with ignored targets");
  add(t({8, 5}), with_ignored, IValue(), "none", -100, 0.3, "label_smoothing none");
  add(t({5}), cls({}, 5), IValue(), "none", -100, 0.0, "(C) input, 0-dim target");
  add(t({6, 5}, Layout::NonContiguous), cls({6}, 5, kInt32), IValue(), "mean", -100, 0.0,
      "non-contiguous input, int32 target");
  add(t({0, 5}), cls({0}, 5), IValue(), "mean", -100, 0.0, "zero-size mean (NaN)");
  add(t({0, 5}), cls({0}, 5), IValue(), "sum", -100, 0.0, "zero-size sum");
  add(t({3, 2}), from_vector(std::vector<int64_t>(3, -100)), IValue(), "mean", -100, 0.0,
      "all ignored mean (NaN)");
  add(t({512, 100}), cls({512}, 100), IValue(), "mean", -100, 0.0, "large (parallel path)");
  if (ce) {
    auto probs = [&](Ints shape) { return make_tensor(shape, dt, rng, 0, 1); };
    add(t({4, 5}), probs({4, 5}), IValue(), "mean", -100, 0.0, "probability target");
    add(t({4, 5}), probs({4, 5}), make_tensor({5}, dt, rng, 0.1, 2), "sum", -100, 0.2,
        "probability target weighted, smoothing");
    add(t({2, 3, 4}), probs({2, 3, 4}), IValue(), "none", -100, 0.0,
        "probability target (N, C, d)");
    add(t({0, 3}), probs({0, 3}), IValue(), "mean", -100, 0.0, "probability target zero-size");
  }
  return s;
}

// float64 samples for the gradient check (weights and probability targets are differentiated
// too). No sample has every target ignored: its 'mean' is NaN, which finite differences can't
// differentiate (the gradients are zeros; tests/autograd/nn_grad_test.cpp checks that).
std::vector<SampleInput> class_loss_grad_samples(std::mt19937_64& rng, bool ce) {
  auto t = [&](Ints s, Layout l = Layout::Contiguous) {
    return make_tensor(s, kFloat64, rng, -2, 2, l);
  };
  auto w = [&](int64_t c) { return make_tensor({c}, kFloat64, rng, 0.2, 2); };
  auto cls = [&](Ints s, int64_t C, ScalarType it = kInt64) {
    return random_ints(s, 0, C - 1, it, rng);
  };
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Tensor y, IValue wt, const char* red, int64_t ignore, double ls,
                 std::string d) {
    Stack a{x, y, wt, std::string(red), ignore};
    if (ce) {
      a.emplace_back(ls);
    } else if (ls != 0) {
      return;
    }
    s.push_back({a, std::move(d)});
  };
  Tensor with_ignored = from_vector(std::vector<int64_t>{2, -100, 0, 3, -100, 1});
  add(t({4, 3}), cls({4}, 3), IValue(), "mean", -100, 0.0, "(N, C) mean");
  add(t({4, 3}), cls({4}, 3), w(3), "sum", -100, 0.0, "weighted sum");
  add(t({6, 4}), with_ignored, w(4), "mean", -100, 0.0, "weighted mean with ignored targets");
  add(t({6, 4}), with_ignored, w(4), "none", -100, 0.0, "weighted none with ignored targets");
  add(t({5, 3}), from_vector(std::vector<int64_t>{0, 2, 1, 2, 2}), IValue(), "mean", 2, 0.0,
      "ignore_index 2 (a real class)");
  add(t({2, 3, 2, 2}), cls({2, 2, 2}, 3, kInt32), w(3), "mean", -100, 0.2,
      "(N, C, d1, d2) weighted mean, label_smoothing 0.2");
  add(t({6, 4}), with_ignored, w(4), "sum", -100, 0.3, "weighted sum, smoothing, ignored targets");
  add(t({6, 4}), with_ignored, IValue(), "none", -100, 0.1, "none, smoothing, ignored targets");
  add(t({5}), cls({}, 5), w(5), "none", -100, 0.0, "(C) input, 0-dim target");
  add(t({5}), cls({}, 5), IValue(), "mean", -100, 0.1, "(C) input mean, smoothing");
  add(t({4, 3}, Layout::NonContiguous), cls({4}, 3, kUInt8), IValue(), "mean", -100, 0.0,
      "non-contiguous input, uint8 target");
  if (ce) {
    auto probs = [&](Ints shape) { return make_tensor(shape, kFloat64, rng, 0, 1); };
    add(t({3, 4}), probs({3, 4}), IValue(), "mean", -100, 0.0, "probability target");
    add(t({3, 4}), probs({3, 4}), w(4), "sum", -100, 0.2, "probability target weighted, smoothing");
    add(t({2, 3, 2}), probs({2, 3, 2}), w(3), "none", -100, 0.0, "probability target (N, C, d)");
  }
  return s;
}

std::vector<ErrorCase> class_loss_errors(bool ce) {
  auto args = [&](Tensor x, Tensor y, IValue w = IValue(), const char* red = "mean",
                  double ls = 0) {
    Stack a{x, y, w, std::string(red), int64_t{-100}};
    if (ce) a.emplace_back(ls);
    return a;
  };
  std::vector<ErrorCase> e{
      {args(zeros({3, 5}), tensor({0, 1, 5})), ErrorKind::Index, "target 5 of 5 classes"},
      {args(zeros({3, 5}), tensor({0, -1, 2})), ErrorKind::Index, "target -1"},
      {args(zeros({3, 5}), tensor({0, 1})), ErrorKind::Shape, "target [2] for N 3"},
      {args(zeros({3, 5}), tensor({0, 1, 2}), zeros({4})), ErrorKind::Shape,
       "weight of 4 for 5 classes"},
      {args(zeros({3, 5}), tensor({0, 1, 2}), IValue(), "avg"), ErrorKind::Value, "reduction avg"},
      {args(scalar_tensor(1.0), tensor({0})), ErrorKind::Shape, "0-dim input"},
      {args(zeros({3, 5}), zeros({3}, kBool)), ErrorKind::DType, "bool target"}};
  if (ce) {
    e.push_back(
        {args(zeros({3, 5}), zeros({3, 4})), ErrorKind::Shape, "probability target [3, 4]"});
    e.push_back({args(zeros({3, 5}), tensor({0, 1, 2}), IValue(), "mean", 1.5), ErrorKind::Value,
                 "label_smoothing 1.5"});
  } else {
    e.push_back({args(zeros({3, 5}), zeros({3})), ErrorKind::DType, "float target"});
  }
  return e;
}

// ---- mse_loss / binary_cross_entropy_with_logits ----

const char* kReductions[] = {"mean", "sum", "none"};

std::vector<SampleInput> mse_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  int r = 0;
  for (SampleInput& b : binary_samples(dt, rng)) {
    b.args.emplace_back(std::string(kReductions[r % 3]));
    b.description += std::string(" ") + kReductions[r++ % 3];
    s.push_back(b);
  }
  s.push_back(
      {{make_tensor({4, 3}, dt, rng), make_tensor({4, 3}, kFloat64, rng), std::string("none")},
       "float64 target promotes"});
  s.push_back({{make_tensor({0, 3}, dt, rng), make_tensor({0, 3}, dt, rng), std::string("mean")},
               "zero-size mean (NaN)"});
  return s;
}

// The float64 samples minus those whose 'mean' is over zero elements (NaN: nothing to
// differentiate).
std::vector<SampleInput> mse_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  for (SampleInput& x : mse_samples(kFloat64, rng)) {
    const bool empty = x.args[0].tensor().numel() == 0 || x.args[1].tensor().numel() == 0;
    if (!(empty && x.args[2].string() == "mean")) s.push_back(x);
  }
  return s;
}

std::vector<Tensor> ref_mse(const Stack& a) {
  const Tensor x = a[0].tensor(), y = a[1].tensor();
  const std::string red = a[2].string();
  const ScalarType dt = promote_types(x.dtype(), y.dtype());
  const Tensor d =
      map_binary_f64(x, y, kFloat64, [](double p, double q) { return (p - q) * (p - q); });
  if (red == "none") return {d.to(dt)};
  return {result({reduce(vals(d), red)}, {}, dt)};
}

std::vector<SampleInput> bce_samples(ScalarType dt, std::mt19937_64& rng) {
  auto x = [&](Ints s, double lim = 5, Layout l = Layout::Contiguous) {
    return make_tensor(s, dt, rng, -lim, lim, l);
  };
  auto p = [&](Ints s) { return make_tensor(s, dt, rng, 0, 1); };
  std::vector<SampleInput> s;
  auto add = [&](Tensor in, Tensor t, IValue w, IValue pw, const char* red, std::string d) {
    s.push_back({{in, t, w, pw, std::string(red)}, std::move(d)});
  };
  add(x({5, 7}), p({5, 7}), IValue(), IValue(), "mean", "[5, 7] mean");
  add(x({5, 7}), p({5, 7}), p({7}), p({7}), "sum", "weight and pos_weight [7], sum");
  add(x({5, 7}, 100), p({5, 7}), IValue(), make_tensor({1}, dt, rng, 0.5, 3), "none",
      "extreme logits (+-100), pos_weight [1]");
  add(x({4, 6}, 5, Layout::NonContiguous), p({4, 6}), p({4, 1}), IValue(), "mean",
      "non-contiguous, weight [4, 1]");
  add(x({}), p({}), IValue(), IValue(), "none", "0-dim");
  add(x({0, 3}), p({0, 3}), IValue(), IValue(), "mean", "zero-size mean (NaN)");
  add(x({200, 300}), p({200, 300}), IValue(), IValue(), "mean", "large (parallel path)");
  return s;
}

std::vector<Tensor> ref_bce(const Stack& a) {
  const Tensor x = a[0].tensor(), t = a[1].tensor(), w = opt(a[2]), pw = opt(a[3]);
  const std::string red = a[4].string();
  const std::vector<double> xv = vals(x), tv = vals(t);
  const std::vector<double> wv = w.defined() ? vals(w.expand(x.sizes())) : std::vector<double>();
  const std::vector<double> pv = pw.defined() ? vals(pw.expand(x.sizes())) : std::vector<double>();
  std::vector<double> l(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    // log(sigmoid) and log(1 - sigmoid) in forms that stay finite for large |x|.
    const double log_sig =
        xv[i] >= 0 ? -std::log1p(std::exp(-xv[i])) : xv[i] - std::log1p(std::exp(xv[i]));
    const double log_one_minus = log_sig - xv[i];
    const double pwi = pv.empty() ? 1.0 : pv[i];
    l[i] = -(pwi * tv[i] * log_sig + (1 - tv[i]) * log_one_minus) * (wv.empty() ? 1.0 : wv[i]);
  }
  const ScalarType dt = promote_types(x.dtype(), t.dtype());
  if (red == "none") return {result(l, shape_of(x), dt)};
  return {result({reduce(l, red)}, {}, dt)};
}

const bool registered = [] {
  register_op_info({.name = "scaled_dot_product_attention",
                    .samples = sdpa_samples,
                    .reference = ref_sdpa,
                    .error_cases = sdpa_errors,
                    .tolerance =
                        [](ScalarType dt) {
                          return dt == kFloat32 ? std::pair{1e-5, 1e-5} : default_tolerance(dt);
                        },
                    .grad_samples = sdpa_grad_samples});
  register_op_info({.name = "scaled_dot_product_attention_backward",
                    .samples = sdpa_backward_samples,
                    .reference = ref_sdpa_backward,
                    .error_cases = sdpa_backward_errors,
                    .tolerance = [](ScalarType dt) {
                      return dt == kFloat32 ? std::pair{1e-4, 1e-4} : default_tolerance(dt);
                    }});
  register_op_info(
      {.name = "cross_entropy",
       .samples = [](ScalarType dt,
                     std::mt19937_64& rng) { return class_loss_samples(dt, rng, true); },
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{ref_class_loss(a[0].tensor(), a[1].tensor(), opt(a[2]),
                                                       a[3].string(), a[4].to_int(),
                                                       a[5].to_double(), true)};
           },
       .error_cases = [] { return class_loss_errors(true); },
       .grad_samples = [](std::mt19937_64& rng) { return class_loss_grad_samples(rng, true); }});
  register_op_info(
      {.name = "nll_loss",
       .samples = [](ScalarType dt,
                     std::mt19937_64& rng) { return class_loss_samples(dt, rng, false); },
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{ref_class_loss(a[0].tensor(), a[1].tensor(), opt(a[2]),
                                                       a[3].string(), a[4].to_int(), 0.0, false)};
           },
       .error_cases = [] { return class_loss_errors(false); },
       .grad_samples = [](std::mt19937_64& rng) { return class_loss_grad_samples(rng, false); }});
  register_op_info({.name = "mse_loss",
                    .samples = mse_samples,
                    .reference = ref_mse,
                    .error_cases =
                        [] {
                          return std::vector<ErrorCase>{
                              {{zeros({2, 3}), zeros({4}), std::string("mean")},
                               ErrorKind::Shape,
                               "[2, 3] vs [4]"},
                              {{zeros({2, 3}), zeros({2, 3}), std::string("max")},
                               ErrorKind::Value,
                               "reduction max"},
                              {{zeros({2}, kInt64), zeros({2}, kInt64), std::string("mean")},
                               ErrorKind::DType,
                               "int64 input"}};
                        },
                    .grad_samples = mse_grad_samples});
  register_op_info({.name = "binary_cross_entropy_with_logits",
                    .samples = bce_samples,
                    .reference = ref_bce,
                    .error_cases = [] {
                      auto a = [](Tensor x, Tensor t, IValue w, IValue pw, const char* red) {
                        return Stack{x, t, w, pw, std::string(red)};
                      };
                      return std::vector<ErrorCase>{
                          {a(zeros({2, 3}), zeros({3}), IValue(), IValue(), "mean"),
                           ErrorKind::Value, "target [3] for input [2, 3]"},
                          {a(zeros({2, 3}), zeros({2, 3}), zeros({4}), IValue(), "mean"),
                           ErrorKind::Shape, "weight [4]"},
                          {a(zeros({2, 3}), zeros({2, 3}), IValue(), zeros({2, 3, 1}), "mean"),
                           ErrorKind::Shape, "pos_weight [2, 3, 1]"},
                          {a(zeros({2, 3}), zeros({2, 3}), IValue(), IValue(), "avg"),
                           ErrorKind::Value, "reduction avg"}};
                    }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
