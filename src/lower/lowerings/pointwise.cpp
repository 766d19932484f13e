// Lowerings of the pointwise ops: unary math, binary arithmetic, comparisons, logical and bitwise
// ops, where, clamp, casts. Each builds one Pointwise body over the broadcast output shape; dtypes
// follow Note [Typed values] in ops_handler.h (cast to the compute dtype, compute, cast to the
// output dtype).
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "src/lower/lowerings/common.h"

namespace kiln::lower {
namespace {

// The loader of operand `i` (tensor or Scalar) as a value of `dtype`, broadcast to `sizes`.
// Operand i of a pointwise node, cast to `dtype` (the compute type). `common`, when given, is the
// dtype the eager kernel converts every operand to first: a 16-bit float op computes in float32,
// but a wider operand (the wrapped 1e5 of `1e5 / h`) is rounded to the 16-bit type first, as the
// eager kernel does (1e5 is inf in float16).
std::function<Val(const Index&)> operand_loader(GraphLowering& l, const graph::Node& node, size_t i,
                                                const std::vector<ExprPtr>& sizes, ScalarType dtype,
                                                std::optional<ScalarType> common = std::nullopt) {
  const bool round = common && *common != dtype && (*common == kFloat16 || *common == kBFloat16);
  const graph::Arg& a = node.args()[i];
  if (a.is_value()) {
    const TensorBox& box = l.box(a.as_value());
    Loader ld = broadcast_loader(box, sizes);
    if (round && box.dtype() != *common) {
      const ScalarType via = *common;
      return [ld, dtype, via](const Index& idx) { return cast(cast(ld(idx), via), dtype); };
    }
    return [ld, dtype](const Index& idx) { return cast(ld(idx), dtype); };
  }
  Scalar s = a.as_constant().scalar();
  if (round && !s.is_bool())
    s = Scalar(static_cast<double>(*common == kFloat16 ? static_cast<float>(s.to<Half>())
                                                       : static_cast<float>(s.to<BFloat16>())));
  return [s, dtype](const Index&) { return scalar_constant(s, dtype); };
}

std::vector<TensorBox> one(TensorBox b) { return {std::move(b)}; }

// Where an integer Scalar lies against every value of the integer dtype `c`: -1 below them all,
// +1 above them all, 0 within (or not an integer comparison).
int outside_range(const Scalar& s, ScalarType c) {
  if (!s.is_integral() || !is_integral(c)) return 0;
  const int bits = static_cast<int>(element_size(c)) * 8;
  const __int128 v = s.kind() == Scalar::Kind::UInt ? static_cast<__int128>(s.to_uint64())
                                                    : static_cast<__int128>(s.to_int64());
  const __int128 lo = is_unsigned(c) ? 0 : -(static_cast<__int128>(1) << (bits - 1));
  const __int128 hi = is_unsigned(c) ? (static_cast<__int128>(1) << bits) - 1
                                     : (static_cast<__int128>(1) << (bits - 1)) - 1;
  return v < lo ? -1 : (v > hi ? 1 : 0);
}

// x <op> v for every x when v is below (side -1) or above (side +1) all of them.
bool constant_comparison(BinaryOp op, int side) {
  switch (op) {
    case BinaryOp::ne:
      return true;
    case BinaryOp::lt:
    case BinaryOp::le:
      return side > 0;
    case BinaryOp::gt:
    case BinaryOp::ge:
      return side < 0;
    default:
      return false;  // eq
  }
}

void register_unary(const char* name, UnaryOp op) {
  // erfinv has no generated form (codegen/cpp/printer.cpp): it runs as an extern call, so the
  // rest of its graph still compiles.
  if (op == UnaryOp::erfinv) return;
  register_lowering(name, [op](GraphLowering& l, const graph::Node& node) {
    const graph::TensorMeta& out = out_meta(node);
    const bool to_bool = produces_bool(op);
    const TensorBox& x = arg_box(l, node, 0);
    // Bool-producing ops test the input in its own dtype; the others compute in the output's.
    const ScalarType c = compute_type(to_bool ? x.dtype() : out.dtype);
    Loader ld = x.make_loader();
    const ScalarType out_dtype = out.dtype;
    return one(
        make_pointwise(out_dtype, to_exprs(out.sizes), [ld, op, c, out_dtype](const Index& i) {
          return cast(unary(op, cast(ld(i), c)), out_dtype);
        }));
  });
}

// v <op> x  <=>  x <mirrored(op)> v.
BinaryOp mirrored(BinaryOp op) {
  switch (op) {
    case BinaryOp::lt:
      return BinaryOp::gt;
    case BinaryOp::le:
      return BinaryOp::ge;
    case BinaryOp::gt:
      return BinaryOp::lt;
    case BinaryOp::ge:
      return BinaryOp::le;
    default:
      return op;
  }
}

// Note [Exact comparisons] for a 0-dim tensor operand: its value is known only when the kernel
// runs, so the kernel checks it against the compute dtype's range (in the operand's own dtype)
// and gives the constant answer when it is outside, as the eager kernel does. A signed tensor
// compared with a uint64 one is checked the same way, element by element (Note [Comparing uint64
// with a signed tensor] in src/ops/binary_compare.cpp).
struct RangeCheck {
  size_t operand = 0;
  ScalarType dtype = kInt64;  // the operand's own dtype
  Loader raw;                 // the operand, not converted
  std::optional<Scalar> below,
      above;  // the compute dtype's bounds, where the operand can pass them
};

Scalar lowest(ScalarType t) {
  if (is_unsigned(t) || t == kBool) return Scalar(int64_t{0});
  // -2^(bits-1), without negating int64's minimum (undefined behaviour).
  const int bits = static_cast<int>(element_size(t)) * 8;
  return Scalar(bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1)));
}
Scalar highest(ScalarType t) {
  if (t == kBool) return Scalar(int64_t{1});
  if (t == kUInt64) return Scalar(std::numeric_limits<uint64_t>::max());
  const int bits = static_cast<int>(element_size(t)) * 8 - (is_unsigned(t) ? 0 : 1);
  return Scalar(static_cast<int64_t>((uint64_t{1} << bits) - 1));
}

// Note [Comparing uint64 with a signed tensor] (src/ops/binary_compare.cpp): two tensor operands,
// one uint64 and the other a signed integer type.
bool uint64_with_signed(const graph::Node& node) {
  if (node.args().size() < 2 || !node.args()[0].is_value() || !node.args()[1].is_value())
    return false;
  const ScalarType x = node.args()[0].as_value()->meta().dtype;
  const ScalarType y = node.args()[1].as_value()->meta().dtype;
  auto is_signed_int = [](ScalarType t) { return is_integral(t) && !is_unsigned(t) && t != kBool; };
  return (x == kUInt64 && is_signed_int(y)) || (y == kUInt64 && is_signed_int(x));
}

std::vector<RangeCheck> zero_dim_range_checks(GraphLowering& l, const graph::Node& node,
                                              ScalarType c, const std::vector<ExprPtr>& sizes) {
  std::vector<RangeCheck> checks;
  if (!is_integral(c)) return checks;
  for (size_t k = 0; k < 2; ++k) {
    if (!node.args()[k].is_value()) continue;
    const TensorBox& box = arg_box(l, node, k);
    const ScalarType d = box.dtype();
    const bool signed_with_uint64 = c == kUInt64 && is_integral(d) && !is_unsigned(d) && d != kBool;
    if ((box.dim() != 0 && !signed_with_uint64) || d == c || !(is_integral(d) || d == kBool))
      continue;
    RangeCheck check{k, d, broadcast_loader(box, sizes), std::nullopt, std::nullopt};
    if (outside_range(lowest(d), c) < 0) check.below = lowest(c);
    if (outside_range(highest(d), c) > 0) check.above = highest(c);
    if (check.below || check.above) checks.push_back(std::move(check));
  }
  return checks;
}

// `compare`: the operands are cast to their result type (comparisons) or to bool (logical ops);
// otherwise to the output dtype.
enum class Operands { OutputDtype, ResultType, Bool };

void register_binary(std::string name, BinaryOp op, Operands how, bool has_alpha = false) {
  // The lambda owns its copy of the name (callers pass temporaries).
  register_lowering(name, [op, how, has_alpha, name](GraphLowering& l, const graph::Node& node) {
    const graph::TensorMeta& out = out_meta(node);
    const std::vector<ExprPtr> sizes = to_exprs(out.sizes);
    ScalarType c = compute_type(out.dtype);
    if (how == Operands::ResultType)
      c = uint64_with_signed(node) ? kUInt64 : compute_type(operands_result_type(node, name));
    if (how == Operands::Bool) c = kBool;
    // Note [Exact comparisons] (src/kernels/cpu/binary_compare.cpp): an integer Scalar outside
    // the compute dtype's range is not converted (it would wrap); the comparison is a constant.
    if (how == Operands::ResultType && node.args()[1].is_constant()) {
      if (const int side = outside_range(node.args()[1].as_constant().scalar(), c); side != 0) {
        const bool value = constant_comparison(op, side);
        const ScalarType out_dtype = out.dtype;
        return one(make_pointwise(out_dtype, sizes, [value, out_dtype](const Index&) {
          return constant(value ? 1.0 : 0.0, out_dtype);
        }));
      }
    }
    std::vector<RangeCheck> checks;
    if (how == Operands::ResultType) checks = zero_dim_range_checks(l, node, c, sizes);
    const ScalarType common = how == Operands::OutputDtype ? out.dtype : c;
    auto a = operand_loader(l, node, 0, sizes, c, common);
    auto b = operand_loader(l, node, 1, sizes, c, common);
    std::optional<Scalar> alpha;
    if (has_alpha && has_arg(node, 2)) {
      alpha = arg_constant(node, 2).scalar();
      if (*alpha == Scalar(1)) alpha.reset();
    }
    const ScalarType out_dtype = out.dtype;
    // Note [Power of one half] (src/kernels/cpu/binary_arith.cpp): x^0.5 is sqrt(x) and x^-0.5
    // is rsqrt(x), as the eager kernel computes them. The exponent may be boxed as a Scalar or
    // as a double (a parsed graph, the fuzzer's programs: kiln-fuzz --dynamic seed 20261217
    // index 441 gave pow(-inf, 0.5) = inf); both mean the same floating Scalar to the op.
    // (An integer Scalar never equals 0.5, so the boxing kind is all that is checked.)
    const bool number_exponent =
        node.args()[1].is_constant() &&
        (node.args()[1].as_constant().is_double() || node.args()[1].as_constant().is_scalar());
    if (op == BinaryOp::pow && is_floating(out_dtype) && number_exponent) {
      const double e = node.args()[1].as_constant().scalar().to_double();
      if (e == 0.5 || e == -0.5) {
        const UnaryOp root = e > 0 ? UnaryOp::sqrt : UnaryOp::rsqrt;
        return one(make_pointwise(
            out_dtype, sizes, [=](const Index& i) { return cast(unary(root, a(i)), out_dtype); }));
      }
    }
    return one(make_pointwise(out_dtype, sizes, [=](const Index& i) {
      Val bv = b(i);
      if (alpha) bv = binary(BinaryOp::mul, bv, scalar_constant(*alpha, c));
      Val result = cast(binary(op, a(i), bv), out_dtype);
      for (const RangeCheck& check : checks) {
        // x <op> v, with v the 0-dim operand (the second, or the first seen from the other side).
        const BinaryOp seen = check.operand == 1 ? op : mirrored(op);
        const Val v = check.raw(i);
        auto side_value = [&](int side) {
          return constant(constant_comparison(seen, side) ? 1.0 : 0.0, out_dtype);
        };
        if (check.above)
          result = where(binary(BinaryOp::gt, v, scalar_constant(*check.above, check.dtype)),
                         side_value(1), result);
        if (check.below)
          result = where(binary(BinaryOp::lt, v, scalar_constant(*check.below, check.dtype)),
                         side_value(-1), result);
      }
      return result;
    }));
  });
}

// where(cond, self, other) with any of self/other a Scalar (the .Scalar* overloads).
std::vector<TensorBox> lower_where(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const std::vector<ExprPtr> sizes = to_exprs(out.sizes);
  const ScalarType c = compute_type(out.dtype);
  Loader cond = broadcast_loader(arg_box(l, node, 0), sizes);
  auto a = operand_loader(l, node, 1, sizes, c);
  auto b = operand_loader(l, node, 2, sizes, c);
  const ScalarType out_dtype = out.dtype;
  return one(make_pointwise(out_dtype, sizes, [=](const Index& i) {
    return cast(where(cast(cond(i), kBool), a(i), b(i)), out_dtype);
  }));
}

// clamp(self, min?, max?) with Scalar or Tensor bounds: max(min(x, hi), lo) with NaN propagating
// from x (maximum/minimum propagate NaN).
std::vector<TensorBox> lower_clamp(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const std::vector<ExprPtr> sizes = to_exprs(out.sizes);
  const ScalarType c = compute_type(out.dtype);
  auto x = operand_loader(l, node, 0, sizes, c);
  std::function<Val(const Index&)> lo, hi;
  if (has_arg(node, 1)) lo = operand_loader(l, node, 1, sizes, c);
  if (has_arg(node, 2)) hi = operand_loader(l, node, 2, sizes, c);
  const ScalarType out_dtype = out.dtype;
  return one(make_pointwise(out_dtype, sizes, [=](const Index& i) {
    Val v = x(i);
    if (lo) v = binary(BinaryOp::maximum, v, lo(i));
    if (hi) v = binary(BinaryOp::minimum, v, hi(i));
    return cast(v, out_dtype);
  }));
}

std::vector<TensorBox> lower_relu(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  Loader x = arg_box(l, node, 0).make_loader();
  const ScalarType c = compute_type(out.dtype), out_dtype = out.dtype;
  return one(make_pointwise(out_dtype, to_exprs(out.sizes), [=](const Index& i) {
    Val v = cast(x(i), c);
    // relu keeps NaN: where(v > 0, v, 0) would drop it; eager's relu is max(v, 0) with NaN kept.
    Val zero = constant(0, c);
    Val r = where(binary(BinaryOp::lt, v, zero), zero, v);
    return cast(r, out_dtype);
  }));
}

// _to_copy(self, dtype), clone(self): a pointwise copy (a cast for _to_copy).
std::vector<TensorBox> lower_copy(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  Loader x = arg_box(l, node, 0).make_loader();
  const ScalarType out_dtype = out.dtype;
  return one(make_pointwise(out_dtype, to_exprs(out.sizes),
                            [=](const Index& i) { return cast(x(i), out_dtype); }));
}

// div(self, other, rounding_mode): "" true division, "floor", "trunc".
std::vector<TensorBox> lower_div(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const std::vector<ExprPtr> sizes = to_exprs(out.sizes);
  const ScalarType c = compute_type(out.dtype);
  std::string mode = has_arg(node, 2) ? arg_constant(node, 2).string() : std::string();
  const BinaryOp op = mode.empty()      ? BinaryOp::truediv
                      : mode == "floor" ? BinaryOp::floordiv
                                        : BinaryOp::truncdiv;
  auto a = operand_loader(l, node, 0, sizes, c, out.dtype);
  auto b = operand_loader(l, node, 1, sizes, c, out.dtype);
  const ScalarType out_dtype = out.dtype;
  return one(make_pointwise(
      out_dtype, sizes, [=](const Index& i) { return cast(binary(op, a(i), b(i)), out_dtype); }));
}

}  // namespace

void register_pointwise_lowerings() {
#define KILN_REGISTER_UNARY(name) register_unary(#name, UnaryOp::name);
  KILN_LOOP_UNARY_OPS(KILN_REGISTER_UNARY)
#undef KILN_REGISTER_UNARY

  using O = Operands;
  for (auto [base, op] : {std::pair{"add", BinaryOp::add}, {"sub", BinaryOp::sub}}) {
    register_binary(base, op, O::OutputDtype, true);
    register_binary(std::string(base) + ".Scalar", op, O::OutputDtype, true);
  }
  for (auto [base, op] : {std::pair{"mul", BinaryOp::mul},
                          {"remainder", BinaryOp::remainder},
                          {"fmod", BinaryOp::fmod},
                          {"bitwise_and", BinaryOp::bitwise_and},
                          {"bitwise_or", BinaryOp::bitwise_or},
                          {"bitwise_xor", BinaryOp::bitwise_xor}}) {
    register_binary(base, op, O::OutputDtype);
    register_binary(std::string(base) + ".Scalar", op, O::OutputDtype);
  }
  register_binary("pow", BinaryOp::pow, O::OutputDtype);
  register_binary("pow.Tensor_Scalar", BinaryOp::pow, O::OutputDtype);
  for (auto [name, op] : {std::pair{"maximum", BinaryOp::maximum},
                          {"minimum", BinaryOp::minimum},
                          {"atan2", BinaryOp::atan2},
                          {"hypot", BinaryOp::hypot},
                          {"bitwise_left_shift", BinaryOp::lshift},
                          {"bitwise_right_shift", BinaryOp::rshift}}) {
    register_binary(name, op, O::OutputDtype);
  }
  for (auto [base, op] : {std::pair{"eq", BinaryOp::eq},
                          {"ne", BinaryOp::ne},
                          {"lt", BinaryOp::lt},
                          {"le", BinaryOp::le},
                          {"gt", BinaryOp::gt},
                          {"ge", BinaryOp::ge}}) {
    register_binary(base, op, O::ResultType);
    register_binary(std::string(base) + ".Scalar", op, O::ResultType);
  }
  for (auto [name, op] : {std::pair{"logical_and", BinaryOp::logical_and},
                          {"logical_or", BinaryOp::logical_or},
                          {"logical_xor", BinaryOp::logical_xor}}) {
    register_binary(name, op, O::Bool);
  }
  register_lowering("where", lower_where);
  register_lowering("where.ScalarSelf", lower_where);
  register_lowering("where.ScalarOther", lower_where);
  register_lowering("where.Scalar", lower_where);
  register_lowering("clamp", lower_clamp);
  register_lowering("clamp.Tensor", lower_clamp);
  register_lowering("relu", lower_relu);
  register_lowering("_to_copy", lower_copy);
  register_lowering("clone", lower_copy);
  register_lowering("div", lower_div);
  register_lowering("div.Scalar", lower_div);
}

}  // namespace kiln::lower
