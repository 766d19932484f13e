// scaled_dot_product_attention, the math formulation (no fused flash kernel yet), and its
// backward op (Note [Attention backward] in src/kernels/cpu/attention.cpp).
#include <cmath>

#include "kiln/ops/nn.h"
#include "src/core/tensor_factory.h"
#include "src/ops/nn_backward.h"
#include "src/ops/nn_common.h"

namespace kiln {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// The shapes of one call, SymInt so that symbolic batch and sequence sizes stay symbolic.
struct AttentionShapes {
  SymDimVector batch;  // broadcast batch dims of q, k, v
  SymDimVector q, k, v, mask, out;
};

// The leading dims of t (all but the last two).
SymIntArrayRef batch_dims(const Tensor& t) {
  return t.sym_sizes().slice(0, static_cast<size_t>(t.dim() - 2));
}

SymDimVector with_tail(const SymDimVector& batch, SymInt a, SymInt b) {
  SymDimVector s = batch;
  s.push_back(a);
  s.push_back(b);
  return s;
}

// The size of dim -i (i >= 1) of t.
SymInt size_from_end(const Tensor& t, size_t i) {
  const SymIntArrayRef s = t.sym_sizes();
  return s[s.size() - i];
}

// scaled_dot_product_attention(q, k, v, attn_mask?, dropout_p, is_causal, scale?), from argument
// `first` on (the backward op's arguments start with grad_out).
AttentionShapes check_attention(const OpCall& call, size_t first = 0) {
  const Tensor &q = call.tensor(first), &k = call.tensor(first + 1), &v = call.tensor(first + 2);
  const Tensor mask = call.optional_tensor(first + 3);
  const double dropout_p = call.double_arg(first + 4);
  const bool is_causal = call.bool_arg(first + 5);
  const std::string_view op = call.name();
  KILN_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, ShapeError,
             "{}: query, key and value must have at least 2 dims (..., L, E), (..., S, E), "
             "(..., S, Ev); got shapes {}, {}, {}",
             op, shape_str(q.sym_sizes()), shape_str(k.sym_sizes()), shape_str(v.sym_sizes()));
  KILN_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), DTypeError,
             "{}: query, key and value must have the same dtype, got {}, {}, {}", op,
             dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  const SymInt L = size_from_end(q, 2), E = size_from_end(q, 1), S = size_from_end(k, 2),
               Ev = size_from_end(v, 1);
  KILN_CHECK(E == size_from_end(k, 1), ShapeError,
             "{}: the last dim of query (shape {}) must equal the last dim of key (shape {})", op,
             shape_str(q.sym_sizes()), shape_str(k.sym_sizes()));
  KILN_CHECK(S == size_from_end(v, 2), ShapeError,
             "{}: key (shape {}) and value (shape {}) must have the same sequence length (dim -2)",
             op, shape_str(k.sym_sizes()), shape_str(v.sym_sizes()));
  KILN_CHECK(dropout_p == 0.0, NotImplementedError,
             "{}: dropout_p={} is not supported yet (needs the random generator); pass 0", op,
             dropout_p);
  AttentionShapes s;
  s.batch = sym_broadcast_shapes(op, batch_dims(q), batch_dims(k));
  s.batch = sym_broadcast_shapes(op, s.batch, batch_dims(v));
  s.q = with_tail(s.batch, L, E);
  s.k = with_tail(s.batch, S, E);
  s.v = with_tail(s.batch, S, Ev);
  s.out = with_tail(s.batch, L, Ev);
  s.mask = with_tail(s.batch, L, S);
  if (mask.defined()) {
    KILN_CHECK(!is_causal, ValueError,
               "{}: pass either attn_mask or is_causal=true, not both (the causal mask would be "
               "ignored); fold the causal mask into attn_mask instead",
               op);
    KILN_CHECK(mask.dtype() == kBool || is_floating(mask.dtype()), DTypeError,
               "{}: attn_mask must be bool (true = attend) or floating (added to the scores), "
               "got {}",
               op, dtype_name(mask.dtype()));
    const SymDimVector b = sym_broadcast_shapes(op, mask.sym_sizes(), s.mask);
    KILN_CHECK(shapes_equal(b, s.mask), ShapeError,
               "{}: attn_mask of shape {} must broadcast to (..., L, S) = {}", op,
               shape_str(mask.sym_sizes()), shape_str(s.mask));
  }
  return s;
}

double attention_scale(const OpCall& call, size_t scale_arg, const Tensor& q) {
  return call.arg(scale_arg).is_none() ? 1.0 / std::sqrt(static_cast<double>(q.size(-1)))
                                       : call.double_arg(scale_arg);
}

// Note [Attention outputs in the projections' layout]
// Multi-head attention makes q, k and v as (batch, heads, L, E) views of [batch, L, heads * E]
// projections and turns the output back with transpose(1, 2).reshape(batch, L, heads * E). A
// contiguous (batch, heads, L, E) output makes that reshape a copy, and the gradients of q, k and
// v need the same copy on their way back to the projections' matmuls: four copies per layer and
// step. So with 4-d operands every output is allocated as [batch, L, heads, E] and returned as
// its (batch, heads, L, E) view, as PyTorch's CPU flash attention does; the reshape is then a view
// in eager and compiled code alike (the compiled extern kernel's buffer has the same strides, the
// meta function being the one that allocates). Other ranks stay contiguous.
const Tensor& set_heads_output(OpCall& call, size_t i, ScalarType dtype, SymIntArrayRef sizes) {
  if (sizes.size() != 4) return call.set_output(i, dtype, sizes);
  const SymDimVector physical{sizes[0], sizes[2], sizes[1], sizes[3]};
  const Tensor& storage = call.set_output(i, dtype, physical);
  const SymIntArrayRef st = storage.sym_strides();
  return call.set_output(i, make_view(storage, SymDimVector(sizes.begin(), sizes.end()),
                                      SymDimVector{st[0], st[2], st[1], st[3]}, SymInt(0)));
}

void meta_sdpa(OpCall& call) {
  const AttentionShapes s = check_attention(call);
  set_heads_output(call, 0, call.tensor(0).dtype(), s.out);
}

void cpu_sdpa(OpCall& call) {
  const AttentionShapes s = check_attention(call);
  const Tensor &q = call.tensor(0), &k = call.tensor(1), &v = call.tensor(2);
  const Tensor mask = call.optional_tensor(3);
  cpu::scaled_dot_product_attention(q.expand(s.q), k.expand(s.k), v.expand(s.v),
                                    mask.defined() ? mask.expand(s.mask) : Tensor(),
                                    call.bool_arg(5), attention_scale(call, 6, q), call.output(0));
}

// scaled_dot_product_attention_backward(grad_out, q, k, v, attn_mask?, dropout_p, is_causal,
// scale?, output_mask): the gradients of q, k and v in their broadcast batch shape (the engine
// sums broadcast dims back); one not in output_mask is an empty [0] tensor.
std::array<bool, 3> attention_grad_mask(const OpCall& call) {
  return read_output_mask(call, 8, "grad_query, grad_key, grad_value");
}

AttentionShapes check_attention_backward(const OpCall& call) {
  const AttentionShapes s = check_attention(call, 1);
  const Tensor& grad = call.tensor(0);
  KILN_CHECK(shapes_equal(grad.sym_sizes(), s.out), ShapeError,
             "{}: grad_out of shape {} must have the attention output's shape {}", call.name(),
             shape_str(grad.sym_sizes()), shape_str(s.out));
  KILN_CHECK(grad.dtype() == call.tensor(1).dtype(), DTypeError,
             "{}: grad_out ({}) must have the query's dtype ({})", call.name(),
             dtype_name(grad.dtype()), dtype_name(call.tensor(1).dtype()));
  return s;
}

void meta_sdpa_backward(OpCall& call) {
  const AttentionShapes s = check_attention_backward(call);
  const std::array<bool, 3> want = attention_grad_mask(call);
  const ScalarType dt = call.tensor(1).dtype();
  const SymDimVector empty{0};
  set_heads_output(call, 0, dt, want[0] ? SymIntArrayRef(s.q) : SymIntArrayRef(empty));
  set_heads_output(call, 1, dt, want[1] ? SymIntArrayRef(s.k) : SymIntArrayRef(empty));
  set_heads_output(call, 2, dt, want[2] ? SymIntArrayRef(s.v) : SymIntArrayRef(empty));
}

void cpu_sdpa_backward(OpCall& call) {
  const AttentionShapes s = check_attention_backward(call);
  const std::array<bool, 3> want = attention_grad_mask(call);
  const Tensor &q = call.tensor(1), &k = call.tensor(2), &v = call.tensor(3);
  const Tensor mask = call.optional_tensor(4);
  auto out_if = [&](size_t i) { return want[i] ? call.output(i) : Tensor(); };
  cpu::scaled_dot_product_attention_backward(
      call.tensor(0).expand(s.out), q.expand(s.q), k.expand(s.k), v.expand(s.v),
      mask.defined() ? mask.expand(s.mask) : Tensor(), call.bool_arg(6),
      attention_scale(call, 7, q), out_if(0), out_if(1), out_if(2));
}

}  // namespace

void register_nn_attention_ops(OpRegistry& r) {
  r.add({.name = "scaled_dot_product_attention",
         .schema = "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
                   "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, "
                   "float? scale=None) -> Tensor",
         .family = "nn",
         .meta = meta_sdpa,
         .cpu = cpu_sdpa,
         .dtypes = dtypes::kFloating});
  r.add({.name = "scaled_dot_product_attention_backward",
         .schema = "scaled_dot_product_attention_backward(Tensor grad_out, Tensor query, "
                   "Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, bool is_causal, "
                   "float? scale, int[] output_mask) -> (Tensor, Tensor, Tensor)",
         .family = "nn",
         .meta = meta_sdpa_backward,
         .cpu = cpu_sdpa_backward,
         .dtypes = dtypes::kFloating});
}

std::tuple<Tensor, Tensor, Tensor> scaled_dot_product_attention_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& attn_mask, bool is_causal, std::optional<double> scale,
    std::array<bool, 3> output_mask) {
  static const OpId id = op_id("scaled_dot_product_attention_backward");
  return three_tensors(dispatch::call_boxed(id, grad_out, query, key, value, opt_tensor(attn_mask),
                                            0.0, is_causal, scale, output_mask_value(output_mask)));
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  static const OpId id = op_id("scaled_dot_product_attention");
  return dispatch::call_tensor(id, query, key, value, opt_tensor(attn_mask), dropout_p, is_causal,
                               scale);
}

}  // namespace kiln
