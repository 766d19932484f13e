// scaled_dot_product_attention and its backward: for each batch entry, P = softmax(scale * Q K^T +
// mask) and O = P V, with the products in OpenBLAS and the masked softmax in between. Batch
// entries run in parallel (OpenBLAS runs single-threaded inside an OpenMP region); a single entry
// lets BLAS use the threads instead.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "src/kernels/cpu/blas_typed.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/nn_kernels.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// c = alpha * op(a) op(b) for an [m, n] c; an empty product (k == 0) is zeros.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  blas_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
            static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
            static_cast<int>(lda), b, static_cast<int>(ldb), T(0), c, static_cast<int>(ldc));
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
  if constexpr (std::is_same_v<A, float>) {
    if (softmax_row_f32(row, row, n, /*log=*/false) == -std::numeric_limits<float>::infinity())
      std::fill(row, row + n, 0.0f);
    return;
  }
  A mx = -std::numeric_limits<A>::infinity();
  for (int64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  if (mx == -std::numeric_limits<A>::infinity()) {
    bool nan = false;
    for (int64_t j = 0; j < n; ++j) nan = nan || std::isnan(row[j]);
    std::fill(row, row + n, nan ? std::numeric_limits<A>::quiet_NaN() : A(0));
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

// The attention probabilities of one call: P = softmax(scale * Q K^T + mask) per batch entry,
// shared by the forward and the backward (which recomputes P instead of saving it) so that both
// see the same P, masked rows included.
template <typename T, typename A>
class Probabilities {
 public:
  Probabilities(const Tensor& q, const Tensor& k, const Tensor& mask, bool is_causal, double scale,
                int64_t B)
      : q_(q), k_(k), is_causal_(is_causal), scale_(static_cast<A>(scale)) {
    const int64_t nb = q.dim() - 2;
    qo_ = batch_offsets(q, nb, B);
    ko_ = batch_offsets(k, nb, B);
    // A float mask is read in the compute type (a copy when its dtype differs); a bool mask as
    // bytes. Offsets and strides are those of the tensor actually read.
    mask_ = mask.defined() && mask.dtype() != kBool ? mask.to(scalar_type_of<A>) : mask;
    if (mask_.defined()) {
      mo_ = batch_offsets(mask_, nb, B);
      mrs_ = mask_.stride(-2);
      mcs_ = mask_.stride(-1);
      if (mask_.dtype() == kBool)
        bmask_ = mask_.data_ptr<bool>();
      else
        amask_ = mask_.data_ptr<A>();
    }
  }

  // One thread's copies of operands BLAS cannot read in place.
  struct Scratch {
    std::vector<A> q, k;
  };

  // Fills P ([L, S], row-major) for batch entry b; returns Q and K as BLAS reads them.
  void compute(int64_t b, Scratch& scratch, A* P, const A*& Q, int64_t& ldq, const A*& K,
               int64_t& ldk) const {
    constexpr A kNegInf = -std::numeric_limits<A>::infinity();
    const int64_t L = q_.size(-2), E = q_.size(-1), S = k_.size(-2);
    Q = blas_matrix<T, A>(q_, qo_[b], scratch.q, ldq);
    K = blas_matrix<T, A>(k_, ko_[b], scratch.k, ldk);
    gemm(false, true, L, S, E, scale_, Q, ldq, K, ldk, P, S);
    for (int64_t i = 0; i < L; ++i) {
      A* row = P + i * S;
      if (is_causal_)
        for (int64_t j = i + 1; j < S; ++j) row[j] = kNegInf;
      if (bmask_ != nullptr) {
        const bool* keep = bmask_ + mo_[b] + i * mrs_;
        for (int64_t j = 0; j < S; ++j)
          if (!keep[j * mcs_]) row[j] = kNegInf;
      } else if (amask_ != nullptr) {
        const A* add = amask_ + mo_[b] + i * mrs_;
        for (int64_t j = 0; j < S; ++j) row[j] += add[j * mcs_];
      }
      softmax_row(row, S);
    }
  }

 private:
  const Tensor& q_;
  const Tensor& k_;
  bool is_causal_;
  A scale_;
  std::vector<int64_t> qo_, ko_, mo_;
  Tensor mask_;
  int64_t mrs_ = 0, mcs_ = 0;
  const bool* bmask_ = nullptr;
  const A* amask_ = nullptr;
};

// Runs body(b, state) for every batch entry: in parallel over the entries when there are
// several and enough work, else on the calling thread (BLAS then uses the threads). Only a
// parallel run opens a region: OpenBLAS's region inside a one-thread region is nested, and libgomp
// creates fresh threads for it on every call (see gemm_blas in blas.cpp). `make_state` builds one
// per-thread state passed to every body call of that thread.
template <typename MakeState, typename Body>
void for_each_entry(int64_t B, int64_t work, MakeState make_state, Body body) {
  if (B > 1 && work > kParallelGrain) {
    parallel::parallel_for_if(true, 0, B, [&](int64_t b_begin, int64_t b_end) {
      auto state = make_state();
      for (int64_t b = b_begin; b < b_end; ++b) body(b, state);
    });
  } else {
    auto state = make_state();
    for (int64_t b = 0; b < B; ++b) body(b, state);
  }
}

// Writes a [rows, cols] compute-type result to T memory whose rows are `ld` apart (Note [Attention
// outputs in the projections' layout] in src/ops/nn_attention.cpp): in place when T is the compute
// type, else through the thread's `scratch` (reused across batch entries), converted by finish().
template <typename T, typename A>
class Output {
 public:
  Output(T* data, int64_t rows, int64_t cols, int64_t ld, std::vector<A>& scratch)
      : data_(data), rows_(rows), cols_(cols), ld_(ld), scratch_(scratch) {
    if constexpr (!std::is_same_v<T, A>) scratch_.resize(static_cast<size_t>(rows * cols));
  }
  A* data() {
    if constexpr (std::is_same_v<T, A>) {
      return data_;
    } else {
      return scratch_.data();
    }
  }
  int64_t ld() const { return std::is_same_v<T, A> ? ld_ : cols_; }
  void finish() {
    if constexpr (!std::is_same_v<T, A>)
      for (int64_t r = 0; r < rows_; ++r)
        for (int64_t c = 0; c < cols_; ++c)
          data_[r * ld_ + c] = static_cast<T>(scratch_[static_cast<size_t>(r * cols_ + c)]);
  }

 private:
  T* data_;
  int64_t rows_, cols_, ld_;
  std::vector<A>& scratch_;
};

}  // namespace

void scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, bool is_causal, double scale,
                                  const Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t nb = q.dim() - 2;
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  const int64_t B = out.numel() / (L * Ev);
  const std::vector<int64_t> vo = batch_offsets(v, nb, B), oo = batch_offsets(out, nb, B);
  visit_dtype_in<dtypes::kFloating>(q.dtype(), "scaled_dot_product_attention", [&]<typename T>() {
    using A = opmath_t<T>;
    const Probabilities<T, A> probabilities(q, k, mask, is_causal, scale, B);
    struct State {
      typename Probabilities<T, A>::Scratch scratch;
      std::vector<A> v, scores, out;
    };
    auto make_state = [&] {
      State st;
      st.scores.resize(static_cast<size_t>(L * S));
      return st;
    };
    for_each_entry(B, B * L * S * (E + Ev), make_state, [&](int64_t b, State& st) {
      const A *Q, *K;
      int64_t ldq = 1, ldk = 1, ldv = 1;
      A* P = st.scores.data();
      probabilities.compute(b, st.scratch, P, Q, ldq, K, ldk);
      const A* V = blas_matrix<T, A>(v, vo[b], st.v, ldv);
      Output<T, A> O(out.data_ptr<T>() + oo[b], L, Ev, out.stride(-2), st.out);
      gemm(false, false, L, Ev, S, A(1), P, S, V, ldv, O.data(), O.ld());  // no keys: zeros
      O.finish();
    });
  });
}

// Note [Attention backward]
// With P recomputed from q and k (the forward saves nothing but its inputs):
//   dv = P^T g, dP = g v^T, dS = P * (dP - rowsum(dP * P)), dq = scale dS k, dk = scale dS^T q.
// One batch entry (a head) at a time, so P and dS stay in the thread's cache between the five
// products, instead of five batched matmuls and softmax-backward passes over [B, L, S] tensors
// in memory (which also needed copies of the heads into batched layouts). A masked-out score has
// P = 0, so it gets no gradient; a fully masked row is zeros and passes none on.
void scaled_dot_product_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                           const Tensor& v, const Tensor& mask, bool is_causal,
                                           double scale, const Tensor& grad_q, const Tensor& grad_k,
                                           const Tensor& grad_v) {
  const int64_t nb = q.dim() - 2;
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  int64_t B = 1;
  for (int64_t d = 0; d < nb; ++d) B *= q.size(d);
  if (B == 0) return;
  const bool want_v = grad_v.defined(), want_scores = grad_q.defined() || grad_k.defined();
  const std::vector<int64_t> vo = batch_offsets(v, nb, B), go = batch_offsets(grad, nb, B);
  // The gradients' batch entries (Note [Attention outputs in the projections' layout]); an
  // undefined gradient (not wanted) has none.
  auto offsets_of = [&](const Tensor& t) {
    return t.defined() ? batch_offsets(t, nb, B) : std::vector<int64_t>{};
  };
  const std::vector<int64_t> dqo = offsets_of(grad_q), dko = offsets_of(grad_k),
                             dvo = offsets_of(grad_v);
  visit_dtype_in<dtypes::kFloating>(
      q.dtype(), "scaled_dot_product_attention_backward", [&]<typename T>() {
        using A = opmath_t<T>;
        const Probabilities<T, A> probabilities(q, k, mask, is_causal, scale, B);
        struct State {
          typename Probabilities<T, A>::Scratch scratch;
          std::vector<A> v, g, scores, grad_scores, out;
        };
        auto make_state = [&] {
          State st;
          st.scores.resize(static_cast<size_t>(L * S));
          if (want_scores) st.grad_scores.resize(static_cast<size_t>(L * S));
          return st;
        };
        for_each_entry(B, B * L * S * (2 * E + 3 * Ev), make_state, [&](int64_t b, State& st) {
          const A *Q, *K;
          int64_t ldq = 1, ldk = 1, ldv = 1, ldg = 1;
          A* P = st.scores.data();
          probabilities.compute(b, st.scratch, P, Q, ldq, K, ldk);
          const A* G = blas_matrix<T, A>(grad, go[b], st.g, ldg);
          if (want_v) {
            Output<T, A> dv(grad_v.data_ptr<T>() + dvo[b], S, Ev, grad_v.stride(-2), st.out);
            gemm(true, false, S, Ev, L, A(1), P, S, G, ldg, dv.data(), dv.ld());
            dv.finish();
          }
          if (!want_scores) return;
          const A* V = blas_matrix<T, A>(v, vo[b], st.v, ldv);
          A* dS = st.grad_scores.data();
          gemm(false, true, L, S, Ev, A(1), G, ldg, V, ldv, dS, S);
          for (int64_t i = 0; i < L; ++i) {
            const A* p = P + i * S;
            A* ds = dS + i * S;
            A dot = 0;
            for (int64_t j = 0; j < S; ++j) dot += ds[j] * p[j];
            for (int64_t j = 0; j < S; ++j) ds[j] = p[j] * (ds[j] - dot);
          }
          const A sc = static_cast<A>(scale);
          if (grad_q.defined()) {
            Output<T, A> dq(grad_q.data_ptr<T>() + dqo[b], L, E, grad_q.stride(-2), st.out);
            gemm(false, false, L, E, S, sc, dS, S, K, ldk, dq.data(), dq.ld());
            dq.finish();
          }
          if (grad_k.defined()) {
            Output<T, A> dk(grad_k.data_ptr<T>() + dko[b], S, E, grad_k.stride(-2), st.out);
            gemm(true, false, S, E, L, sc, dS, S, Q, ldq, dk.data(), dk.ld());
            dk.finish();
          }
        });
      });
}

}  // namespace kiln::cpu
