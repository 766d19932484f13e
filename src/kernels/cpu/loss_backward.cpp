// The fused cross-entropy gradient (the backward of the losses' hot path).
//
// Note [Cross-entropy gradient]
// For class-index targets, sample s with target t (not ignored), class weights w (all 1 when
// absent) and label smoothing eps over C classes, PyTorch's loss is
//   loss_s = -(1 - eps) w_t log p_t - (eps / C) sum_c w_c log p_c,   p = softmax(x_s),
// so with the "target distribution" T_c = (1 - eps) w_t [c == t] + (eps / C) w_c and
// alpha = sum_c T_c = (1 - eps) w_t + (eps / C) sum_c w_c,
//   d loss_s / d x_c = alpha p_c - T_c.
// The gradient is that, scaled per sample by the incoming gradient: g_s ('none'), g ('sum') or
// g / W ('mean', W = the summed weight of the non-ignored targets); ignored samples get zeros.
// One row is one pass for the max, one for exp (stored) and its sum, one to scale: the same
// three passes as the forward softmax, with no log and no one-hot tensor.
#include <cmath>
#include <limits>
#include <vector>

#include "src/kernels/cpu/loss_utils.h"
#include "src/kernels/cpu/nn_kernels.h"
#include "src/kernels/cpu/norm_utils.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// y = alpha_g * softmax(x) - smooth * w (w null: all ones) over one contiguous row of n values,
// A = float or double. alpha_g and smooth already include the sample's gradient scale.
template <typename A>
void cross_entropy_grad_row(const A* x, A* y, int64_t n, A alpha_g, A smooth, const A* w) {
  const A k = alpha_g / max_and_exp_sum(x, n, y).second;
  if (smooth == A(0)) {
    for (int64_t j = 0; j < n; ++j) y[j] *= k;
  } else if (w == nullptr) {
    for (int64_t j = 0; j < n; ++j) y[j] = y[j] * k - smooth;
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = y[j] * k - smooth * w[j];
  }
}

}  // namespace

void cross_entropy_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                            const Tensor& weight, Reduction reduction, int64_t ignore_index,
                            double label_smoothing, int64_t outer, int64_t C, int64_t inner,
                            const Tensor& grad_input) {
  constexpr std::string_view kOp = "cross_entropy_backward";
  const std::vector<int64_t> idx = class_indices(target, C, ignore_index, kOp, input.sizes());
  const int64_t n = outer * inner;
  if (n == 0 || C == 0) return;
  const std::vector<double> w =
      weight.defined() ? weight.to_vector<double>() : std::vector<double>();
  auto w_at = [&](int64_t c) { return w.empty() ? 1.0 : w[static_cast<size_t>(c)]; };
  double w_sum = 0;
  for (int64_t c = 0; c < C; ++c) w_sum += w_at(c);
  // The gradient scale of each sample (Note [Cross-entropy gradient]); 0 for ignored ones.
  std::vector<double> scale(static_cast<size_t>(n), 0.0);
  const std::vector<double> g = grad_output.to_vector<double>();
  double denom = 1.0;
  if (reduction == Reduction::Mean) {
    denom = 0;
    for (int64_t s = 0; s < n; ++s)
      if (idx[static_cast<size_t>(s)] >= 0) denom += w_at(idx[static_cast<size_t>(s)]);
  }
  for (int64_t s = 0; s < n; ++s) {
    if (idx[static_cast<size_t>(s)] < 0) continue;
    scale[static_cast<size_t>(s)] =
        (reduction == Reduction::None ? g[static_cast<size_t>(s)] : g[0]) / denom;
  }
  const double eps = label_smoothing, smooth = eps / static_cast<double>(C);
  const Tensor x = input.contiguous();
  visit_dtype_in<dtypes::kFloating>(x.dtype(), kOp, [&]<typename T>() {
    using A = opmath_t<T>;
    constexpr bool kDirect = std::is_same_v<T, A>;
    const T* xp = x.data_ptr<T>();
    T* yp = grad_input.data_ptr<T>();
    std::vector<A> wa(w.begin(), w.end());
    const A* wp = wa.empty() ? nullptr : wa.data();
    parallel::parallel_for_if(n * C > kParallelGrain, 0, n, [&](int64_t s_begin, int64_t s_end) {
      // Rows that are strided (inner > 1) or of a reduced float type go through a buffer.
      const bool buffered = !kDirect || inner > 1;
      std::vector<A> xbuf(buffered ? C : 0), ybuf(buffered ? C : 0);
      for (int64_t s = s_begin; s < s_end; ++s) {
        const int64_t o = s / inner, d = s % inner;
        const int64_t base = o * C * inner + d;
        const int64_t t = idx[static_cast<size_t>(s)];
        if (t < 0) {
          for (int64_t c = 0; c < C; ++c) yp[base + c * inner] = T(0);
          continue;
        }
        const double gs = scale[static_cast<size_t>(s)];
        const double alpha = (1 - eps) * w_at(t) + smooth * w_sum;
        const A* xr = nullptr;
        A* yr = nullptr;
        if (buffered) {
          for (int64_t c = 0; c < C; ++c) xbuf[c] = static_cast<A>(xp[base + c * inner]);
          xr = xbuf.data();
          yr = ybuf.data();
        } else {
          if constexpr (kDirect) {
            xr = xp + base;
            yr = yp + base;
          }
        }
        cross_entropy_grad_row<A>(xr, yr, C, static_cast<A>(gs * alpha),
                                  static_cast<A>(gs * smooth), wp);
        yr[t] -= static_cast<A>(gs * (1 - eps) * w_at(t));
        if (buffered) {
          for (int64_t c = 0; c < C; ++c) yp[base + c * inner] = static_cast<T>(yr[c]);
        }
      }
    });
  });
}

}  // namespace kiln::cpu
