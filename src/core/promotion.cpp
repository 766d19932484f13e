#include "src/core/promotion.h"

namespace kiln {

// Note [Unsigned integers]
// uint8/16/32/64 are first-class dtypes: every arithmetic, comparison, bitwise, shift, reduction
// and indexing op accepts them. Arithmetic wraps modulo 2^bits (C++ unsigned semantics), `>>` is
// a logical shift, comparisons across signedness compare the mathematical values (uint64 max >
// int64 -1 is true) because both operands are first promoted to a type that holds both exactly.
//
// Note [Promotion table]
// promote_types(a, b) is this table. It follows PyTorch where PyTorch has a rule (bool yields to
// everything; uint8 with int8 -> int16; integers with floats -> the float; float16 with bfloat16
// -> float32) and goes further where PyTorch refuses: an unsigned type with a signed one gives
// the smallest signed type holding both (uint16 with int16 -> int32, uint32 with int32 -> int64).
// uint64 with any signed type has no integer type that holds both exactly (that would need 65
// bits), so it is a DTypeError telling the user to cast one side explicitly; ERR marks those
// entries. Promotion never silently loses integer values.
namespace {
constexpr ScalarType b1 = kBool, u8 = kUInt8, u16 = kUInt16, u32 = kUInt32, u64 = kUInt64,
                     i8 = kInt8, i16 = kInt16, i32 = kInt32, i64 = kInt64, f16 = kFloat16,
                     bf16 = kBFloat16, f32 = kFloat32, f64 = kFloat64;
// A marker outside the enum for "no exact common type".
constexpr ScalarType ERR = static_cast<ScalarType>(0xff);

// The table reads as a grid, so clang-format leaves it alone.
// clang-format off
constexpr ScalarType kPromotionTable[kNumScalarTypes][kNumScalarTypes] = {
    //            b1    u8   u16   u32   u64    i8   i16   i32   i64   f16  bf16   f32   f64
    /*   b1 */ {   b1,   u8,  u16,  u32,  u64,   i8,  i16,  i32,  i64,  f16, bf16,  f32,  f64},
    /*   u8 */ {   u8,   u8,  u16,  u32,  u64,  i16,  i16,  i32,  i64,  f16, bf16,  f32,  f64},
    /*  u16 */ {  u16,  u16,  u16,  u32,  u64,  i32,  i32,  i32,  i64,  f16, bf16,  f32,  f64},
    /*  u32 */ {  u32,  u32,  u32,  u32,  u64,  i64,  i64,  i64,  i64,  f16, bf16,  f32,  f64},
    /*  u64 */ {  u64,  u64,  u64,  u64,  u64,  ERR,  ERR,  ERR,  ERR,  f16, bf16,  f32,  f64},
    /*   i8 */ {   i8,  i16,  i32,  i64,  ERR,   i8,  i16,  i32,  i64,  f16, bf16,  f32,  f64},
    /*  i16 */ {  i16,  i16,  i32,  i64,  ERR,  i16,  i16,  i32,  i64,  f16, bf16,  f32,  f64},
    /*  i32 */ {  i32,  i32,  i32,  i64,  ERR,  i32,  i32,  i32,  i64,  f16, bf16,  f32,  f64},
    /*  i64 */ {  i64,  i64,  i64,  i64,  ERR,  i64,  i64,  i64,  i64,  f16, bf16,  f32,  f64},
    /*  f16 */ {  f16,  f16,  f16,  f16,  f16,  f16,  f16,  f16,  f16,  f16,  f32,  f32,  f64},
    /* bf16 */ { bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16,  f32, bf16,  f32,  f64},
    /*  f32 */ {  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f64},
    /*  f64 */ {  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64},};
// clang-format on
}  // namespace

ScalarType promote_types(ScalarType a, ScalarType b) {
  const ScalarType r = kPromotionTable[static_cast<int>(a)][static_cast<int>(b)];
  KILN_CHECK(r != ERR, DTypeError,
             "cannot promote {} with {}: no integer dtype holds both exactly (uint64 values need "
             "64 unsigned bits, the signed type needs a sign bit). Cast one side explicitly, e.g. "
             "t.to(kiln::kInt64) or t.to(kiln::kFloat64)",
             dtype_name(a), dtype_name(b));
  return r;
}

namespace {
enum class Category { Bool, Integral, Floating };
Category category_of(ScalarType t) {
  if (t == kBool) return Category::Bool;
  return is_floating(t) ? Category::Floating : Category::Integral;
}
}  // namespace

ScalarType ResultTypeBuilder::merge(ScalarType current, bool& seen, ScalarType next) const {
  if (!seen) {
    seen = true;
    return next;
  }
  return promote_types(current, next);
}

ResultTypeBuilder& ResultTypeBuilder::add(const Tensor& t) {
  if (t.impl()->is_wrapped_number()) {
    // A wrapped float takes the default float dtype; ints and bools keep their own.
    ScalarType w = is_floating(t.dtype()) ? kDefaultFloat : t.dtype();
    wrapped_ = merge(wrapped_, has_wrapped_, w);
  } else if (t.dim() == 0) {
    zero_dim_ = merge(zero_dim_, has_zero_dim_, t.dtype());
  } else {
    dim_ = merge(dim_, has_dim_, t.dtype());
  }
  return *this;
}

ResultTypeBuilder& ResultTypeBuilder::add(const Scalar& s) {
  ScalarType w = s.is_floating() ? kDefaultFloat : s.natural_dtype();
  wrapped_ = merge(wrapped_, has_wrapped_, w);
  return *this;
}

ScalarType ResultTypeBuilder::result() const {
  // Combine from lowest rank up: a lower-ranked group wins only with a higher category.
  auto combine = [](bool has_high, ScalarType high, bool has_low, ScalarType low, bool& has_out) {
    has_out = has_high || has_low;
    if (!has_high) return low;
    if (!has_low) return high;
    if (category_of(low) > category_of(high)) {
      // e.g. int tensor * 2.5 -> float: the float category wins, with the higher group's width
      // only when it is itself floating (never here), so promote.
      return promote_types(high, low);
    }
    return high;
  };
  bool has_low = false;
  ScalarType low = combine(has_zero_dim_, zero_dim_, has_wrapped_, wrapped_, has_low);
  bool has_all = false;
  ScalarType all = combine(has_dim_, dim_, has_low, low, has_all);
  KILN_CHECK(has_all, ValueError, "{}: result_type needs at least one operand", op_);
  return all;
}

ScalarType result_type(std::string_view op, const Tensor& a, const Tensor& b) {
  return ResultTypeBuilder(op).add(a).add(b).result();
}
ScalarType result_type(std::string_view op, const Tensor& a, const Scalar& b) {
  return ResultTypeBuilder(op).add(a).add(b).result();
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

}  // namespace kiln
