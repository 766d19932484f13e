// scaled_dot_product_attention, the math formulation (no fused flash kernel yet).
#include <cmath>

#include "kiln/ops/nn.h"
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

// scaled_dot_product_attention(q, k, v, attn_mask?, dropout_p, is_causal, scale?)
AttentionShapes check_attention(const OpCall& call) {
  const Tensor &q = call.tensor(0), &k = call.tensor(1), &v = call.tensor(2);
  const Tensor mask = call.optional_tensor(3);
  const double dropout_p = call.double_arg(4);
  const bool is_causal = call.bool_arg(5);
  KILN_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, ShapeError,
             "{}: query, key and value must have at least 2 dims (..., L, E), (..., S, E), "
             "(..., S, Ev); got shapes {}, {}, {}",
             kOp, shape_str(q.sym_sizes()), shape_str(k.sym_sizes()), shape_str(v.sym_sizes()));
  KILN_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), DTypeError,
             "{}: query, key and value must have the same dtype, got {}, {}, {}", kOp,
             dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  const SymInt L = size_from_end(q, 2), E = size_from_end(q, 1), S = size_from_end(k, 2),
               Ev = size_from_end(v, 1);
  KILN_CHECK(E == size_from_end(k, 1), ShapeError,
             "{}: the last dim of query (shape {}) must equal the last dim of key (shape {})", kOp,
             shape_str(q.sym_sizes()), shape_str(k.sym_sizes()));
  KILN_CHECK(S == size_from_end(v, 2), ShapeError,
             "{}: key (shape {}) and value (shape {}) must have the same sequence length (dim -2)",
             kOp, shape_str(k.sym_sizes()), shape_str(v.sym_sizes()));
  KILN_CHECK(dropout_p == 0.0, NotImplementedError,
             "{}: dropout_p={} is not supported yet (needs the random generator); pass 0", kOp,
             dropout_p);
  AttentionShapes s;
  s.batch = sym_broadcast_shapes(kOp, batch_dims(q), batch_dims(k));
  s.batch = sym_broadcast_shapes(kOp, s.batch, batch_dims(v));
  s.q = with_tail(s.batch, L, E);
  s.k = with_tail(s.batch, S, E);
  s.v = with_tail(s.batch, S, Ev);
  s.out = with_tail(s.batch, L, Ev);
  s.mask = with_tail(s.batch, L, S);
  if (mask.defined()) {
    KILN_CHECK(!is_causal, ValueError,
               "{}: pass either attn_mask or is_causal=true, not both (the causal mask would be "
               "ignored); fold the causal mask into attn_mask instead",
               kOp);
    KILN_CHECK(mask.dtype() == kBool || is_floating(mask.dtype()), DTypeError,
               "{}: attn_mask must be bool (true = attend) or floating (added to the scores), "
               "got {}",
               kOp, dtype_name(mask.dtype()));
    const SymDimVector b = sym_broadcast_shapes(kOp, mask.sym_sizes(), s.mask);
    KILN_CHECK(shapes_equal(b, s.mask), ShapeError,
               "{}: attn_mask of shape {} must broadcast to (..., L, S) = {}", kOp,
               shape_str(mask.sym_sizes()), shape_str(s.mask));
  }
  return s;
}

void meta_sdpa(OpCall& call) {
  const AttentionShapes s = check_attention(call);
  call.set_output(0, call.tensor(0).dtype(), s.out);
}

void cpu_sdpa(OpCall& call) {
  const AttentionShapes s = check_attention(call);
  const Tensor &q = call.tensor(0), &k = call.tensor(1), &v = call.tensor(2);
  const Tensor mask = call.optional_tensor(3);
  const std::optional<double> scale =
      call.arg(6).is_none() ? std::nullopt : std::optional(call.double_arg(6));
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  cpu::scaled_dot_product_attention(q.expand(s.q), k.expand(s.k), v.expand(s.v),
                                    mask.defined() ? mask.expand(s.mask) : Tensor(),
                                    call.bool_arg(5), sc, call.output(0));
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
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  static const OpId id = op_id("scaled_dot_product_attention");
  return dispatch::call_tensor(id, query, key, value, opt_tensor(attn_mask), dropout_p, is_causal,
                               scale);
}

}  // namespace kiln
