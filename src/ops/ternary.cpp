// where, clamp, lerp, addcmul, addcdiv, masked_fill and their in-place forms.
//
// Dtypes follow PyTorch: where/clamp/addcmul/addcdiv compute in the result_type of their value
// operands (condition and mask are bool and do not take part); lerp requires start, end and a
// tensor weight of one floating dtype; masked_fill keeps self's dtype. In-place forms require the
// result dtype to be castable to self's (can_cast) and the broadcast shape to be self's shape.
// See Note [Pointwise dtype handling] in src/ops/pointwise_utils.h.
#include "kiln/ops/ternary.h"
#include "src/core/checked_convert.h"

#include <limits>
#include <type_traits>

#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/ternary.h"
#include "src/ops/pointwise_utils.h"

namespace kiln {
namespace {

void check_bool(std::string_view op, std::string_view what, const Tensor& t) {
  KILN_CHECK(t.dtype() == kBool, DTypeError,
             "{}: expected {} to be a bool tensor, but got dtype {} (shape {}); compare it first, "
             "e.g. t != 0",
             op, what, dtype_name(t.dtype()), shape_str(t.sym_sizes()));
}

// In-place: the broadcast of all operands must be self's shape, the result dtype castable to
// self's, and self must not have several elements on one memory location.
void check_inplace(std::string_view op, const Tensor& self, SymIntArrayRef shape,
                   ScalarType result) {
  // Structural equality: a broadcast of symbolic shapes keeps self's own size expressions.
  KILN_CHECK(same_shape(shape, self.sym_sizes()), ShapeError,
             "{}: the operands broadcast to shape {}, which does not match self's shape {} "
             "(an in-place op cannot change self's shape)",
             op, shape_str(shape), shape_str(self.sym_sizes()));
  KILN_CHECK(can_cast(result, self.dtype()), DTypeError,
             "{}: result type {} can't be cast to the desired output type {}; use the "
             "out-of-place op instead",
             op, dtype_name(result), dtype_name(self.dtype()));
  for (int64_t d = 0; d < self.dim(); ++d) {
    // A symbolic size is never 0 or 1 (0/1 specialization), so only a zero stride can share.
    const SymInt size = self.size(d);
    const bool shares = same(self.stride(d), 0) && (size.is_symbolic() || size.raw() > 1);
    KILN_CHECK(!shares, ValueError,
               "{}: self (shape {}, strides {}) has several elements sharing one memory location "
               "(an expanded dim); call .clone() first",
               op, shape_str(self.sym_sizes()), shape_str(self.sym_strides()));
  }
}

// Runs `compute` writing in dtype `dtype` into `out`, through a temporary when out's dtype
// differs (an in-place op whose result dtype is wider than self's, e.g. float32 self with a
// float64 operand).
template <typename F>
void compute_into(const Tensor& out, ScalarType dtype, const F& compute) {
  if (out.dtype() == dtype) {
    compute(out);
    return;
  }
  Tensor tmp = empty_tensor(out.sizes(), dtype);
  compute(tmp);
  cpu::copy_into(out, tmp);
}

// Runs a result-type computation, naming the op in a promotion error (promote_types, which
// ResultTypeBuilder calls, does not know the op).
template <typename F>
ScalarType named_promotion(std::string_view op, const F& f) {
  try {
    return f();
  } catch (const DTypeError& e) {
    throw DTypeError(fmt::format("{}: {}", op, e.what()));
  }
}

// ---- where ----

// where's value operands: args 1 and 2, each a Tensor or a Scalar.
ScalarType where_dtype(const OpCall& call) {
  return named_promotion("where", [&] {
    ResultTypeBuilder b("where");
    for (size_t i = 1; i <= 2; ++i) {
      if (call.arg(i).is_tensor()) {
        b.add(call.tensor(i));
      } else {
        b.add(call.scalar(i));
      }
    }
    return b.result();
  });
}
Tensor where_operand(const OpCall& call, size_t i, ScalarType dtype) {
  return call.arg(i).is_tensor() ? call.tensor(i) : scalar_to_tensor(call.scalar(i), dtype);
}
const Tensor* tensor_or_null(const OpCall& call, size_t i) {
  return call.arg(i).is_tensor() ? &call.tensor(i) : nullptr;
}

void meta_where(OpCall& call) {
  const Tensor& cond = call.tensor(0);
  check_bool("where", "condition", cond);
  SymDimVector shape =
      broadcast_all("where", {&cond, tensor_or_null(call, 1), tensor_or_null(call, 2)});
  call.set_output(0, where_dtype(call), shape);
}
void cpu_where(OpCall& call) {
  const ScalarType dt = call.output(0).dtype();
  cpu::where_kernel(call.output(0), call.tensor(0), where_operand(call, 1, dt),
                    where_operand(call, 2, dt));
}

// ---- clamp ----

// An integer bound must be representable in an integer result dtype (as PyTorch's checked
// conversion): clamping a uint8 tensor to min=-1 is an error, not a wrap to 255.
bool fits_in(const Scalar& s, ScalarType dtype) {
  if (!is_integral(dtype) || !s.is_integral()) return true;
  return visit_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (s.kind() == Scalar::Kind::UInt) return std::is_unsigned_v<T> && sizeof(T) == 8;
      const int64_t v = s.to_int64();
      if constexpr (std::is_unsigned_v<T>) {
        return v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<T>::max();
      } else {
        return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
      }
    } else {
      return true;
    }
  });
}

ScalarType clamp_scalar_dtype(const OpCall& call) {
  const std::optional<Scalar> lo = call.arg(1).optional_scalar(),
                              hi = call.arg(2).optional_scalar();
  KILN_CHECK(lo || hi, ValueError, "{}: at least one of 'min' or 'max' must not be None",
             call.name());
  const ScalarType dt = named_promotion(call.name(), [&] {
    ResultTypeBuilder b(call.name());
    b.add(call.tensor(0));
    if (lo) b.add(*lo);
    if (hi) b.add(*hi);
    return b.result();
  });
  for (const std::optional<Scalar>& bound : {lo, hi}) {
    KILN_CHECK(!bound || fits_in(*bound, dt), ValueError,
               "{}: bound {} cannot be converted to the result dtype {} without overflow",
               call.name(), bound->str(), dtype_name(dt));
  }
  return dt;
}
void meta_clamp(OpCall& call) {
  const Tensor& self = call.tensor(0);
  call.set_output(0, clamp_scalar_dtype(call), self.sym_sizes());
}
void cpu_clamp(OpCall& call) {
  cpu::clamp_scalar_kernel(call.output(0), call.tensor(0), call.arg(1).optional_scalar(),
                           call.arg(2).optional_scalar());
}
void meta_clamp_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_inplace("clamp_", self, self.sym_sizes(), clamp_scalar_dtype(call));
  call.set_output(0, self);
}
void cpu_clamp_(OpCall& call) {
  compute_into(call.tensor(0), clamp_scalar_dtype(call), [&](const Tensor& out) {
    cpu::clamp_scalar_kernel(out, call.tensor(0), call.arg(1).optional_scalar(),
                             call.arg(2).optional_scalar());
  });
}

void meta_clamp_tensor(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor lo = call.optional_tensor(1), hi = call.optional_tensor(2);
  KILN_CHECK(lo.defined() || hi.defined(), ValueError,
             "clamp: at least one of 'min' or 'max' must not be None");
  const ScalarType dt = named_promotion("clamp", [&] {
    ResultTypeBuilder b("clamp");
    b.add(self);
    if (lo.defined()) b.add(lo);
    if (hi.defined()) b.add(hi);
    return b.result();
  });
  call.set_output(0, dt, broadcast_all("clamp", {&self, &lo, &hi}));
}
void cpu_clamp_tensor(OpCall& call) {
  cpu::clamp_kernel(call.output(0), call.tensor(0), call.optional_tensor(1),
                    call.optional_tensor(2));
}

// ---- lerp ----

void check_lerp_dtypes(std::string_view op, const Tensor& start, const Tensor& other,
                       std::string_view what) {
  KILN_CHECK(other.dtype() == start.dtype(), DTypeError,
             "{}: expected dtype {} for `{}` (the dtype of start) but got dtype {}; convert with "
             ".to(dtype) first",
             op, dtype_name(start.dtype()), what, dtype_name(other.dtype()));
}
SymDimVector lerp_shape(OpCall& call) {
  const Tensor& start = call.tensor(0);
  const Tensor& end = call.tensor(1);
  check_lerp_dtypes(call.name(), start, end, "end");
  if (call.arg(2).is_tensor()) {
    check_lerp_dtypes(call.name(), start, call.tensor(2), "weight");
    return broadcast_all(call.name(), {&start, &end, &call.tensor(2)});
  }
  return broadcast_all(call.name(), {&start, &end});
}
void meta_lerp(OpCall& call) { call.set_output(0, call.tensor(0).dtype(), lerp_shape(call)); }
void meta_lerp_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_inplace("lerp_", self, lerp_shape(call), self.dtype());
  call.set_output(0, self);
}
void cpu_lerp(OpCall& call) {
  if (call.arg(2).is_tensor()) {
    cpu::lerp_kernel(call.output(0), call.tensor(0), call.tensor(1), call.tensor(2));
  } else {
    cpu::lerp_scalar_kernel(call.output(0), call.tensor(0), call.tensor(1), call.scalar(2));
  }
}

// ---- addcmul / addcdiv ----

ScalarType addc_dtype(const OpCall& call, bool is_div) {
  const std::string_view op = call.name();
  const Tensor &self = call.tensor(0), &t1 = call.tensor(1), &t2 = call.tensor(2);
  if (is_div) {
    KILN_CHECK(!is_integral_or_bool(t1.dtype()) || !is_integral_or_bool(t2.dtype()), DTypeError,
               "{}: integer division of tensor1 ({}) by tensor2 ({}) is not supported (as in "
               "PyTorch); convert them to a floating dtype, or use div with "
               "rounding_mode='trunc' or 'floor'",
               op, dtype_name(t1.dtype()), dtype_name(t2.dtype()));
  }
  const ScalarType dt =
      named_promotion(op, [&] { return ResultTypeBuilder(op).add(self).add(t1).add(t2).result(); });
  KILN_CHECK(is_floating(dt) || !call.scalar(3).is_floating(), DTypeError,
             "{}: for integral input tensors ({}), argument value must not be a floating point "
             "number (got {})",
             op, dtype_name(dt), call.scalar(3).str());
  return dt;
}
SymDimVector addc_shape(const OpCall& call) {
  return broadcast_all(call.name(), {&call.tensor(0), &call.tensor(1), &call.tensor(2)});
}
template <bool kDiv>
void meta_addc(OpCall& call) {
  call.set_output(0, addc_dtype(call, kDiv), addc_shape(call));
}
template <bool kDiv>
void meta_addc_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_inplace(call.name(), self, addc_shape(call), addc_dtype(call, kDiv));
  call.set_output(0, self);
}
template <bool kDiv>
void cpu_addc(OpCall& call) {
  const Tensor& out = call.output(0);
  compute_into(out, addc_dtype(call, kDiv), [&](const Tensor& o) {
    auto* kernel = kDiv ? cpu::addcdiv_kernel : cpu::addcmul_kernel;
    kernel(o, call.tensor(0), call.tensor(1), call.tensor(2), call.scalar(3));
  });
}

// ---- masked_fill ----

void meta_masked_fill(OpCall& call) {
  const Tensor &self = call.tensor(0), &mask = call.tensor(1);
  check_bool(call.name(), "mask", mask);
  check_fits(call.name(), call.scalar(2), self.dtype());  // Note [Overflowing fill values]
  call.set_output(0, self.dtype(), broadcast_all(call.name(), {&self, &mask}));
}
void meta_masked_fill_(OpCall& call) {
  const Tensor &self = call.tensor(0), &mask = call.tensor(1);
  check_bool(call.name(), "mask", mask);
  check_fits(call.name(), call.scalar(2), self.dtype());
  check_inplace(call.name(), self, broadcast_all(call.name(), {&self, &mask}), self.dtype());
  call.set_output(0, self);
}
void cpu_masked_fill(OpCall& call) {
  cpu::masked_fill_kernel(call.output(0), call.tensor(0), call.tensor(1), call.scalar(2));
}

}  // namespace

void register_ternary_ops(OpRegistry& r) {
  const DTypeSet kAll = dtypes::kAll, kNumeric = dtypes::kNumeric, kFloating = dtypes::kFloating;
  const uint32_t kPw = kTagPointwise, kPwIn = kTagPointwise | kTagInplace;
  struct Entry {
    const char* name;
    const char* schema;
    MetaFn meta;
    KernelFn cpu;
    DTypeSet dtypes;
    uint32_t tags;
  };
  const Entry entries[] = {
      // The condition comes first, so `dtypes` (checked on the first tensor) admits every
      // dtype; meta checks that the condition is bool with a clearer message.
      {"where", "where(Tensor condition, Tensor self, Tensor other) -> Tensor", meta_where,
       cpu_where, kAll, kPw},
      {"where.ScalarSelf",
       "where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor", meta_where,
       cpu_where, kAll, kPw},
      {"where.ScalarOther",
       "where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor", meta_where,
       cpu_where, kAll, kPw},
      {"where.Scalar", "where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor",
       meta_where, cpu_where, kAll, kPw},
      {"clamp", "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", meta_clamp,
       cpu_clamp, kNumeric, kPw},
      {"clamp.Tensor", "clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
       meta_clamp_tensor, cpu_clamp_tensor, kNumeric, kPw},
      {"clamp_", "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)",
       meta_clamp_, cpu_clamp_, kNumeric, kPwIn},
      {"lerp", "lerp(Tensor self, Tensor end, Scalar weight) -> Tensor", meta_lerp, cpu_lerp,
       kFloating, kPw},
      {"lerp.Tensor", "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", meta_lerp,
       cpu_lerp, kFloating, kPw},
      {"lerp_", "lerp_(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)", meta_lerp_,
       cpu_lerp, kFloating, kPwIn},
      {"addcmul",
       "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
       meta_addc<false>, cpu_addc<false>, kNumeric, kPw},
      {"addcmul_",
       "addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)",
       meta_addc_<false>, cpu_addc<false>, kNumeric, kPwIn},
      {"addcdiv",
       "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
       meta_addc<true>, cpu_addc<true>, kNumeric, kPw},
      {"addcdiv_",
       "addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)",
       meta_addc_<true>, cpu_addc<true>, kFloating, kPwIn},
      {"masked_fill", "masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor",
       meta_masked_fill, cpu_masked_fill, kAll, kPw},
      {"masked_fill_", "masked_fill_(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
       meta_masked_fill_, cpu_masked_fill, kAll, kPwIn},
  };
  for (const Entry& e : entries) {
    r.add({.name = e.name,
           .schema = e.schema,
           .family = "ternary",
           .meta = e.meta,
           .cpu = e.cpu,
           .dtypes = e.dtypes,
           .tags = e.tags});
  }
}

// ---- public API ----

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  static const OpId id = op_id("where");
  return dispatch::call_tensor(id, condition, self, other);
}
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other) {
  static const OpId id = op_id("where.ScalarSelf");
  return dispatch::call_tensor(id, condition, self, other);
}
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other) {
  static const OpId id = op_id("where.ScalarOther");
  return dispatch::call_tensor(id, condition, self, other);
}
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other) {
  static const OpId id = op_id("where.Scalar");
  return dispatch::call_tensor(id, condition, self, other);
}

Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  static const OpId id = op_id("clamp");
  return dispatch::call_tensor(id, self, min, max);
}
Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max) {
  static const OpId id = op_id("clamp.Tensor");
  return dispatch::call_tensor(id, self, min.defined() ? IValue(min) : IValue(),
                               max.defined() ? IValue(max) : IValue());
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return kiln::clamp(*this, min, max);
}
const Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  static const OpId id = op_id("clamp_");
  dispatch::call_boxed(id, *this, min, max);
  return *this;
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  static const OpId id = op_id("lerp");
  return dispatch::call_tensor(id, start, end, weight);
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  static const OpId id = op_id("lerp.Tensor");
  return dispatch::call_tensor(id, start, end, weight);
}
const Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight) const {
  static const OpId id = op_id("lerp_");
  dispatch::call_boxed(id, *this, end, weight);
  return *this;
}

Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value) {
  static const OpId id = op_id("addcmul");
  return dispatch::call_tensor(id, self, tensor1, tensor2, value);
}
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value) {
  static const OpId id = op_id("addcdiv");
  return dispatch::call_tensor(id, self, tensor1, tensor2, value);
}
const Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  static const OpId id = op_id("addcmul_");
  dispatch::call_boxed(id, *this, t1, t2, value);
  return *this;
}
const Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  static const OpId id = op_id("addcdiv_");
  dispatch::call_boxed(id, *this, t1, t2, value);
  return *this;
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  static const OpId id = op_id("masked_fill");
  return dispatch::call_tensor(id, self, mask, value);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return kiln::masked_fill(*this, mask, value);
}
const Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  static const OpId id = op_id("masked_fill_");
  dispatch::call_boxed(id, *this, mask, value);
  return *this;
}

}  // namespace kiln
