// Reference implementations for the linalg OpInfos: naive loops over to_vector<T>() values, in
// float64 for floating dtypes and in wrapping uint64 arithmetic for integer dtypes (exactly the
// modular result once truncated to the dtype). No Kiln kernel beyond copies is involved.
#include "tests/ops/linalg_ref.h"

#include <cmath>

namespace kiln::testing {

std::vector<int64_t> shape_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

RefValues ref_values(const Tensor& t) {
  RefValues r;
  r.shape = shape_of(t);
  r.floating = is_floating(t.dtype());
  if (r.floating) {
    r.f = t.to_vector<double>();
  } else {
    r.u = t.to_vector<uint64_t>();
  }
  return r;
}

Tensor ref_tensor(const RefValues& r, ScalarType dtype) {
  if (r.floating) return from_vector(r.f, r.shape).to(dtype);
  return from_vector(r.u, r.shape).to(dtype);
}

// Strides of a row-major shape.
static std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

RefValues ref_batched_matmul(const RefValues& a, const RefValues& b) {
  const size_t da = a.shape.size(), db = b.shape.size();
  const int64_t n = a.shape[da - 2], k = a.shape[da - 1], p = b.shape[db - 1];
  // Broadcast batch shape (right-aligned).
  const size_t nb = std::max(da, db) - 2;
  std::vector<int64_t> batch(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t ia = static_cast<int64_t>(i) - static_cast<int64_t>(nb - (da - 2));
    const int64_t ib = static_cast<int64_t>(i) - static_cast<int64_t>(nb - (db - 2));
    const int64_t sa = ia >= 0 ? a.shape[ia] : 1, sb = ib >= 0 ? b.shape[ib] : 1;
    batch[i] = sa == 1 ? sb : sa;
  }
  RefValues out;
  out.floating = a.floating;
  out.shape = batch;
  out.shape.push_back(n);
  out.shape.push_back(p);
  const int64_t total_batch = numel_of(batch);
  const auto sa = row_major(a.shape), sb = row_major(b.shape);
  out.f.assign(a.floating ? static_cast<size_t>(total_batch * n * p) : 0, 0.0);
  out.u.assign(a.floating ? 0 : static_cast<size_t>(total_batch * n * p), 0);
  for (int64_t bi = 0; bi < total_batch; ++bi) {
    // Unravel bi over `batch`, then map into a's and b's batch dims (size 1 = broadcast).
    int64_t rem = bi, off_a = 0, off_b = 0;
    for (int64_t d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      const int64_t ia = d - static_cast<int64_t>(nb - (da - 2));
      const int64_t ib = d - static_cast<int64_t>(nb - (db - 2));
      if (ia >= 0 && a.shape[ia] != 1) off_a += idx * sa[ia];
      if (ib >= 0 && b.shape[ib] != 1) off_b += idx * sb[ib];
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < p; ++j) {
        const size_t o = static_cast<size_t>((bi * n + i) * p + j);
        for (int64_t kk = 0; kk < k; ++kk) {
          const size_t ai = static_cast<size_t>(off_a + i * k + kk);
          const size_t bj = static_cast<size_t>(off_b + kk * p + j);
          if (a.floating) {
            out.f[o] += a.f[ai] * b.f[bj];
          } else {
            out.u[o] += a.u[ai] * b.u[bj];
          }
        }
      }
  }
  return out;
}

static int64_t list_at(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

static int64_t pooled_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode) {
  const double span = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t o = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

PoolWindow pool_window(const Stack& a, size_t self_arg, bool has_dilation, bool ceil_mode) {
  const Tensor& x = a[self_arg].tensor();
  PoolWindow g{};
  g.h = x.size(-2), g.w = x.size(-1);
  g.planes = x.numel() / (g.h * g.w);
  IntArrayRef k = a[self_arg + 1].int_list(), s = a[self_arg + 2].int_list(),
              p = a[self_arg + 3].int_list();
  g.kh = list_at(k, 0), g.kw = list_at(k, 1);
  g.sh = s.empty() ? g.kh : list_at(s, 0), g.sw = s.empty() ? g.kw : list_at(s, 1);
  g.ph = list_at(p, 0), g.pw = list_at(p, 1);
  g.dh = g.dw = 1;
  if (has_dilation) {
    IntArrayRef d = a[self_arg + 4].int_list();
    g.dh = list_at(d, 0), g.dw = list_at(d, 1);
  }
  g.oh = pooled_size(g.h, g.kh, g.ph, g.sh, g.dh, ceil_mode);
  g.ow = pooled_size(g.w, g.kw, g.pw, g.sw, g.dw, ceil_mode);
  return g;
}

std::vector<int64_t> pooled_shape(const Tensor& x, int64_t oh, int64_t ow) {
  std::vector<int64_t> s = shape_of(x);
  s[s.size() - 2] = oh;
  s[s.size() - 1] = ow;
  return s;
}

}  // namespace kiln::testing
