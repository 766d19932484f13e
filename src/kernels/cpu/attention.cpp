// scaled_dot_product_attention: for each batch entry, P = softmax(scale * Q K^T + mask) and
// O = P V, with both products in OpenBLAS and the masked softmax in between. Batch entries run in
// parallel (OpenBLAS runs single-threaded inside an OpenMP region); a single entry lets BLAS
// use the threads instead.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "src/kernels/cpu/blas_typed.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/nn_kernels.h"

namespace kiln::cpu {
namespace {

template <typename T>
void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc) {
  blas_gemm(CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
            static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
            static_cast<int>(ldb), T(0), c, static_cast<int>(ldc));
}

// Element offset of batch entry b in a tensor whose leading `nb` dims are the batch dims.
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nb, int64_t B) {
  std::vector<int64_t> off(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int64_t rem = b, o = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      o += (rem % t.size(d)) * t.stride(d);
      rem /= t.size(d);
    }
    off[static_cast<size_t>(b)] = o;
  }
  return off;
}

// A (rows x cols) matrix of t's last two dims at element offset `off`, as BLAS can read it:
// t's own memory when it already is row-major A with a usable leading dim, else a copy in buf.
template <typename T, typename A>
const A* blas_matrix(const Tensor& t, int64_t off, std::vector<A>& buf, int64_t& ld) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t rs = t.stride(-2), cs = t.stride(-1);
  const T* p = static_cast<const T*>(t.data_ptr()) + off;
  if constexpr (std::is_same_v<T, A>) {
    if ((cs == 1 || cols == 1) && (rs >= std::max<int64_t>(cols, 1) || rows == 1)) {
      ld = std::max<int64_t>({rs, cols, 1});
      return p;
    }
  }
  buf.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) buf[i * cols + j] = static_cast<A>(p[i * rs + j * cs]);
  ld = std::max<int64_t>(cols, 1);
  return buf.data();
}

// Masks and normalizes one row of scores in place. A row with every score -inf (all keys masked)
// becomes zeros, as PyTorch's math backend (_safe_softmax) gives.
template <typename A>
void softmax_row(A* row, int64_t n) {
  A mx = -std::numeric_limits<A>::infinity();
  for (int64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  if (mx == -std::numeric_limits<A>::infinity()) {
    bool nan = false;
    for (int64_t j = 0; j < n; ++j) nan = nan || std::isnan(row[j]);
    std::fill(row, row + n, nan ? std::numeric_limits<A>::quiet_NaN() : A(0));
    return;
  }
  if constexpr (std::is_same_v<A, float>) {
    softmax_row_f32(row, row, n, /*log=*/false);
    return;
  }
  A sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - mx);
    sum += row[j];
  }
  const A inv = A(1) / sum;
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

}  // namespace

void scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, bool is_causal, double scale,
                                  const Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t nb = q.dim() - 2;
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  const int64_t B = out.numel() / (L * Ev);
  const std::vector<int64_t> qo = batch_offsets(q, nb, B), ko = batch_offsets(k, nb, B),
                             vo = batch_offsets(v, nb, B);
  visit_dtype_in<dtypes::kFloating>(q.dtype(), "scaled_dot_product_attention", [&]<typename T>() {
    using A = opmath_t<T>;
    constexpr A kNegInf = -std::numeric_limits<A>::infinity();
    T* op = out.data_ptr<T>();
    // A float mask is read in the compute type (a copy when its dtype differs); a bool mask as
    // bytes. Offsets and strides are those of the tensor actually read.
    const Tensor m = mask.defined() && mask.dtype() != kBool ? mask.to(scalar_type_of<A>) : mask;
    const std::vector<int64_t> mo = m.defined() ? batch_offsets(m, nb, B) : std::vector<int64_t>();
    const int64_t mrs = m.defined() ? int64_t{m.stride(-2)} : 0,
                  mcs = m.defined() ? int64_t{m.stride(-1)} : 0;
    const bool* bmask = m.defined() && m.dtype() == kBool ? m.data_ptr<bool>() : nullptr;
    const A* amask = m.defined() && m.dtype() != kBool ? m.data_ptr<A>() : nullptr;
    const int64_t work = B * L * S * (E + Ev);
    // Only a parallel run opens a region: OpenBLAS's region inside a one-thread region is nested,
    // and libgomp creates fresh threads for it on every call (see gemm_blas in blas.cpp).
    auto worker = [&](bool in_team) {
      std::vector<A> qbuf, kbuf, vbuf, scores(static_cast<size_t>(L * S)), obuf;
      auto run_one = [&](int64_t b) {
        int64_t ldq = 1, ldk = 1, ldv = 1;
        const A* Q = blas_matrix<T, A>(q, qo[b], qbuf, ldq);
        const A* K = blas_matrix<T, A>(k, ko[b], kbuf, ldk);
        const A* V = blas_matrix<T, A>(v, vo[b], vbuf, ldv);
        A* P = scores.data();
        if (S > 0) {
          if (E > 0) {
            gemm(true, L, S, E, static_cast<A>(scale), Q, ldq, K, ldk, P, S);
          } else {
            std::fill(scores.begin(), scores.end(), A(0));  // an empty dot product
          }
        }
        for (int64_t i = 0; i < L; ++i) {
          A* row = P + i * S;
          if (is_causal)
            for (int64_t j = i + 1; j < S; ++j) row[j] = kNegInf;
          if (bmask != nullptr) {
            const bool* keep = bmask + mo[b] + i * mrs;
            for (int64_t j = 0; j < S; ++j)
              if (!keep[j * mcs]) row[j] = kNegInf;
          } else if (amask != nullptr) {
            const A* add = amask + mo[b] + i * mrs;
            for (int64_t j = 0; j < S; ++j) row[j] += add[j * mcs];
          }
          softmax_row(row, S);
        }
        A* O;
        if constexpr (std::is_same_v<T, A>) {
          O = op + b * L * Ev;
        } else {
          obuf.resize(static_cast<size_t>(L * Ev));
          O = obuf.data();
        }
        if (S > 0) {
          gemm(false, L, Ev, S, A(1), P, S, V, ldv, O, Ev);
        } else {
          std::fill(O, O + L * Ev, A(0));  // no keys: an empty weighted sum
        }
        if constexpr (!std::is_same_v<T, A>) {
          for (int64_t i = 0; i < L * Ev; ++i) op[b * L * Ev + i] = static_cast<T>(O[i]);
        }
      };
      if (in_team) {
#pragma omp for schedule(static)
        for (int64_t b = 0; b < B; ++b) run_one(b);
      } else {
        for (int64_t b = 0; b < B; ++b) run_one(b);
      }
    };
    if (B > 1 && work > kParallelGrain) {
#pragma omp parallel
      worker(true);
    } else {
      worker(false);
    }
  });
}

}  // namespace kiln::cpu
