// Unary pointwise ops: neg, abs, exp, log, sin, sigmoid, relu, gelu, rounding, isnan, ... and
// their in-place forms (neg_, exp_, relu_, sigmoid_, tanh_, sqrt_).
//
// Result dtypes follow PyTorch: floating functions (exp, log, sin, sigmoid, ...) of integer or
// bool tensors compute and return the default float dtype; neg/abs/sign/relu/rounding keep the
// dtype (rounding integers is the identity); logical_not and isnan/isinf/isfinite return bool.
// See Note [Pointwise dtype handling] in src/ops/pointwise_utils.h.
#include "kiln/ops/unary.h"

#include "src/kernels/cpu/unary.h"
#include "src/ops/pointwise_utils.h"

namespace kiln {
namespace {

using cpu::UnaryOp;

enum class UnaryResult { Same, Floating, Bool };

ScalarType unary_result_dtype(UnaryResult r, ScalarType in) {
  switch (r) {
    case UnaryResult::Same:
      return in;
    case UnaryResult::Floating:
      return is_floating(in) ? in : kDefaultFloat;
    case UnaryResult::Bool:
      return kBool;
  }
  return in;
}

// An in-place op writes each element once; a self with stride-0 (expanded) dims would have one
// memory location written by several elements.
void check_no_internal_overlap(std::string_view op, const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    // A symbolic size is never 0 or 1 (0/1 specialization), so only a zero stride can share.
    const SymInt size = self.size(d);
    const bool shares = same(self.stride(d), 0) && (size.is_symbolic() || size.raw() > 1);
    KILN_CHECK(!shares, ValueError,
               "{}: the tensor written in place (shape {}, strides {}) has several elements "
               "sharing one memory location (an expanded dim); call .clone() first",
               op, shape_str(self.sym_sizes()), shape_str(self.sym_strides()));
  }
}

// The checks every in-place pointwise op shares: the result dtype must be castable to self's
// (PyTorch's can_cast) and self must not overlap itself.
void check_inplace(std::string_view op, const Tensor& self, ScalarType result) {
  KILN_CHECK(can_cast(result, self.dtype()), DTypeError,
             "{}: result type {} can't be cast to the desired output type {} (input of shape {}); "
             "use the out-of-place op instead",
             op, dtype_name(result), dtype_name(self.dtype()), shape_str(self.sym_sizes()));
  check_no_internal_overlap(op, self);
}

template <UnaryResult R>
void meta_unary(OpCall& call) {
  const Tensor& self = call.tensor(0);
  call.set_output(0, unary_result_dtype(R, self.dtype()), self.sym_sizes());
}

template <UnaryResult R>
void meta_unary_inplace(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_inplace(call.name(), self, unary_result_dtype(R, self.dtype()));
  call.set_output(0, self);
}

template <UnaryOp K>
void cpu_unary(OpCall& call) {
  cpu::unary_kernel(K, call.output(0), call.tensor(0));
}

void meta_gelu(OpCall& call) {
  const std::string& approximate = call.arg(1).string();
  KILN_CHECK(approximate == "none" || approximate == "tanh", ValueError,
             "gelu: approximate must be 'none' or 'tanh', got '{}'", approximate);
  meta_unary<UnaryResult::Same>(call);
}
void cpu_gelu(OpCall& call) {
  const bool tanh = call.arg(1).string() == "tanh";
  cpu::unary_kernel(tanh ? UnaryOp::GeluTanh : UnaryOp::GeluErf, call.output(0), call.tensor(0));
}

void cpu_softplus(OpCall& call) {
  cpu::softplus_kernel(call.output(0), call.tensor(0), call.scalar(1).to_double(),
                       call.scalar(2).to_double());
}

std::optional<double> optional_double(const IValue& v) {
  return v.is_none() ? std::nullopt : std::optional(v.to_double());
}
void cpu_nan_to_num(OpCall& call) {
  cpu::nan_to_num_kernel(call.output(0), call.tensor(0), optional_double(call.arg(1)),
                         optional_double(call.arg(2)), optional_double(call.arg(3)));
}

struct UnarySpec {
  const char* name;
  MetaFn meta;
  KernelFn cpu;
  DTypeSet dtypes;
  uint32_t tags;
};

constexpr uint32_t kPw = kTagPointwise;
constexpr uint32_t kPwNoGrad = kTagPointwise | kTagNondifferentiable;
constexpr DTypeSet kAll = dtypes::kAll;
constexpr DTypeSet kNumeric = dtypes::kNumeric;
constexpr DTypeSet kFloating = dtypes::kFloating;

template <UnaryOp K>
constexpr UnarySpec floating_fn(const char* name, DTypeSet dtypes = kAll) {
  return {name, meta_unary<UnaryResult::Floating>, cpu_unary<K>, dtypes, kPw};
}
template <UnaryOp K>
constexpr UnarySpec same_dtype(const char* name, DTypeSet dtypes, uint32_t tags = kPw) {
  return {name, meta_unary<UnaryResult::Same>, cpu_unary<K>, dtypes, tags};
}
template <UnaryOp K>
constexpr UnarySpec bool_result(const char* name) {
  return {name, meta_unary<UnaryResult::Bool>, cpu_unary<K>, kAll, kPwNoGrad};
}
template <UnaryOp K, UnaryResult R>
constexpr UnarySpec inplace(const char* name, DTypeSet dtypes) {
  return {name, meta_unary_inplace<R>, cpu_unary<K>, dtypes, kPw | kTagInplace};
}

const UnarySpec kUnaryOps[] = {
    same_dtype<UnaryOp::Neg>("neg", kNumeric),  // -bool is an error, as in PyTorch
    same_dtype<UnaryOp::Abs>("abs", kNumeric),
    same_dtype<UnaryOp::Sign>("sign", kAll),
    floating_fn<UnaryOp::Exp>("exp"),
    floating_fn<UnaryOp::Exp2>("exp2"),
    floating_fn<UnaryOp::Expm1>("expm1"),
    floating_fn<UnaryOp::Log>("log"),
    floating_fn<UnaryOp::Log2>("log2"),
    floating_fn<UnaryOp::Log10>("log10"),
    floating_fn<UnaryOp::Log1p>("log1p"),
    floating_fn<UnaryOp::Sqrt>("sqrt"),
    floating_fn<UnaryOp::Rsqrt>("rsqrt"),
    floating_fn<UnaryOp::Sin>("sin"),
    floating_fn<UnaryOp::Cos>("cos"),
    floating_fn<UnaryOp::Tan>("tan"),
    floating_fn<UnaryOp::Asin>("asin"),
    floating_fn<UnaryOp::Acos>("acos"),
    floating_fn<UnaryOp::Atan>("atan"),
    floating_fn<UnaryOp::Sinh>("sinh"),
    floating_fn<UnaryOp::Cosh>("cosh"),
    floating_fn<UnaryOp::Tanh>("tanh"),
    floating_fn<UnaryOp::Sigmoid>("sigmoid"),
    floating_fn<UnaryOp::Erf>("erf"),
    floating_fn<UnaryOp::Erfinv>("erfinv"),
    floating_fn<UnaryOp::Reciprocal>("reciprocal"),
    // PyTorch's silu kernel is floating only (no integer-to-float promotion).
    floating_fn<UnaryOp::Silu>("silu", kFloating),
    same_dtype<UnaryOp::Relu>("relu", kNumeric),
    same_dtype<UnaryOp::Floor>("floor", kNumeric),
    same_dtype<UnaryOp::Ceil>("ceil", kNumeric),
    same_dtype<UnaryOp::Round>("round", kNumeric),
    same_dtype<UnaryOp::Trunc>("trunc", kNumeric),
    same_dtype<UnaryOp::Frac>("frac", kFloating),
    same_dtype<UnaryOp::BitwiseNot>("bitwise_not", dtypes::kIntegralAndBool, kPwNoGrad),
    bool_result<UnaryOp::LogicalNot>("logical_not"),
    bool_result<UnaryOp::IsNan>("isnan"),
    bool_result<UnaryOp::IsInf>("isinf"),
    bool_result<UnaryOp::IsFinite>("isfinite"),
    // exp_ and friends of an integer tensor would need a float result written into it: only the
    // floating dtypes qualify (check_inplace's can_cast rule; the table states it up front).
    inplace<UnaryOp::Neg, UnaryResult::Same>("neg_", kNumeric),
    inplace<UnaryOp::Exp, UnaryResult::Floating>("exp_", kFloating),
    inplace<UnaryOp::Relu, UnaryResult::Same>("relu_", kNumeric),
    inplace<UnaryOp::Sigmoid, UnaryResult::Floating>("sigmoid_", kFloating),
    inplace<UnaryOp::Tanh, UnaryResult::Floating>("tanh_", kFloating),
    inplace<UnaryOp::Sqrt, UnaryResult::Floating>("sqrt_", kFloating),
};

}  // namespace

void register_unary_ops(OpRegistry& r) {
  for (const UnarySpec& s : kUnaryOps) {
    const bool in_place = (s.tags & kTagInplace) != 0;
    r.add({.name = s.name,
           .schema = in_place ? fmt::format("{}(Tensor(a!) self) -> Tensor(a!)", s.name)
                              : fmt::format("{}(Tensor self) -> Tensor", s.name),
           .family = "unary",
           .meta = s.meta,
           .cpu = s.cpu,
           .dtypes = s.dtypes,
           .tags = s.tags});
  }
  r.add({.name = "gelu",
         .schema = "gelu(Tensor self, *, str approximate='none') -> Tensor",
         .family = "unary",
         .meta = meta_gelu,
         .cpu = cpu_gelu,
         .dtypes = kFloating,
         .tags = kPw});
  r.add({.name = "softplus",
         .schema = "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
         .family = "unary",
         .meta = meta_unary<UnaryResult::Same>,
         .cpu = cpu_softplus,
         .dtypes = kFloating,
         .tags = kPw});
  r.add({.name = "nan_to_num",
         .schema = "nan_to_num(Tensor self, float? nan=None, float? posinf=None, "
                   "float? neginf=None) -> Tensor",
         .family = "unary",
         .meta = meta_unary<UnaryResult::Same>,
         .cpu = cpu_nan_to_num,
         .dtypes = kAll,
         .tags = kPw});
}

// ---- public API ----

#define KILN_UNARY_WRAPPER(op)              \
  Tensor op(const Tensor& self) {           \
    static const OpId id = op_id(#op);      \
    return dispatch::call_tensor(id, self); \
  }                                         \
  Tensor Tensor::op() const { return kiln::op(*this); }
KILN_UNARY_WRAPPER(neg)
KILN_UNARY_WRAPPER(abs)
KILN_UNARY_WRAPPER(sign)
KILN_UNARY_WRAPPER(exp)
KILN_UNARY_WRAPPER(exp2)
KILN_UNARY_WRAPPER(expm1)
KILN_UNARY_WRAPPER(log)
KILN_UNARY_WRAPPER(log2)
KILN_UNARY_WRAPPER(log10)
KILN_UNARY_WRAPPER(log1p)
KILN_UNARY_WRAPPER(sqrt)
KILN_UNARY_WRAPPER(rsqrt)
KILN_UNARY_WRAPPER(sin)
KILN_UNARY_WRAPPER(cos)
KILN_UNARY_WRAPPER(tan)
KILN_UNARY_WRAPPER(asin)
KILN_UNARY_WRAPPER(acos)
KILN_UNARY_WRAPPER(atan)
KILN_UNARY_WRAPPER(sinh)
KILN_UNARY_WRAPPER(cosh)
KILN_UNARY_WRAPPER(tanh)
KILN_UNARY_WRAPPER(sigmoid)
KILN_UNARY_WRAPPER(relu)
KILN_UNARY_WRAPPER(erf)
KILN_UNARY_WRAPPER(erfinv)
KILN_UNARY_WRAPPER(floor)
KILN_UNARY_WRAPPER(ceil)
KILN_UNARY_WRAPPER(round)
KILN_UNARY_WRAPPER(trunc)
KILN_UNARY_WRAPPER(frac)
KILN_UNARY_WRAPPER(reciprocal)
KILN_UNARY_WRAPPER(logical_not)
KILN_UNARY_WRAPPER(bitwise_not)
KILN_UNARY_WRAPPER(isnan)
KILN_UNARY_WRAPPER(isinf)
KILN_UNARY_WRAPPER(isfinite)
#undef KILN_UNARY_WRAPPER

#define KILN_UNARY_INPLACE_WRAPPER(op)     \
  const Tensor& Tensor::op##_() const {    \
    static const OpId id = op_id(#op "_"); \
    dispatch::call_boxed(id, *this);       \
    return *this;                          \
  }
KILN_UNARY_INPLACE_WRAPPER(neg)
KILN_UNARY_INPLACE_WRAPPER(exp)
KILN_UNARY_INPLACE_WRAPPER(relu)
KILN_UNARY_INPLACE_WRAPPER(sigmoid)
KILN_UNARY_INPLACE_WRAPPER(tanh)
KILN_UNARY_INPLACE_WRAPPER(sqrt)
#undef KILN_UNARY_INPLACE_WRAPPER

Tensor silu(const Tensor& self) {
  static const OpId id = op_id("silu");
  return dispatch::call_tensor(id, self);
}

Tensor gelu(const Tensor& self, std::string_view approximate) {
  static const OpId id = op_id("gelu");
  return dispatch::call_tensor(id, self, approximate);
}

Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  static const OpId id = op_id("softplus");
  return dispatch::call_tensor(id, self, beta, threshold);
}

Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  static const OpId id = op_id("nan_to_num");
  return dispatch::call_tensor(id, self, nan, posinf, neginf);
}

Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }
Tensor operator!(const Tensor& a) { return logical_not(a); }

}  // namespace kiln
