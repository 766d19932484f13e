#include "kiln/nn/attention.h"

#include <cmath>
#include <limits>

#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/ternary.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

// A bool mask (true = masked out) as an additive float mask: -inf where masked, 0 elsewhere; a
// floating mask is converted to the computation's dtype.
Tensor additive_mask(const Tensor& mask, ScalarType dtype) {
  if (mask.dtype() == kBool)
    return zeros(mask.sym_sizes(), dtype)
        .masked_fill(mask, -std::numeric_limits<double>::infinity());
  return mask.to(dtype);
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads,
                                       MultiheadAttentionOptions options)
    : Module("MultiheadAttention"),
      embed_dim(check_positive("MultiheadAttention", "embed_dim", embed_dim)),
      num_heads(check_positive("MultiheadAttention", "num_heads", num_heads)),
      head_dim(embed_dim / num_heads),
      options(options),
      in_proj_weight(register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}))),
      in_proj_bias(
          register_parameter("in_proj_bias", options.bias ? empty({3 * embed_dim}) : Tensor())) {
  KILN_CHECK(head_dim * num_heads == embed_dim, ValueError,
             "MultiheadAttention: embed_dim ({}) must be divisible by num_heads ({})", embed_dim,
             num_heads);
  KILN_CHECK(options.dropout >= 0.0 && options.dropout <= 1.0, ValueError,
             "MultiheadAttention: dropout must be in [0, 1], got {}", options.dropout);
  out_proj =
      register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, options.bias));
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

Tensor MultiheadAttention::forward(const Tensor& input) {
  return forward(input, input, input, {}, /*need_weights=*/false).first;
}

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value,
                                                      const Tensor& key_padding_mask,
                                                      bool need_weights, const Tensor& attn_mask,
                                                      bool average_attn_weights) {
  // PyTorch's MultiheadAttention prints no settings; errors name the ones that matter here.
  // Formatted only when a check fails.
  auto who = [&] {
    return fmt::format("MultiheadAttention(embed_dim={}, num_heads={}, batch_first={})", embed_dim,
                       num_heads, py_bool(options.batch_first));
  };
  // ---- shapes ----
  const bool batched = query.dim() == 3;
  KILN_CHECK((query.dim() == 2 || query.dim() == 3) && key.dim() == query.dim() &&
                 value.dim() == query.dim(),
             ShapeError,
             "{}: query, key and value must all be 3-D (batched) or all 2-D (unbatched), got "
             "shapes {}, {}, {}",
             who(), shape_str(query.sym_sizes()), shape_str(key.sym_sizes()),
             shape_str(value.sym_sizes()));
  KILN_CHECK(
      query.size(-1) == embed_dim && key.size(-1) == embed_dim && value.size(-1) == embed_dim,
      ShapeError,
      "{}: query, key and value must have embed_dim = {} features in their last dim, got "
      "shapes {}, {}, {}",
      who(), embed_dim, shape_str(query.sym_sizes()), shape_str(key.sym_sizes()),
      shape_str(value.sym_sizes()));
  KILN_CHECK(shapes_equal(key.sym_sizes(), value.sym_sizes()), ShapeError,
             "{}: key and value must have the same shape, got {} and {}", who(),
             shape_str(key.sym_sizes()), shape_str(value.sym_sizes()));
  // Work in (N, L, E) whatever the layout; unbatched inputs get N = 1.
  auto to_batch_first = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return options.batch_first ? t : t.transpose(0, 1);
  };
  const Tensor q_in = to_batch_first(query), k_in = to_batch_first(key),
               v_in = to_batch_first(value);
  // Sizes stay SymInts, so a traced call keeps the batch and sequence lengths symbolic.
  const SymInt N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);
  const int64_t H = num_heads;
  KILN_CHECK(sizes_equal(k_in.size(0), N), ShapeError,
             "{}: query and key must have the same batch size, got shapes {} and {}", who(),
             shape_str(query.sym_sizes()), shape_str(key.sym_sizes()));

  // ---- masks, merged into one additive mask broadcasting to (N, H, L, S) ----
  const ScalarType dtype = query.dtype();
  Tensor mask;
  if (attn_mask.defined()) {
    KILN_CHECK(attn_mask.dtype() == kBool || attn_mask.is_floating_point(), DTypeError,
               "{}: attn_mask must be bool or floating, got {}", who(),
               dtype_name(attn_mask.dtype()));
    if (attn_mask.dim() == 2) {
      KILN_CHECK(shapes_equal(attn_mask.sym_sizes(), {L, S}), ShapeError,
                 "{}: a 2-D attn_mask must have shape [{}, {}] (target length, source length), "
                 "got {}",
                 who(), L, S, shape_str(attn_mask.sym_sizes()));
      mask = additive_mask(attn_mask, dtype);
    } else {
      KILN_CHECK(attn_mask.dim() == 3 && shapes_equal(attn_mask.sym_sizes(), {N * H, L, S}),
                 ShapeError,
                 "{}: a 3-D attn_mask must have shape [{}, {}, {}] (batch * num_heads, target "
                 "length, source length), got {}",
                 who(), N * H, L, S, shape_str(attn_mask.sym_sizes()));
      mask = additive_mask(attn_mask, dtype).view({N, H, L, S});
    }
  }
  if (key_padding_mask.defined()) {
    KILN_CHECK(key_padding_mask.dtype() == kBool || key_padding_mask.is_floating_point(),
               DTypeError, "{}: key_padding_mask must be bool or floating, got {}", who(),
               dtype_name(key_padding_mask.dtype()));
    const SymDimVector expected = batched ? SymDimVector{N, S} : SymDimVector{S};
    KILN_CHECK(shapes_equal(key_padding_mask.sym_sizes(), expected), ShapeError,
               "{}: key_padding_mask must have shape {} (batch, source length), got {}", who(),
               shape_str(expected), shape_str(key_padding_mask.sym_sizes()));
    Tensor padding = additive_mask(key_padding_mask, dtype).view({N, 1, 1, S});
    mask = mask.defined() ? mask + padding : padding;
  }

  return with_context(*this, [&]() -> std::pair<Tensor, Tensor> {
    // ---- projections into heads: (N, L, E) -> (N, H, L, head_dim) ----
    const int64_t E = embed_dim;
    auto project = [&](const Tensor& x, int64_t which, SymInt len) {
      const Tensor w = in_proj_weight.slice(0, which * E, (which + 1) * E);
      const Tensor b =
          in_proj_bias.defined() ? in_proj_bias.slice(0, which * E, (which + 1) * E) : Tensor();
      return linear(x, w, b).reshape({N, len, H, head_dim}).transpose(1, 2);
    };
    const Tensor q = project(q_in, 0, L), k = project(k_in, 1, S), v = project(v_in, 2, S);

    // ---- attention ----
    const double dropout_p = is_training() ? options.dropout : 0.0;
    Tensor heads, weights;
    if (!need_weights && dropout_p == 0.0) {
      heads = scaled_dot_product_attention(q, k, v, mask);
    } else {
      Tensor scores = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(head_dim)));
      if (mask.defined()) scores = scores + mask;
      weights = softmax(scores, -1);
      if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true);
      heads = matmul(weights, v);
    }
    Tensor out = out_proj->forward(heads.transpose(1, 2).reshape({N, L, E}));

    // ---- back to the caller's layout ----
    if (!batched) {
      out = out.squeeze(0);
    } else if (!options.batch_first) {
      out = out.transpose(0, 1);
    }
    if (!need_weights) return {out, Tensor()};
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.squeeze(0);
    return {out, weights};
  });
}

}  // namespace kiln::nn
