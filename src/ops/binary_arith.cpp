// Arithmetic binary ops: add sub mul div remainder fmod pow maximum minimum atan2 hypot, and
// the in-place add_ sub_ mul_ div_. Dtype rules: binary_common.h; kernels:
// src/kernels/cpu/binary_arith.cpp.
#include "kiln/ops/binary.h"
#include "src/ops/binary_common.h"

namespace kiln {
namespace {

using cpu::BinaryOp;
using namespace binary;

// div has a runtime rounding mode (argument 2), so its meta and kernel pick the op from it.
void meta_div(OpCall& call) {
  const Tensor& a = call.tensor(0);
  const cpu::Operand b = operand(call, 1);
  const BinaryOp op = div_op(call.name(), rounding_mode_arg(call));
  const ScalarType c = compute_dtype(call.name(), op, a, b);
  call.set_output(0, c, result_shape(call.name(), a, b));
}
void cpu_div(OpCall& call) {
  const Tensor& out = call.output(0);
  cpu::binary_kernel(call.name(), div_op(call.name(), rounding_mode_arg(call)), out, call.tensor(0),
                     operand(call, 1), out.dtype());
}
void meta_div_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const cpu::Operand other = operand(call, 1);
  const BinaryOp op = div_op(call.name(), rounding_mode_arg(call));
  check_inplace(call.name(), self, other, compute_dtype(call.name(), op, self, other));
  call.set_output(0, self);
}
void cpu_div_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const cpu::Operand other = operand(call, 1);
  const BinaryOp op = div_op(call.name(), rounding_mode_arg(call));
  cpu::binary_kernel(call.name(), op, self, self, other,
                     compute_dtype(call.name(), op, self, other));
}

// Registers `name` (Tensor other) and, when scalar_name is given, `scalar_name` (Scalar other):
// both share the meta function and kernel. `extra` is the schema after `other`.
void add_pair(OpRegistry& r, const char* name, const char* scalar_name, std::string_view extra,
              MetaFn meta, KernelFn cpu, DTypeSet dtypes, bool inplace = false) {
  const std::string self = inplace ? "Tensor(a!) self" : "Tensor self";
  const std::string ret = inplace ? "Tensor(a!)" : "Tensor";
  const uint32_t tags = kTagPointwise | (inplace ? kTagInplace : 0u);
  auto schema = [&](const char* n, const char* other_type) {
    return fmt::format("{}({}, {} other{}) -> {}", n, self, other_type, extra, ret);
  };
  r.add({.name = name,
         .schema = schema(name, "Tensor"),
         .family = "binary",
         .meta = meta,
         .cpu = cpu,
         .dtypes = dtypes,
         .tags = tags});
  if (scalar_name != nullptr) {
    r.add({.name = scalar_name,
           .schema = schema(scalar_name, "Scalar"),
           .family = "binary",
           .meta = meta,
           .cpu = cpu,
           .dtypes = dtypes,
           .tags = tags});
  }
}

}  // namespace

void register_binary_compare_ops(OpRegistry& r);  // binary_compare.cpp
void register_binary_bitwise_ops(OpRegistry& r);  // binary_bitwise.cpp

void register_binary_ops(OpRegistry& r) {
  using namespace dtypes;
  constexpr std::string_view kAlpha = ", Scalar alpha=1";
  constexpr std::string_view kMode = ", str rounding_mode=\"\"";
  add_pair(r, "add", "add.Scalar", kAlpha, meta_binary<BinaryOp::Add>, cpu_binary<BinaryOp::Add>,
           kAll);
  add_pair(r, "sub", "sub.Scalar", kAlpha, meta_binary<BinaryOp::Sub>, cpu_binary<BinaryOp::Sub>,
           kNumeric);
  add_pair(r, "mul", "mul.Scalar", "", meta_binary<BinaryOp::Mul>, cpu_binary<BinaryOp::Mul>, kAll);
  add_pair(r, "div", "div.Scalar", kMode, meta_div, cpu_div, kAll);
  add_pair(r, "remainder", "remainder.Scalar", "", meta_binary<BinaryOp::Remainder>,
           cpu_binary<BinaryOp::Remainder>, kNumeric);
  add_pair(r, "fmod", "fmod.Scalar", "", meta_binary<BinaryOp::Fmod>, cpu_binary<BinaryOp::Fmod>,
           kNumeric);
  add_pair(r, "pow", "pow.Tensor_Scalar", "", meta_binary<BinaryOp::Pow>, cpu_binary<BinaryOp::Pow>,
           kNumeric);
  add_pair(r, "maximum", nullptr, "", meta_binary<BinaryOp::Maximum>, cpu_binary<BinaryOp::Maximum>,
           kAll);
  add_pair(r, "minimum", nullptr, "", meta_binary<BinaryOp::Minimum>, cpu_binary<BinaryOp::Minimum>,
           kAll);
  add_pair(r, "atan2", nullptr, "", meta_binary<BinaryOp::Atan2>, cpu_binary<BinaryOp::Atan2>,
           kNumeric);
  add_pair(r, "hypot", nullptr, "", meta_binary<BinaryOp::Hypot>, cpu_binary<BinaryOp::Hypot>,
           kNumeric);
  add_pair(r, "add_", "add_.Scalar", kAlpha, meta_binary_<BinaryOp::Add>,
           cpu_binary_<BinaryOp::Add>, kAll, true);
  add_pair(r, "sub_", "sub_.Scalar", kAlpha, meta_binary_<BinaryOp::Sub>,
           cpu_binary_<BinaryOp::Sub>, kNumeric, true);
  add_pair(r, "mul_", "mul_.Scalar", "", meta_binary_<BinaryOp::Mul>, cpu_binary_<BinaryOp::Mul>,
           kAll, true);
  add_pair(r, "div_", "div_.Scalar", kMode, meta_div_, cpu_div_, kNumeric, true);
  register_binary_compare_ops(r);
  register_binary_bitwise_ops(r);
}

// ---- wrappers ----
// Each wrapper looks its op up once (a static) and calls the dispatcher directly.
#define KILN_OP(name) static const OpId id = op_id(name)

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  KILN_OP("add");
  return dispatch::call_tensor(id, a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  KILN_OP("add.Scalar");
  return dispatch::call_tensor(id, a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  KILN_OP("sub");
  return dispatch::call_tensor(id, a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  KILN_OP("sub.Scalar");
  return dispatch::call_tensor(id, a, b, alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  KILN_OP("mul");
  return dispatch::call_tensor(id, a, b);
}
Tensor mul(const Tensor& a, const Scalar& b) {
  KILN_OP("mul.Scalar");
  return dispatch::call_tensor(id, a, b);
}
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  KILN_OP("div");
  return dispatch::call_tensor(id, a, b, rounding_mode);
}
Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode) {
  KILN_OP("div.Scalar");
  return dispatch::call_tensor(id, a, b, rounding_mode);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  KILN_OP("remainder");
  return dispatch::call_tensor(id, a, b);
}
Tensor remainder(const Tensor& a, const Scalar& b) {
  KILN_OP("remainder.Scalar");
  return dispatch::call_tensor(id, a, b);
}
Tensor fmod(const Tensor& a, const Tensor& b) {
  KILN_OP("fmod");
  return dispatch::call_tensor(id, a, b);
}
Tensor fmod(const Tensor& a, const Scalar& b) {
  KILN_OP("fmod.Scalar");
  return dispatch::call_tensor(id, a, b);
}
Tensor pow(const Tensor& a, const Tensor& exponent) {
  KILN_OP("pow");
  return dispatch::call_tensor(id, a, exponent);
}
Tensor pow(const Tensor& a, const Scalar& exponent) {
  KILN_OP("pow.Tensor_Scalar");
  return dispatch::call_tensor(id, a, exponent);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  KILN_OP("maximum");
  return dispatch::call_tensor(id, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  KILN_OP("minimum");
  return dispatch::call_tensor(id, a, b);
}
Tensor atan2(const Tensor& a, const Tensor& b) {
  KILN_OP("atan2");
  return dispatch::call_tensor(id, a, b);
}
Tensor hypot(const Tensor& a, const Tensor& b) {
  KILN_OP("hypot");
  return dispatch::call_tensor(id, a, b);
}

Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const {
  return kiln::add(*this, other, alpha);
}
Tensor Tensor::add(const Scalar& other, const Scalar& alpha) const {
  return kiln::add(*this, other, alpha);
}
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const {
  return kiln::sub(*this, other, alpha);
}
Tensor Tensor::sub(const Scalar& other, const Scalar& alpha) const {
  return kiln::sub(*this, other, alpha);
}
Tensor Tensor::mul(const Tensor& other) const { return kiln::mul(*this, other); }
Tensor Tensor::mul(const Scalar& other) const { return kiln::mul(*this, other); }
Tensor Tensor::div(const Tensor& other, std::string_view mode) const {
  return kiln::div(*this, other, mode);
}
Tensor Tensor::div(const Scalar& other, std::string_view mode) const {
  return kiln::div(*this, other, mode);
}
Tensor Tensor::remainder(const Tensor& other) const { return kiln::remainder(*this, other); }
Tensor Tensor::remainder(const Scalar& other) const { return kiln::remainder(*this, other); }
Tensor Tensor::fmod(const Tensor& other) const { return kiln::fmod(*this, other); }
Tensor Tensor::fmod(const Scalar& other) const { return kiln::fmod(*this, other); }
Tensor Tensor::pow(const Tensor& exponent) const { return kiln::pow(*this, exponent); }
Tensor Tensor::pow(const Scalar& exponent) const { return kiln::pow(*this, exponent); }
Tensor Tensor::maximum(const Tensor& other) const { return kiln::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return kiln::minimum(*this, other); }

const Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) const {
  KILN_OP("add_");
  dispatch::call_boxed(id, *this, other, alpha);
  return *this;
}
const Tensor& Tensor::add_(const Scalar& other, const Scalar& alpha) const {
  KILN_OP("add_.Scalar");
  dispatch::call_boxed(id, *this, other, alpha);
  return *this;
}
const Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) const {
  KILN_OP("sub_");
  dispatch::call_boxed(id, *this, other, alpha);
  return *this;
}
const Tensor& Tensor::sub_(const Scalar& other, const Scalar& alpha) const {
  KILN_OP("sub_.Scalar");
  dispatch::call_boxed(id, *this, other, alpha);
  return *this;
}
const Tensor& Tensor::mul_(const Tensor& other) const {
  KILN_OP("mul_");
  dispatch::call_boxed(id, *this, other);
  return *this;
}
const Tensor& Tensor::mul_(const Scalar& other) const {
  KILN_OP("mul_.Scalar");
  dispatch::call_boxed(id, *this, other);
  return *this;
}
const Tensor& Tensor::div_(const Tensor& other) const {
  KILN_OP("div_");
  dispatch::call_boxed(id, *this, other, std::string_view());
  return *this;
}
const Tensor& Tensor::div_(const Scalar& other) const {
  KILN_OP("div_.Scalar");
  dispatch::call_boxed(id, *this, other, std::string_view());
  return *this;
}

}  // namespace kiln
