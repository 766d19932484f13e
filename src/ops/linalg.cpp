// Matrix products: mm, bmm, addmm (kernels over BLAS / the integer kernel), and the composites
// matmul and linear built from them with views.
//
// Note [Matrix product dtypes]
// Floating dtypes go to OpenBLAS (float16/bfloat16 through float32), integer dtypes, unsigned
// included, to an own kernel with wrap-around arithmetic (Note [Modular integer matmul]). Bool
// is rejected with DTypeError, as PyTorch's CPU mm does: "or of ands" is a different operation
// that deserves its own name. Operands must share one dtype (no promotion), as in PyTorch.
#include "kiln/ops/linalg.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/gemm.h"
#include "src/ops/registry.h"

namespace kiln {

void register_conv_ops(OpRegistry& r);                   // src/ops/conv.cpp
void register_pool_ops(OpRegistry& r);                   // src/ops/pool.cpp
void register_conv_backward_ops(OpRegistry& r);          // src/ops/conv_backward.cpp
void register_pool_backward_ops(OpRegistry& r);          // src/ops/pool_backward.cpp
void register_pool1d_ops(OpRegistry& r);                 // src/ops/pool1d.cpp
void register_pool3d_ops(OpRegistry& r);                 // src/ops/pool3d.cpp
void register_adaptive_max_pool_ops(OpRegistry& r);      // src/ops/adaptive_max_pool.cpp
void register_pool_indices_backward_ops(OpRegistry& r);  // src/ops/pool_indices_backward.cpp

namespace {

void check_rank(std::string_view op, std::string_view what, const Tensor& t, int64_t rank) {
  KILN_CHECK(t.dim() == rank, ShapeError, "{}: {} must be a {}-D tensor, got {}-D of shape {}", op,
             what, rank, t.dim(), shape_str(t.sym_sizes()));
}

void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dtype() == b.dtype(), DTypeError,
             "{}: expected both operands to have the same dtype, got {} {} and {} {}; convert "
             "one with .to(dtype)",
             op, dtype_name(a.dtype()), shape_str(a.sym_sizes()), dtype_name(b.dtype()),
             shape_str(b.sym_sizes()));
}

// Note [Symbolic inner dims]
// Comparing two symbolic inner dims converts the SymBool to bool, which guards (Note [Guarding a
// symbolic value]): with equal hints the ShapeEnv records s0 == s1 (and unifies the symbols), so
// the compiled graph is only reused when they stay equal; with different hints the check fails
// here, at trace time, with the same error as eager. Identical expressions compare equal without
// a guard.
void check_inner(std::string_view op, const Tensor& a, const Tensor& b, SymInt ka, SymInt kb) {
  KILN_CHECK(ka == kb, ShapeError, "{}: mat1 {} and mat2 {} cannot be multiplied ({} != {})", op,
             shape_str(a.sym_sizes()), shape_str(b.sym_sizes()), ka, kb);
}

// Integer products take integer alpha/beta only (a float factor has no exact integer meaning),
// as PyTorch requires.
void check_factors(std::string_view op, ScalarType dtype, const Scalar& beta, const Scalar& alpha) {
  if (is_floating(dtype)) return;
  KILN_CHECK(!beta.is_floating() && !alpha.is_floating(), DTypeError,
             "{}: for integer dtype {} alpha and beta must be integers, got beta={} alpha={}", op,
             dtype_name(dtype), beta.str(), alpha.str());
}

void run_gemm(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
              const Scalar& beta) {
  if (is_floating(out.dtype())) {
    cpu::gemm_floating(a, b, out, alpha, beta);
  } else {
    cpu::gemm_integral(a, b, out, alpha, beta);
  }
}

void meta_mm(OpCall& call) {
  const Tensor& a = call.tensor(0);
  const Tensor& b = call.tensor(1);
  check_rank("mm", "self", a, 2);
  check_rank("mm", "mat2", b, 2);
  check_same_dtype("mm", a, b);
  const SymIntArrayRef as = a.sym_sizes(), bs = b.sym_sizes();
  check_inner("mm", a, b, as[1], bs[0]);
  call.set_output(0, a.dtype(), SymDimVector{as[0], bs[1]});
}
void cpu_mm(OpCall& call) { run_gemm(call.tensor(0), call.tensor(1), call.output(0), 1, 0); }

void meta_bmm(OpCall& call) {
  const Tensor& a = call.tensor(0);
  const Tensor& b = call.tensor(1);
  check_rank("bmm", "self", a, 3);
  check_rank("bmm", "mat2", b, 3);
  check_same_dtype("bmm", a, b);
  const SymIntArrayRef as = a.sym_sizes(), bs = b.sym_sizes();
  KILN_CHECK(as[0] == bs[0], ShapeError,
             "bmm: batch sizes differ: self {} and mat2 {} ({} != {}); bmm does not broadcast, "
             "use matmul",
             shape_str(as), shape_str(bs), as[0], bs[0]);
  check_inner("bmm", a, b, as[2], bs[1]);
  call.set_output(0, a.dtype(), SymDimVector{as[0], as[1], bs[2]});
}
void cpu_bmm(OpCall& call) { run_gemm(call.tensor(0), call.tensor(1), call.output(0), 1, 0); }

void meta_addmm(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& a = call.tensor(1);
  const Tensor& b = call.tensor(2);
  check_rank("addmm", "mat1", a, 2);
  check_rank("addmm", "mat2", b, 2);
  check_same_dtype("addmm", a, b);
  check_same_dtype("addmm", self, a);
  const SymIntArrayRef as = a.sym_sizes(), bs = b.sym_sizes();
  check_inner("addmm", a, b, as[1], bs[0]);
  check_factors("addmm", a.dtype(), call.scalar(3), call.scalar(4));
  const SymDimVector shape{as[0], bs[1]};
  KILN_CHECK(self.dim() <= 2 &&
                 shapes_equal(sym_broadcast_shapes("addmm", self.sym_sizes(), shape), shape),
             ShapeError, "addmm: self {} cannot be broadcast to the product's shape {}",
             shape_str(self.sym_sizes()), shape_str(shape));
  call.set_output(0, a.dtype(), shape);
}
void cpu_addmm(OpCall& call) {
  const Tensor& out = call.output(0);
  const Scalar beta = call.scalar(3);
  // beta = 0 never reads self (see src/kernels/cpu/gemm.h), so NaNs in self do not leak.
  const bool use_self = beta.is_floating() ? beta.to_double() != 0.0 : beta.to_bool();
  if (use_self) cpu::copy_into(out, call.tensor(0));
  run_gemm(call.tensor(1), call.tensor(2), out, call.scalar(4), use_self ? beta : Scalar(0));
}

// Explicit row counts instead of reshape(-1, k): -1 cannot be inferred when k is 0 (and a
// product of symbolic sizes is exactly the expression the graph needs).
SymInt numel_of(SymIntArrayRef shape) {
  SymInt n = 1;
  for (SymInt s : shape) n *= s;
  return n;
}

SymDimVector vec(SymIntArrayRef r) { return SymDimVector(r.begin(), r.end()); }

// See the header for the semantics (torch.matmul). All sizes stay SymInt, so with symbolic batch
// or sequence sizes the reshapes and views below carry symbolic shapes; only the inner dims'
// equality (Note [Symbolic inner dims]) and broadcasting of the batch dims guard.
Tensor matmul_impl(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  const SymIntArrayRef as = a.sym_sizes(), bs = b.sym_sizes();
  KILN_CHECK(da >= 1 && db >= 1, ShapeError,
             "matmul: both arguments need at least 1 dimension, got {}-D {} and {}-D {}", da,
             shape_str(as), db, shape_str(bs));
  check_same_dtype("matmul", a, b);
  KILN_CHECK(a.dtype() != kBool, DTypeError,
             "matmul: dtype bool is not supported (shapes {} and {}); convert to an integer dtype",
             shape_str(as), shape_str(bs));
  const SymInt ka = as[static_cast<size_t>(da - 1)];
  const SymInt kb = db == 1 ? bs[0] : bs[static_cast<size_t>(db - 2)];
  KILN_CHECK(ka == kb, ShapeError, "matmul: {} and {} cannot be multiplied ({} != {})",
             shape_str(as), shape_str(bs), ka, kb);
  if (da == 1 && db == 1) return mm(a.unsqueeze(0), b.unsqueeze(1)).view(SymIntArrayRef{});
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {
    // Fold a's batch dims into its rows: one large product instead of many small ones.
    SymDimVector out_shape = vec(as.slice(0, static_cast<size_t>(da - 1)));
    Tensor rows = a.reshape(SymDimVector{numel_of(out_shape), ka});
    Tensor prod = mm(rows, db == 1 ? b.unsqueeze(1) : b);
    if (db == 2) out_shape.push_back(bs[1]);
    return prod.view(out_shape);
  }
  // General case: broadcast the batch dims, flatten them to one, bmm.
  const Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  const Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  const SymIntArrayRef a3s = a3.sym_sizes(), b3s = b3.sym_sizes();
  const SymInt n = a3s[a3s.size() - 2], p = b3s[b3s.size() - 1];
  const auto batch_a = a3s.slice(0, a3s.size() - 2);
  const auto batch_b = b3s.slice(0, b3s.size() - 2);
  const SymDimVector batch = sym_broadcast_shapes("matmul", batch_a, batch_b);
  const SymInt nbatch = numel_of(batch);
  SymDimVector ea = batch, eb = batch;
  ea.push_back(n);
  ea.push_back(ka);
  eb.push_back(ka);
  eb.push_back(p);
  Tensor prod = bmm(a3.expand(ea).reshape(SymDimVector{nbatch, n, ka}),
                    b3.expand(eb).reshape(SymDimVector{nbatch, ka, p}));
  SymDimVector out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(p);
  return prod.view(out_shape);
}

void composite_matmul(OpCall& call) {
  call.set_output(0, matmul_impl(call.tensor(0), call.tensor(1)));
}

void composite_linear(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& weight = call.tensor(1);
  const Tensor bias = call.optional_tensor(2);
  const SymIntArrayRef in_sizes = input.sym_sizes(), w_sizes = weight.sym_sizes();
  KILN_CHECK(input.dim() >= 1, ShapeError, "linear: input must have at least 1 dim, got shape {}",
             shape_str(in_sizes));
  KILN_CHECK(weight.dim() == 2, ShapeError,
             "linear: weight must be 2-D [out_features, in_features], got shape {}",
             shape_str(w_sizes));
  check_same_dtype("linear", input, weight);
  KILN_CHECK(input.dtype() != kBool, DTypeError, "linear: dtype bool is not supported");
  const SymInt in_features = in_sizes[in_sizes.size() - 1];
  KILN_CHECK(in_features == w_sizes[1], ShapeError,
             "linear: input {} and weight {} do not fit: input's last dim {} != in_features {}",
             shape_str(in_sizes), shape_str(w_sizes), in_features, w_sizes[1]);
  const SymInt out_features = w_sizes[0];
  if (bias.defined()) {
    check_same_dtype("linear", input, bias);
    const SymInt bias_numel = bias.sym_numel();
    KILN_CHECK(bias.dim() <= 1 && (bias_numel == out_features || bias_numel == 1), ShapeError,
               "linear: bias {} does not match out_features {} of weight {}",
               shape_str(bias.sym_sizes()), out_features, shape_str(w_sizes));
  }
  const SymIntArrayRef lead = in_sizes.slice(0, in_sizes.size() - 1);
  SymDimVector out_shape = vec(lead);
  out_shape.push_back(out_features);
  const Tensor rows =
      input.dim() == 2 ? input : input.reshape(SymDimVector{numel_of(lead), in_features});
  const Tensor prod = bias.defined() ? addmm(bias, rows, weight.t()) : mm(rows, weight.t());
  call.set_output(0, input.dim() == 2 ? prod : prod.view(out_shape));
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  r.add({.name = "mm",
         .schema = "mm(Tensor self, Tensor mat2) -> Tensor",
         .family = "linalg",
         .meta = meta_mm,
         .cpu = cpu_mm,
         .dtypes = cpu::kGemmDTypes});
  r.add({.name = "bmm",
         .schema = "bmm(Tensor self, Tensor mat2) -> Tensor",
         .family = "linalg",
         .meta = meta_bmm,
         .cpu = cpu_bmm,
         .dtypes = cpu::kGemmDTypes});
  r.add({.name = "addmm",
         .schema = "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) "
                   "-> Tensor",
         .family = "linalg",
         .meta = meta_addmm,
         .cpu = cpu_addmm,
         .dtypes = cpu::kGemmDTypes});
  r.add({.name = "matmul",
         .schema = "matmul(Tensor self, Tensor other) -> Tensor",
         .family = "linalg",
         .composite = composite_matmul,
         .dtypes = cpu::kGemmDTypes});
  r.add({.name = "linear",
         .schema = "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
         .family = "linalg",
         .composite = composite_linear,
         .dtypes = cpu::kGemmDTypes});
  register_conv_ops(r);
  register_pool_ops(r);
  register_conv_backward_ops(r);
  register_pool_backward_ops(r);
  register_pool1d_ops(r);
  register_pool3d_ops(r);
  register_adaptive_max_pool_ops(r);
  register_pool_indices_backward_ops(r);
}

Tensor mm(const Tensor& self, const Tensor& mat2) {
  static const OpId id = op_id("mm");
  return dispatch::call_tensor(id, self, mat2);
}
Tensor bmm(const Tensor& self, const Tensor& mat2) {
  static const OpId id = op_id("bmm");
  return dispatch::call_tensor(id, self, mat2);
}
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  static const OpId id = op_id("addmm");
  return dispatch::call_tensor(id, self, mat1, mat2, beta, alpha);
}
Tensor matmul(const Tensor& self, const Tensor& other) {
  static const OpId id = op_id("matmul");
  return dispatch::call_tensor(id, self, other);
}
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  static const OpId id = op_id("linear");
  return dispatch::call_tensor(id, input, weight, bias.defined() ? IValue(bias) : IValue());
}

Tensor Tensor::matmul(const Tensor& other) const { return kiln::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return kiln::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return kiln::bmm(*this, other); }

}  // namespace kiln
