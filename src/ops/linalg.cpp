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

void register_conv_ops(OpRegistry& r);           // src/ops/conv.cpp
void register_pool_ops(OpRegistry& r);           // src/ops/pool.cpp
void register_conv_backward_ops(OpRegistry& r);  // src/ops/conv_backward.cpp
void register_pool_backward_ops(OpRegistry& r);  // src/ops/pool_backward.cpp

namespace {

void check_rank(std::string_view op, std::string_view what, const Tensor& t, int64_t rank) {
  KILN_CHECK(t.dim() == rank, ShapeError, "{}: {} must be a {}-D tensor, got {}-D of shape {}", op,
             what, rank, t.dim(), shape_str(t.sizes()));
}

void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dtype() == b.dtype(), DTypeError,
             "{}: expected both operands to have the same dtype, got {} {} and {} {}; convert "
             "one with .to(dtype)",
             op, dtype_name(a.dtype()), shape_str(a.sizes()), dtype_name(b.dtype()),
             shape_str(b.sizes()));
}

void check_inner(std::string_view op, const Tensor& a, const Tensor& b, int64_t ka, int64_t kb) {
  KILN_CHECK(ka == kb, ShapeError, "{}: mat1 {} and mat2 {} cannot be multiplied ({} != {})", op,
             shape_str(a.sizes()), shape_str(b.sizes()), ka, kb);
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
  check_inner("mm", a, b, a.size(1), b.size(0));
  call.set_output(0, a.dtype(), {a.size(0), b.size(1)});
}
void cpu_mm(OpCall& call) { run_gemm(call.tensor(0), call.tensor(1), call.output(0), 1, 0); }

void meta_bmm(OpCall& call) {
  const Tensor& a = call.tensor(0);
  const Tensor& b = call.tensor(1);
  check_rank("bmm", "self", a, 3);
  check_rank("bmm", "mat2", b, 3);
  check_same_dtype("bmm", a, b);
  KILN_CHECK(a.size(0) == b.size(0), ShapeError,
             "bmm: batch sizes differ: self {} and mat2 {} ({} != {}); bmm does not broadcast, "
             "use matmul",
             shape_str(a.sizes()), shape_str(b.sizes()), a.size(0), b.size(0));
  check_inner("bmm", a, b, a.size(2), b.size(1));
  call.set_output(0, a.dtype(), {a.size(0), a.size(1), b.size(2)});
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
  check_inner("addmm", a, b, a.size(1), b.size(0));
  check_factors("addmm", a.dtype(), call.scalar(3), call.scalar(4));
  const DimVector shape{a.size(0), b.size(1)};
  KILN_CHECK(self.dim() <= 2 &&
                 IntArrayRef(broadcast_shapes("addmm", self.sizes(), shape)) == IntArrayRef(shape),
             ShapeError, "addmm: self {} cannot be broadcast to the product's shape {}",
             shape_str(self.sizes()), shape_str(shape));
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

std::vector<int64_t> vec(IntArrayRef r) { return r.vec(); }

// Explicit row counts instead of reshape(-1, k): -1 cannot be inferred when k is 0.
int64_t numel_of(IntArrayRef shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// See the header for the semantics (torch.matmul).
Tensor matmul_impl(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  KILN_CHECK(da >= 1 && db >= 1, ShapeError,
             "matmul: both arguments need at least 1 dimension, got {}-D {} and {}-D {}", da,
             shape_str(a.sizes()), db, shape_str(b.sizes()));
  check_same_dtype("matmul", a, b);
  KILN_CHECK(a.dtype() != kBool, DTypeError,
             "matmul: dtype bool is not supported (shapes {} and {}); convert to an integer dtype",
             shape_str(a.sizes()), shape_str(b.sizes()));
  const int64_t ka = a.size(-1);
  const int64_t kb = db == 1 ? b.size(0) : b.size(-2);
  KILN_CHECK(ka == kb, ShapeError, "matmul: {} and {} cannot be multiplied ({} != {})",
             shape_str(a.sizes()), shape_str(b.sizes()), ka, kb);
  if (da == 1 && db == 1) return mm(a.unsqueeze(0), b.unsqueeze(1)).view(std::vector<int64_t>{});
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {
    // Fold a's batch dims into its rows: one large product instead of many small ones.
    std::vector<int64_t> out_shape = vec(a.sizes().slice(0, static_cast<size_t>(da - 1)));
    Tensor rows = a.reshape({numel_of(out_shape), ka});
    Tensor prod = mm(rows, db == 1 ? b.unsqueeze(1) : b);
    if (db == 2) out_shape.push_back(b.size(1));
    return prod.view(out_shape);
  }
  // General case: broadcast the batch dims, flatten them to one, bmm.
  const Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  const Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  const int64_t n = a3.size(-2), p = b3.size(-1);
  const auto batch_a = a3.sizes().slice(0, static_cast<size_t>(a3.dim() - 2));
  const auto batch_b = b3.sizes().slice(0, static_cast<size_t>(b3.dim() - 2));
  DimVector batch = broadcast_shapes("matmul", batch_a, batch_b);
  int64_t nbatch = 1;
  for (int64_t s : batch) nbatch *= s;
  std::vector<int64_t> ea(batch.begin(), batch.end()), eb = ea;
  ea.insert(ea.end(), {n, ka});
  eb.insert(eb.end(), {ka, p});
  Tensor prod = bmm(a3.expand(ea).reshape({nbatch, n, ka}), b3.expand(eb).reshape({nbatch, ka, p}));
  std::vector<int64_t> out_shape(batch.begin(), batch.end());
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
  KILN_CHECK(input.dim() >= 1, ShapeError, "linear: input must have at least 1 dim, got shape {}",
             shape_str(input.sizes()));
  KILN_CHECK(weight.dim() == 2, ShapeError,
             "linear: weight must be 2-D [out_features, in_features], got shape {}",
             shape_str(weight.sizes()));
  check_same_dtype("linear", input, weight);
  KILN_CHECK(input.dtype() != kBool, DTypeError, "linear: dtype bool is not supported");
  KILN_CHECK(input.size(-1) == weight.size(1), ShapeError,
             "linear: input {} and weight {} do not fit: input's last dim {} != in_features {}",
             shape_str(input.sizes()), shape_str(weight.sizes()), input.size(-1), weight.size(1));
  const int64_t out_features = weight.size(0);
  if (bias.defined()) {
    check_same_dtype("linear", input, bias);
    KILN_CHECK(bias.dim() <= 1 && (bias.numel() == out_features || bias.numel() == 1), ShapeError,
               "linear: bias {} does not match out_features {} of weight {}",
               shape_str(bias.sizes()), out_features, shape_str(weight.sizes()));
  }
  const IntArrayRef lead = input.sizes().slice(0, static_cast<size_t>(input.dim() - 1));
  std::vector<int64_t> out_shape = vec(lead);
  out_shape.push_back(out_features);
  const Tensor rows = input.dim() == 2 ? input : input.reshape({numel_of(lead), input.size(-1)});
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
