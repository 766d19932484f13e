#include "src/codegen/cpp/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "kiln/error.h"
#include "kiln/half.h"

namespace kiln::codegen {

using lower::BinaryOp;
using lower::ReductionType;
using lower::UnaryOp;
using lower::Val;
using sym::ExprKind;

const char* value_type(ScalarType dtype) {
  switch (dtype) {
    case kBool:
      return "bool";
    case kUInt8:
      return "uint8_t";
    case kUInt16:
      return "uint16_t";
    case kUInt32:
      return "uint32_t";
    case kUInt64:
      return "uint64_t";
    case kInt8:
      return "int8_t";
    case kInt16:
      return "int16_t";
    case kInt32:
      return "int32_t";
    case kInt64:
      return "int64_t";
    case kFloat16:
    case kBFloat16:
    case kFloat32:
      return "float";
    case kFloat64:
      return "double";
  }
  return "?";
}

const char* memory_type(ScalarType dtype) {
  return dtype == kFloat16 || dtype == kBFloat16 ? "uint16_t" : value_type(dtype);
}

namespace {

// Note [Lane offsets]
// Every vector loop starts its vector variable v at a multiple of 8 (0, a chunk start, a lane
// block) and steps by 8, so lane k of a vector iteration is at v = 8q + k for some q. An index
// that is not linear in v (2 * (v // 2) for a pooling window's first column, v // 2 for the
// window itself) can still move by a fixed amount from lane 0 to lane k: e(8q + k) - e(8q),
// simplified, is then an integer. Those offsets make the load a pattern of contiguous elements
// (kiln_load_pairs for v // 2, kiln_load_even_pairs for 2 * (v // 2)) or a gather at constant
// offsets, and an index value a splat plus constant lanes.
std::optional<std::array<int64_t, 8>> lane_offsets(sym::ExprPtr e, sym::ExprPtr v) {
  const sym::ExprPtr q = sym::symbol("kiln_lane_block");
  auto at_lane = [&](int64_t k) {
    return sym::substitute(e, [&](sym::ExprPtr s) {
      return s == v ? sym::add(sym::mul(sym::integer(8), q), sym::integer(k)) : nullptr;
    });
  };
  const sym::ExprPtr first = at_lane(0);
  std::array<int64_t, 8> offsets{};
  for (int64_t k = 1; k < 8; ++k) {
    const sym::ExprPtr d = sym::sub(at_lane(k), first);
    if (!d->is_integer()) return std::nullopt;
    offsets[static_cast<size_t>(k)] = d->value();
  }
  return offsets;
}

std::string lane_vector(const std::array<int64_t, 8>& offsets, const char* type) {
  std::string out = fmt::format("({}){{", type);
  for (size_t k = 0; k < 8; ++k) out += fmt::format("{}{}", k ? ", " : "", offsets[k]);
  return out + "}";
}

std::string int_literal(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return fmt::format("{}LL", v);
}

std::string float_literal(double v, ScalarType dtype) {
  const bool f32 = dtype != kFloat64;
  if (std::isnan(v)) return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) {
    std::string inf = f32 ? "__builtin_inff()" : "__builtin_inf()";
    return v < 0 ? fmt::format("(-{})", inf) : inf;
  }
  // Hex floats are exact.
  std::string s = fmt::format("{:a}", v);
  if (f32) return fmt::format("(float){}", s);
  return s;
}

std::string join_args(std::span<const sym::ExprPtr> args, const lower::VarRanges& r,
                      const char* sep) {
  std::string s;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) s += sep;
    s += cpp_expr(args[i], r);
  }
  return s;
}

}  // namespace

std::string cpp_expr(sym::ExprPtr e, const lower::VarRanges& r) {
  switch (e->kind()) {
    case ExprKind::Integer:
      return int_literal(e->value());
    case ExprKind::Symbol:
      return e->name();
    case ExprKind::Add:
      return fmt::format("({})", join_args(e->args(), r, " + "));
    case ExprKind::Mul:
      return fmt::format("({})", join_args(e->args(), r, " * "));
    case ExprKind::FloorDiv:
    case ExprKind::Mod: {
      const bool div = e->kind() == ExprKind::FloorDiv;
      const std::string a = cpp_expr(e->args()[0], r), b = cpp_expr(e->args()[1], r);
      // Non-negative operands: C's truncating operators are floor division and modulo.
      if (lower::is_nonnegative(e->args()[0], r) && lower::is_nonnegative(e->args()[1], r))
        return fmt::format("({} {} {})", a, div ? "/" : "%", b);
      // Index arithmetic: a zero divisor here is a size 0, whose loops never run, so it is
      // not a user's division by zero (Note [Runtime errors in generated code]).
      return fmt::format("kiln_index_{}({}, {})", div ? "floordiv" : "remainder", a, b);
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      std::string s = cpp_expr(e->args()[0], r);
      for (size_t i = 1; i < e->args().size(); ++i)
        s = fmt::format("kiln_{}<int64_t>({}, {})", e->kind() == ExprKind::Min ? "min" : "max", s,
                        cpp_expr(e->args()[i], r));
      return s;
    }
    case ExprKind::True:
      return "true";
    case ExprKind::False:
      return "false";
    case ExprKind::Eq:
      return fmt::format("({})", join_args(e->args(), r, " == "));
    case ExprKind::Ne:
      return fmt::format("({})", join_args(e->args(), r, " != "));
    case ExprKind::Lt:
      return fmt::format("({})", join_args(e->args(), r, " < "));
    case ExprKind::Le:
      return fmt::format("({})", join_args(e->args(), r, " <= "));
    case ExprKind::And:
      return fmt::format("({})", join_args(e->args(), r, " && "));
    case ExprKind::Or:
      return fmt::format("({})", join_args(e->args(), r, " || "));
    case ExprKind::Not:
      return fmt::format("(!{})", cpp_expr(e->args()[0], r));
  }
  return "?";
}

CppPrinter::CppPrinter(std::string prefix, const lower::VarRanges& ranges, sym::ExprPtr vector_var)
    : prefix_(std::move(prefix)), ranges_(ranges), vector_var_(vector_var) {}

Val CppPrinter::emit(ScalarType dtype, bool vector, const std::string& expr) {
  const Val v{static_cast<int32_t>(vals_.size()), dtype};
  const std::string name = fmt::format("{}t{}", prefix_, v.id);
  const char* type = vector ? (dtype == kBool ? "ki8" : "kf8") : value_type(dtype);
  (vector_mode() && !vector ? invariant_ : body_)
      .push_back(fmt::format("const {} {} = {};", type, name, expr));
  vals_.push_back({name, vector});
  return v;
}

Val CppPrinter::literal(ScalarType dtype, std::string expr) {
  const Val v{static_cast<int32_t>(vals_.size()), dtype};
  vals_.push_back({std::move(expr), false});
  return v;
}

std::string CppPrinter::vec(Val v) const {
  const Repr& r = repr(v);
  if (r.vector) return r.expr;
  if (v.dtype == kBool) return fmt::format("((ki8){{}} - (int32_t)({}))", r.expr);
  if (v.dtype == kFloat32 || v.dtype == kFloat16 || v.dtype == kBFloat16)
    return fmt::format("kiln_splat({})", r.expr);
  throw NotVectorizable(fmt::format("a {} value", dtype_name(v.dtype)));
}

sym::ExprPtr CppPrinter::address(std::string_view buffer, sym::ExprPtr index) const {
  if (!local_.names.count(std::string(buffer))) return index;
  return sym::substitute(index, [&](sym::ExprPtr v) {
    const auto& outer = local_.outer_vars;
    return std::find(outer.begin(), outer.end(), v) != outer.end() ? sym::integer(0) : nullptr;
  });
}

Val CppPrinter::load(lower::BufferRef buffer, sym::ExprPtr idx) {
  const sym::ExprPtr e = lower::simplify_index(address(buffer.name, idx), ranges_);
  const std::string name(buffer.name);
  auto scalar_load = [&](const std::string& at) {
    if (buffer.dtype == kFloat16) return fmt::format("kiln_h2f({}[{}])", name, at);
    if (buffer.dtype == kBFloat16) return fmt::format("kiln_bf2f({}[{}])", name, at);
    return fmt::format("{}[{}]", name, at);
  };
  if (!vector_mode()) return emit(buffer.dtype, false, scalar_load(cpp_expr(e, ranges_)));
  auto coef = lower::linear_coefficient(e, vector_var_);
  if (!coef) return load_at_lane_offsets(buffer, e);
  const std::string at = cpp_expr(e, ranges_);
  if (*coef == sym::integer(0)) {
    if (buffer.dtype == kBool) return emit(kBool, false, scalar_load(at));
    return emit(buffer.dtype, false, scalar_load(at));
  }
  const bool reduced = buffer.dtype == kFloat16 || buffer.dtype == kBFloat16;
  if (buffer.dtype != kFloat32 && !reduced)
    throw NotVectorizable(fmt::format("a load of {}", dtype_name(buffer.dtype)));
  const std::string stride = cpp_expr(*coef, ranges_);
  const char* gather = buffer.dtype == kFloat16    ? "kiln_gather_h"
                       : buffer.dtype == kBFloat16 ? "kiln_gather_bf"
                                                   : "kiln_gather";
  if (masked_tail_) {  // Note [Masked vector tails]
    if (*coef == sym::integer(1) && !reduced)
      return emit(kFloat32, true, fmt::format("kiln_loadu_n({} + {}, kiln_rem)", name, at));
    return emit(buffer.dtype, true,
                fmt::format("{}_n({} + {}, {}, kiln_rem)", gather, name, at, stride));
  }
  if (*coef == sym::integer(1) && !reduced)
    return emit(kFloat32, true, fmt::format("kiln_loadu({} + {})", name, at));
  if (*coef == sym::integer(2) && !reduced)
    return emit(kFloat32, true, fmt::format("kiln_load_even({} + {})", name, at));
  return emit(buffer.dtype, true, fmt::format("{}({} + {}, {})", gather, name, at, stride));
}

void CppPrinter::store(lower::BufferRef buffer, sym::ExprPtr idx, Val value) {
  const sym::ExprPtr e = lower::simplify_index(address(buffer.name, idx), ranges_);
  const std::string at = cpp_expr(e, ranges_), name(buffer.name);
  if (!vector_mode()) {
    std::string v = repr(value).expr;
    if (buffer.dtype == kFloat16) v = fmt::format("kiln_f2h({})", v);
    if (buffer.dtype == kBFloat16) v = fmt::format("kiln_f2bf({})", v);
    body_.push_back(fmt::format("{}[{}] = {};", name, at, v));
    return;
  }
  auto coef = lower::linear_coefficient(e, vector_var_);
  if (buffer.dtype != kFloat32 || !coef || *coef != sym::integer(1))
    throw NotVectorizable("a store that is not a contiguous float32 store");
  if (masked_tail_) {
    body_.push_back(fmt::format("kiln_storeu_n({} + {}, {}, kiln_rem);", name, at, vec(value)));
    return;
  }
  if (auto stream = streaming_.find(name); stream != streaming_.end()) {
    body_.push_back(
        fmt::format("kiln_stream_if({}, {} + {}, {});", stream->second, name, at, vec(value)));
    return;
  }
  body_.push_back(fmt::format("kiln_storeu({} + {}, {});", name, at, vec(value)));
}

Val CppPrinter::index_expr(sym::ExprPtr expr, ScalarType dtype) {
  const sym::ExprPtr e = lower::simplify_index(expr, ranges_);
  if (vector_mode()) {
    auto coef = lower::linear_coefficient(e, vector_var_);
    if (!coef || *coef != sym::integer(0)) {
      // Note [Lane offsets]: a float32 index value as lane 0's value plus constant lanes.
      const auto offsets =
          e->is_bool() || dtype != kFloat32 ? std::nullopt : lane_offsets(e, vector_var_);
      if (!offsets) throw NotVectorizable("an index value that varies along the vector");
      return emit(kFloat32, true,
                  fmt::format("(kiln_splat((float)({})) + {})", cpp_expr(e, ranges_),
                              lane_vector(*offsets, "kf8")));
    }
  }
  return emit(dtype, false, fmt::format("({})({})", value_type(dtype), cpp_expr(e, ranges_)));
}

// Note [Lane offsets]: a float32 load whose index moves by constants from lane 0.
Val CppPrinter::load_at_lane_offsets(lower::BufferRef buffer, sym::ExprPtr e) {
  const auto offsets = buffer.dtype == kFloat32 ? lane_offsets(e, vector_var_) : std::nullopt;
  if (!offsets) throw NotVectorizable("a load whose index is not linear in the vector variable");
  const std::string at = fmt::format("{} + {}", buffer.name, cpp_expr(e, ranges_));
  if (masked_tail_) {
    return emit(
        kFloat32, true,
        fmt::format("kiln_gather_offsets_n({}, {}, kiln_rem)", at, lane_vector(*offsets, "ki8")));
  }
  if (*offsets == std::array<int64_t, 8>{0, 0, 1, 1, 2, 2, 3, 3})
    return emit(kFloat32, true, fmt::format("kiln_load_pairs({})", at));
  if (*offsets == std::array<int64_t, 8>{0, 0, 2, 2, 4, 4, 6, 6})
    return emit(kFloat32, true, fmt::format("kiln_load_even_pairs({})", at));
  return emit(kFloat32, true,
              fmt::format("kiln_gather_offsets({}, {})", at, lane_vector(*offsets, "ki8")));
}

Val CppPrinter::constant_int(int64_t i, ScalarType dtype) {
  if (dtype == kBool) return literal(dtype, i ? "true" : "false");
  if (dtype == kUInt64)
    return literal(dtype, fmt::format("(uint64_t){}ULL", static_cast<uint64_t>(i)));
  return literal(dtype, fmt::format("({}){}", value_type(dtype), int_literal(i)));
}

Val CppPrinter::constant_float(double f, ScalarType dtype) {
  if (dtype == kFloat16) f = static_cast<float>(Half(static_cast<float>(f)));
  if (dtype == kBFloat16) f = static_cast<float>(BFloat16(static_cast<float>(f)));
  return literal(dtype, float_literal(f, dtype));
}

Val CppPrinter::to_dtype(Val x, ScalarType to) {
  // Note [Casts the value ranges prove]: the value-range handler ran this body first and saw the
  // same to_dtype calls in the same order.
  const ScalarType from = x.dtype;
  bool proven_in_range = false;
  if (casts_seen_ < proven_casts_.size()) {
    const auto& verdict = proven_casts_[casts_seen_];
    proven_in_range = verdict.in_range && verdict.from == from && verdict.to == to;
  }
  ++casts_seen_;
  if (from == to) return x;
  const Repr& r = repr(x);
  if (r.vector) {
    // Vector values are float32 lanes (float16/bfloat16 computed as float) or masks.
    const bool from_float = from == kFloat32 || from == kFloat16 || from == kBFloat16;
    if (from_float && to == kFloat32) return Val{x.id, to};
    if (from_float && to == kBool) return emit(kBool, true, fmt::format("({} != 0.0f)", r.expr));
    if (from == kBool && to == kFloat32)
      return emit(to, true, fmt::format("kiln_mask_to_float({})", r.expr));
    throw NotVectorizable(fmt::format("a cast from {} to {}", dtype_name(from), dtype_name(to)));
  }
  const std::string& s = r.expr;
  const bool from_float = is_floating(from);
  if (to == kBool) return emit(to, false, fmt::format("({} != 0)", s));
  if (from == kFloat16 && to == kFloat32) return Val{x.id, to};
  if (from == kBFloat16 && to == kFloat32) return Val{x.id, to};
  if (to == kFloat16) return emit(to, false, fmt::format("kiln_round_h((float)({}))", s));
  if (to == kBFloat16) return emit(to, false, fmt::format("kiln_round_bf((float)({}))", s));
  if (is_floating(to)) return emit(to, false, fmt::format("({})({})", value_type(to), s));
  if (from_float && !proven_in_range)
    return emit(to, false, fmt::format("kiln_f2i<{}>({})", value_type(to), s));
  return emit(to, false, fmt::format("({})({})", value_type(to), s));
}

// A primitive's operands as its row of the primitive table prints them (Note [The primitive
// table]): scalar code calls the primitive's kiln::prim function on the compute type; vector
// code uses the row's float32x8 or mask form, and a primitive without one is not vectorized.
Val CppPrinter::primitive_call(const lower::Primitive& p, std::initializer_list<Val> operands) {
  const ScalarType t = operands.begin()->dtype;
  for (const Val& v : operands)
    KILN_CHECK(v.dtype == t, DTypeError, "codegen: {} of {} and {} values", p.name, dtype_name(t),
               dtype_name(v.dtype));
  KILN_CHECK(lower::accepts(p, t), DTypeError,
             "codegen: {} is not defined for {} values; the lowering must cast first", p.name,
             dtype_name(t));
  const ScalarType result = p.result == lower::ResultDtype::boolean ? kBool : t;
  bool any_vector = false;
  for (const Val& v : operands) any_vector |= repr(v).vector;
  if (vector_mode() && any_vector) {
    const bool masks = t == kBool;
    if (!masks && t != kFloat32 && t != kFloat16 && t != kBFloat16)
      throw NotVectorizable("non-float vector math");
    const std::string_view form = masks ? p.mask : p.vector;
    if (form.empty()) throw NotVectorizable(std::string(p.name));
    std::vector<std::string> args;
    for (const Val& v : operands) args.push_back(vec(v));
    const std::string x = args[0], y = args.size() > 1 ? args[1] : std::string();
    return emit(result, true, fmt::format(fmt::runtime(form), x, y));
  }
  std::string args;
  for (const Val& v : operands) args += (args.empty() ? "" : ", ") + repr(v).expr;
  return emit(result, false, fmt::format("kiln::prim::{}<{}>({})", p.name, value_type(t), args));
}

Val CppPrinter::unary(UnaryOp op, Val x) { return primitive_call(lower::primitive(op), {x}); }

Val CppPrinter::binary(BinaryOp op, Val a, Val b) {
  return primitive_call(lower::primitive(op), {a, b});
}

Val CppPrinter::where(Val cond, Val a, Val b) {
  if (vector_mode() && (repr(cond).vector || repr(a).vector || repr(b).vector)) {
    if (a.dtype == kBool) throw NotVectorizable("a mask select");
    return emit(a.dtype, true, fmt::format("kiln_select({}, {}, {})", vec(cond), vec(a), vec(b)));
  }
  return emit(a.dtype, false,
              fmt::format("({} ? {} : {})", repr(cond).expr, repr(a).expr, repr(b).expr));
}

namespace {

std::string lowest(ScalarType t) {
  switch (t) {
    case kBool:
      return "false";
    case kUInt8:
    case kUInt16:
    case kUInt32:
    case kUInt64:
      return fmt::format("({})0", value_type(t));
    case kInt8:
      return "(int8_t)-128";
    case kInt16:
      return "(int16_t)-32768";
    case kInt32:
      return "(int32_t)(-2147483647 - 1)";
    case kInt64:
      return "(-9223372036854775807LL - 1)";
    case kFloat64:
      return "(-__builtin_inf())";
    default:
      return "(-__builtin_inff())";
  }
}

std::string highest(ScalarType t) {
  switch (t) {
    case kBool:
      return "true";
    case kUInt8:
      return "(uint8_t)255";
    case kUInt16:
      return "(uint16_t)65535";
    case kUInt32:
      return "(uint32_t)4294967295U";
    case kUInt64:
      return "(uint64_t)18446744073709551615ULL";
    case kInt8:
      return "(int8_t)127";
    case kInt16:
      return "(int16_t)32767";
    case kInt32:
      return "(int32_t)2147483647";
    case kInt64:
      return "9223372036854775807LL";
    case kFloat64:
      return "__builtin_inf()";
    default:
      return "__builtin_inff()";
  }
}

}  // namespace

// A vector max/min accumulator: the lanes skip NaN (one vmaxps on the loop-carried chain) and a
// mask remembers one; nan_lanes() puts the NaN back after the loops.
void CppPrinter::vector_min_max(bool max, const std::string& vacc, const std::string& x) {
  before_.push_back(
      fmt::format("kf8 {} = kiln_splat({});", vacc, max ? lowest(kFloat32) : highest(kFloat32)));
  before_.push_back(fmt::format("ki8 {}_nan = {{}};", vacc));
  body_.push_back(
      fmt::format("{} = kiln_{}_ignore_nan({}, {});", vacc, max ? "max" : "min", vacc, x));
  body_.push_back(fmt::format("{0}_nan |= kiln_isnan({1});", vacc, x));
}

std::string CppPrinter::nan_lanes(const std::string& vacc) {
  return fmt::format("{0} = kiln_select({0}_nan, kiln_splat(__builtin_nanf(\"\")), {0});", vacc);
}

Val CppPrinter::reduction(ReductionType type, Val value) {
  struct Mark {
    CppPrinter& p;
    ~Mark() {
      p.body_mark_ = p.body_.size();
      p.invariant_mark_ = p.invariant_.size();
    }
  } mark{*this};
  const int k = reductions_++;
  const std::string acc = fmt::format("{}acc{}", prefix_, k);
  const ScalarType t = value.dtype;
  const char* T = value_type(t);
  const ScalarType result = lower::reduction_result_dtype(type, t);
  if (vector_mode() && lane_reduction_) {
    // Note [Reductions across lanes]: the accumulator is the result; no horizontal fold.
    if (t != kFloat32) throw NotVectorizable("a lane reduction of a non-float32 value");
    const std::string vacc = fmt::format("{}vacc{}", prefix_, k), x = vec(value);
    switch (type) {
      case ReductionType::sum:
        before_.push_back(fmt::format("kf8 {} = kiln_splat(0.0f);", vacc));
        body_.push_back(fmt::format("{} = {} + {};", vacc, vacc, x));
        break;
      case ReductionType::max:
      case ReductionType::min:
        vector_min_max(type == ReductionType::max, vacc, x);
        after_.push_back(nan_lanes(vacc));
        break;
      default:
        throw NotVectorizable(std::string(lower::name_of(type)));
    }
    const Val v{static_cast<int32_t>(vals_.size()), kFloat32};
    vals_.push_back({vacc, true});
    return v;
  }
  if (vector_mode()) {
    if (t != kFloat32 && t != kFloat16 && t != kBFloat16)
      throw NotVectorizable("a non-float reduction");
    const std::string vacc = fmt::format("{}vacc{}", prefix_, k), x = vec(value);
    switch (type) {
      case ReductionType::sum: {
        // Note [Blocked vector sums]
        // A loop of more than 256 vectors (an unknown or a long length) sums each block of 256
        // into a running total, so no partial sum runs over more than 256 elements per lane:
        // one chain of float adds over a 2^20-element row was 2.6e-6 off relative (the eager
        // kernel's cascade: 1.2e-7; blocked: 3.2e-7). Shorter loops (a softmax row) keep the one
        // chain, which is then a block already, without the counter.
        before_.push_back(fmt::format("kf8 {} = kiln_splat(0.0f);", vacc));
        body_.push_back(fmt::format("{} = {} + {};", vacc, vacc, x));
        constexpr int64_t kBlockVectors = 256;  // kiln_sum_block's block, in the prelude
        auto extent = ranges_.find(vector_var_);
        const bool short_loop = extent != ranges_.end() && extent->second->is_integer() &&
                                extent->second->value() <= kBlockVectors * 8;
        if (short_loop) {
          fold_.push_back(fmt::format("{} = {} + kiln_hsum({});", acc, acc, vacc));
          break;
        }
        before_.push_back(fmt::format("kf8 {}_total = {};", vacc, vacc));
        before_.push_back(fmt::format("int32_t {}_count = 0;", vacc));
        body_.push_back(fmt::format("kiln_sum_block({0}, {0}_total, {0}_count);", vacc));
        fold_.push_back(fmt::format("{0}_total = {0}_total + {0};", vacc));
        fold_.push_back(fmt::format("{} = {} + kiln_hsum({}_total);", acc, acc, vacc));
        break;
      }
      case ReductionType::prod:
        before_.push_back(fmt::format("kf8 {} = kiln_splat(1.0f);", vacc));
        body_.push_back(fmt::format("{} = {} * {};", vacc, vacc, x));
        fold_.push_back(fmt::format("{} = {} * kiln_hprod({});", acc, acc, vacc));
        break;
      case ReductionType::max:
      case ReductionType::min: {
        const bool mx = type == ReductionType::max;
        vector_min_max(mx, vacc, x);
        fold_.push_back(nan_lanes(vacc));
        fold_.push_back(fmt::format("{} = kiln::prim::{}<float>({}, kiln_h{}({}));", acc,
                                    mx ? "maximum" : "minimum", acc, mx ? "max" : "min", vacc));
        break;
      }
      case ReductionType::welford_mean:
      case ReductionType::welford_m2: {
        before_.push_back(fmt::format("kiln_welford_f8 {} = {{}};", vacc));
        body_.push_back(fmt::format("kiln_welford_add({}, {});", vacc, x));
        fold_.push_back(
            fmt::format("{} = kiln_welford_merge({}, kiln_welford_hmerge({}));", acc, acc, vacc));
        break;
      }
      default:
        throw NotVectorizable(std::string(lower::name_of(type)));
    }
    return literal(result, acc);
  }
  const std::string& x = repr(value).expr;
  switch (type) {
    case ReductionType::sum:
      if (t == kFloat32) {
        // Note [Blocked scalar sums]: as the vector loop's blocks (Note [Blocked vector sums]),
        // a scalar loop adds each block of 256 values on its own and then into the total; the
        // result is the total plus the last block. One chain of float adds was 20 times further
        // from eager's mean of a row of 4099 values near 1e4 than eager itself (a kernel that
        // also computes a float64 variance of the row is not vectorized). A vectorized kernel's
        // scalar tail adds into the same block.
        before_.push_back(fmt::format("float {0} = 0, {0}_block = 0;", acc));
        before_.push_back(fmt::format("int32_t {}_count = 0;", acc));
        body_.push_back(fmt::format("{0}_block = {0}_block + {1};", acc, x));
        body_.push_back(fmt::format(
            "if (++{0}_count == 256) {{ {0} = {0} + {0}_block; {0}_block = 0; {0}_count = 0; }}",
            acc));
        return literal(result, fmt::format("({0} + {0}_block)", acc));
      }
      before_.push_back(fmt::format("{} {} = 0;", T, acc));
      body_.push_back(t == kBool ? fmt::format("{} = {} || {};", acc, acc, x)
                                 : fmt::format("{} = ({})({} + {});", acc, T, acc, x));
      return literal(result, acc);
    case ReductionType::prod:
      before_.push_back(fmt::format("{} {} = 1;", T, acc));
      body_.push_back(t == kBool ? fmt::format("{} = {} && {};", acc, acc, x)
                                 : fmt::format("{} = ({})({} * {});", acc, T, acc, x));
      return literal(result, acc);
    case ReductionType::max:
    case ReductionType::min: {
      const bool mx = type == ReductionType::max;
      before_.push_back(fmt::format("{} {} = {};", T, acc, mx ? lowest(t) : highest(t)));
      body_.push_back(fmt::format("{} = kiln::prim::{}<{}>({}, {});", acc,
                                  mx ? "maximum" : "minimum", T, acc, x));
      return literal(result, acc);
    }
    case ReductionType::any:
      before_.push_back(fmt::format("bool {} = false;", acc));
      body_.push_back(fmt::format("{} = {} || (bool){};", acc, acc, x));
      return literal(result, acc);
    case ReductionType::all:
      before_.push_back(fmt::format("bool {} = true;", acc));
      body_.push_back(fmt::format("{} = {} && (bool){};", acc, acc, x));
      return literal(result, acc);
    case ReductionType::argmax:
    case ReductionType::argmin:
      before_.push_back(fmt::format("{} {} = 0;", T, acc));
      before_.push_back(fmt::format("int64_t {}_i = -1;", acc));
      body_.push_back(fmt::format("kiln_{}_add<{}>({}, {}_i, {}, {});",
                                  type == ReductionType::argmax ? "argmax" : "argmin", T, acc, acc,
                                  x, rlinear_));
      return literal(result, fmt::format("{}_i", acc));
    case ReductionType::welford_mean:
    case ReductionType::welford_m2: {
      KILN_CHECK(is_floating(t), DTypeError, "codegen: a welford reduction of {}", dtype_name(t));
      before_.push_back(fmt::format("{} {} = {{0, 0, 0}};",
                                    t == kFloat64 ? "kiln_welford_d" : "kiln_welford_f", acc));
      body_.push_back(fmt::format("kiln_welford_add({}, {});", acc, x));
      return literal(
          result, fmt::format("{}{}", acc, type == ReductionType::welford_mean ? ".mean" : ".m2"));
    }
  }
  return value;
}

void CppPrinter::store_reduction(lower::BufferRef buffer, sym::ExprPtr idx, Val value) {
  if (vector_mode() && lane_reduction_) {
    const sym::ExprPtr e = lower::simplify_index(idx, ranges_);
    auto coef = lower::linear_coefficient(e, vector_var_);
    if (buffer.dtype != kFloat32 || !coef || *coef != sym::integer(1) ||
        body_.size() != body_mark_ || invariant_.size() != invariant_mark_)
      throw NotVectorizable("a lane reduction whose result is not stored as is, contiguously");
    after_.push_back(fmt::format("kiln_storeu({} + {}, {});", std::string(buffer.name),
                                 cpp_expr(e, ranges_), vec(value)));
    return;
  }
  if (vector_mode()) {
    body_.resize(body_mark_);  // the scalar printer of the same body emits the store
    invariant_.resize(invariant_mark_);
    return;
  }
  const sym::ExprPtr e = lower::simplify_index(idx, ranges_);
  std::string v = repr(value).expr;
  if (buffer.dtype == kFloat16) v = fmt::format("kiln_f2h({})", v);
  if (buffer.dtype == kBFloat16) v = fmt::format("kiln_f2bf({})", v);
  // Statements made after the reduction (the cast of the result) belong after the loops too.
  after_.insert(after_.end(), body_.begin() + body_mark_, body_.end());
  body_.resize(body_mark_);
  after_.push_back(fmt::format("{}[{}] = {};", std::string(buffer.name), cpp_expr(e, ranges_), v));
}

}  // namespace kiln::codegen
