// CPU kernels of the nn op family (src/ops/nn_*.cpp): normalizations, embedding, attention and
// losses. Meta functions have validated shapes and created the outputs; kernels fill them.
// Floating inputs of reduced precision (float16, bfloat16) compute in float (opmath_t).
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln::cpu {

// ---- normalization (norm.cpp) ----

// Normalizes each of the M rows of N elements of `input` (any layout). weight/bias: N elements
// or undefined. out: input's shape; mean/rstd: M elements, all contiguous.
void layer_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, double eps,
                int64_t M, int64_t N, const Tensor& out, const Tensor& mean, const Tensor& rstd);

// input (N, C, *). Training: batch statistics per channel written to save_mean/save_invstd
// (C elements) and blended into running_mean/running_var when defined (unbiased variance).
// Eval: normalizes with the running statistics; save_mean/save_invstd are empty.
void batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, bool training,
                double momentum, double eps, const Tensor& out, const Tensor& save_mean,
                const Tensor& save_invstd);

// input (N, C, *), statistics over each (sample, group of C / groups channels); mean/rstd (N, G).
void group_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t groups,
                double eps, const Tensor& out, const Tensor& mean, const Tensor& rstd);

// ---- normalization backward (norm_backward.cpp; Note [Normalization backward]) ----
// Outputs that are undefined are not computed. grad_input: contiguous, input's shape;
// grad_weight / grad_bias: contiguous, one value per feature (N for layer_norm, C otherwise).

// M rows of N as layer_norm; mean/rstd: M values; weight: N values or undefined (all ones).
void layer_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, int64_t M, int64_t N,
                         const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias);

// input (N, C, *); mean/invstd: C values. training: the statistics are the batch's own (their
// dependence on the input is differentiated); otherwise they are constants (eval mode).
void batch_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                         const Tensor& mean, const Tensor& invstd, bool training,
                         const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias);

// input (N, C, *); mean/rstd: (N, groups) values; weight: C values or undefined.
void group_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, int64_t groups,
                         const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias);

// ---- embedding (embedding.cpp) ----

// out[i, :] = weight[indices[i], :]. IndexError (naming `embedding`) for an index outside
// [0, weight.size(0)).
void embedding(const Tensor& weight, const Tensor& indices, const Tensor& out);
// out (num_weights, D) = the sum of the rows of grad (indices' shape + [D]) that each index
// picked; the padding_idx row (wrapped when negative) stays zero.
void embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                        std::optional<int64_t> padding_idx, const Tensor& out);

// ---- softmax (softmax.cpp) ----

// softmax (log = false) or log_softmax of one contiguous float32 row, vectorized; y may be x.
// A NaN anywhere makes the row NaN. Returns the row's max (NaN when the row has one); a row that
// is all -inf (max -inf) comes back as NaN, which a caller with other rules (attention's fully
// masked rows) replaces.
float softmax_row_f32(const float* x, float* y, int64_t n, bool log);

// ---- attention (attention.cpp) ----

// q (B..., L, E), k (B..., S, E), v (B..., S, Ev) already broadcast to one batch shape; mask
// (B..., L, S) broadcast view, bool (true = keep) or floating (added), or undefined.
void scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, bool is_causal, double scale,
                                  const Tensor& out);
// grad (B..., L, Ev) and the forward's inputs as above; grad_q/k/v contiguous in q/k/v's shapes,
// each undefined when not wanted (Note [Attention backward] in attention.cpp).
void scaled_dot_product_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                           const Tensor& v, const Tensor& mask, bool is_causal,
                                           double scale, const Tensor& grad_q, const Tensor& grad_k,
                                           const Tensor& grad_v);

// ---- losses (loss.cpp) ----

enum class Reduction { None, Mean, Sum };

// Class-index losses. input (N, C, d...) viewed as `outer` samples x C classes x `inner`
// positions; target: outer * inner class indices (int64, contiguous). log_softmax: apply
// log-softmax over classes first (cross_entropy) or take input as log-probabilities (nll_loss).
// out: (N, d...) for Reduction::None, 0-dim otherwise.
void nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction,
              int64_t ignore_index, double label_smoothing, bool log_softmax, int64_t outer,
              int64_t C, int64_t inner, const Tensor& out);

// Class-probability cross entropy (target has input's shape).
void cross_entropy_probs(const Tensor& input, const Tensor& target, const Tensor& weight,
                         Reduction reduction, double label_smoothing, int64_t outer, int64_t C,
                         int64_t inner, const Tensor& out);

// d cross_entropy / d input for class-index targets (Note [Cross-entropy gradient]), written to
// grad_input (contiguous, input's shape). grad_output: the loss's shape (one value per sample for
// Reduction::None, else 0-dim).
void cross_entropy_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                            const Tensor& weight, Reduction reduction, int64_t ignore_index,
                            double label_smoothing, int64_t outer, int64_t C, int64_t inner,
                            const Tensor& grad_input);

// input, target (and weight, pos_weight for BCE) already broadcast to out's pre-reduction shape.
void mse_loss(const Tensor& input, const Tensor& target, Reduction reduction, const Tensor& out);
void binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                      const Tensor& weight, const Tensor& pos_weight,
                                      Reduction reduction, const Tensor& out);

}  // namespace kiln::cpu
