// OpInfos for comparisons, logical ops, bitwise ops and shifts. Comparison references compare
// mathematical values (exact 128-bit integers when both operands are integers or bool), so
// they also check Note [Exact comparisons] for out-of-range Scalars and 0-dim operands.
#include "tests/ops/binary_reference.h"

namespace kiln::testing::binary {
namespace {

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <typename V>
bool compare(Cmp op, V x, V y) {
  switch (op) {
    case Cmp::Eq:
      return x == y;
    case Cmp::Ne:
      return x != y;
    case Cmp::Lt:
      return x < y;
    case Cmp::Le:
      return x <= y;
    case Cmp::Gt:
      return x > y;
    case Cmp::Ge:
      return x >= y;
  }
  return false;
}

bool integer_valued(const IValue& v) {
  return v.is_tensor() ? is_integral_or_bool(v.tensor().dtype()) : !v.scalar().is_floating();
}

// uint64 with a signed integer tensor: no promoted dtype, an exact comparison (Note [Comparing
// uint64 with a signed tensor]).
bool uint64_with_signed(const Stack& a) {
  if (!a[0].is_tensor() || !a[1].is_tensor()) return false;
  const ScalarType x = a[0].tensor().dtype(), y = a[1].tensor().dtype();
  auto is_signed_int = [](ScalarType t) { return is_integral(t) && !is_unsigned(t) && t != kBool; };
  return (x == kUInt64 && is_signed_int(y)) || (y == kUInt64 && is_signed_int(x));
}

Tensor compare_reference(Cmp op, const Stack& a) {
  const bool mixed = uint64_with_signed(a);
  const ScalarType c = mixed ? kInt64 : ref_promoted(a);
  const DimVector shape = ref_shape(a);
  std::vector<bool> r;
  if (mixed || (is_integral_or_bool(c) && integer_valued(a[0]) && integer_valued(a[1]))) {
    std::vector<I128> x = exact_values(a[0], shape), y = exact_values(a[1], shape);
    for (size_t i = 0; i < x.size(); ++i) r.push_back(compare(op, x[i], y[i]));
  } else {
    visit_dtype(c, [&]<typename C>() {
      std::vector<C> x = values_as<C>(a[0], shape), y = values_as<C>(a[1], shape);
      for (size_t i = 0; i < x.size(); ++i)
        r.push_back(compare(op, cast_value<double>(x[i]), cast_value<double>(y[i])));
    });
  }
  return from_vector(r, vec(shape));
}

// Operands with ties (equal elements) so eq/le/ge see both outcomes.
Maker tied() {
  return from_draw([](ScalarType dt, std::mt19937_64& rng) {
    return dt == kBool ? static_cast<double>(rng() & 1)
                       : uniform_int(rng, is_unsigned(dt) ? 0 : -2, 2);
  });
}

void register_compare(const char* name, const char* scalar_name, Cmp op) {
  register_binary(
      {.name = name,
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> s = pair_samples(dt, rng, tied(), tied(), {});
             // uint64 with signed tensors: exact, not wrapped.
             if (dt == kUInt64) {
               s.push_back({{tied()({3, 4}, dt, rng, Layout::Contiguous),
                             tied()({3, 4}, kInt64, rng, Layout::Contiguous)},
                            "uint64 [3, 4] with int64 [3, 4]"});
               s.push_back({{tied()({4, 1}, kInt8, rng, Layout::Contiguous),
                             tied()({1, 3}, dt, rng, Layout::Contiguous)},
                            "int8 [4, 1] with uint64 [1, 3]"});
             }
             // Out-of-range 0-dim operands: exact, not wrapped (uint8 > int64 -1).
             if (is_integral(dt)) {
               s.push_back(
                   {{tied()({3, 4}, dt, rng, Layout::Contiguous), scalar_tensor(-1, kInt64)},
                    "[3, 4] with 0-dim int64 -1"});
               s.push_back(
                   {{scalar_tensor(1000, kInt32), tied()({3, 4}, dt, rng, Layout::Contiguous)},
                    "0-dim int32 1000 with [3, 4]"});
             }
             return s;
           },
       .reference = [op](const Stack& a) { return std::vector<Tensor>{compare_reference(op, a)}; },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), zeros({4})}, ErrorKind::Shape, "broadcast [2, 3] with [4]"}};
           }});
  register_binary(
      {.name = scalar_name,
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return scalar_samples(dt, rng, tied(),
                                   {Scalar(1), Scalar(-1), Scalar(0.5), Scalar(true), Scalar(1000),
                                    Scalar(-129), Scalar(UINT64_MAX), Scalar(INT64_MIN)},
                                   {});
           },
       .reference =
           [op](const Stack& a) { return std::vector<Tensor>{compare_reference(op, a)}; }});
}

// Logical ops: truth of each operand in its own dtype.
enum class Logic { And, Or, Xor };
Tensor logical_reference(Logic op, const Stack& a) {
  const DimVector shape = ref_shape(a);
  std::vector<bool> x = values_as<bool>(a[0], shape), y = values_as<bool>(a[1], shape);
  std::vector<bool> r(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    r[i] = op == Logic::And ? (x[i] && y[i]) : op == Logic::Or ? (x[i] || y[i]) : (x[i] != y[i]);
  return from_vector(r, vec(shape));
}

void register_logical(const char* name, Logic op) {
  register_binary(
      {.name = name,
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> s = pair_samples(dt, rng, tied(), tied(), {});
             // Any dtypes mix, uint64 with signed included: no promotion happens.
             if (dt == kUInt64)
               s.push_back({{tied()({4}, dt, rng, Layout::Contiguous),
                             tied()({4}, kInt64, rng, Layout::Contiguous)},
                            "uint64 with int64"});
             return s;
           },
       .reference = [op](const Stack& a) { return std::vector<Tensor>{logical_reference(op, a)}; },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), zeros({4})}, ErrorKind::Shape, "broadcast [2, 3] with [4]"}};
           }});
}

// Bitwise ops and shifts: exact integer math in the promoted dtype.
enum class Bits { And, Or, Xor, Shl, Shr };

template <typename T>
T bits_ref(Bits op, T xt, T yt) {
  const I128 x = static_cast<I128>(xt), y = static_cast<I128>(yt);
  switch (op) {
    case Bits::And:
      return wrap<T>(x & y);
    case Bits::Or:
      return wrap<T>(x | y);
    case Bits::Xor:
      return wrap<T>(x ^ y);
    default:
      break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    return false;  // shifts are not defined for bool
  } else {
    const I128 width = static_cast<I128>(sizeof(T) * 8);
    if (op == Bits::Shl) {
      if (y < 0 || y >= width) return 0;
      return wrap<T>(static_cast<I128>(static_cast<U128>(static_cast<std::make_unsigned_t<T>>(xt))
                                       << static_cast<int>(y)));
    }
    if (y < 0 || y >= width) return x < 0 ? wrap<T>(-1) : T(0);
    // Floor division by 2^y: arithmetic for negative signed values, logical for unsigned.
    I128 p = 1;
    for (I128 k = 0; k < y; ++k) p *= 2;
    I128 q = x / p;
    if (x % p != 0 && x < 0) q -= 1;
    return wrap<T>(q);
  }
}

Tensor bits_reference(Bits op, const Stack& a) {
  const ScalarType c = ref_promoted(a);
  return reference(
      a, c, c, [op]<typename T>(T x, T y) { return bits_ref<T>(op, x, y); },
      [](double, double) { return 0.0; });
}

Maker shift_amounts() {
  return from_draw([](ScalarType dt, std::mt19937_64& rng) {
    const int64_t width = element_size(dt) * 8;
    return uniform_int(rng, is_unsigned(dt) ? 0 : -2, width + 2);
  });
}

void register_bits(const char* name, const char* scalar_name, Bits op) {
  const bool shift = op == Bits::Shl || op == Bits::Shr;
  register_binary(
      {.name = name,
       .samples =
           [shift](ScalarType dt, std::mt19937_64& rng) {
             if (!shift) return pair_samples(dt, rng, plain, plain, {});
             std::vector<SampleInput> s;
             for (SampleInput& x : pair_samples(dt, rng, plain, shift_amounts(), {}))
               if (x.args[1].tensor().dtype() != kBool && x.args[0].tensor().dtype() != kBool)
                 s.push_back(std::move(x));
             return s;
           },
       .reference = [op](const Stack& a) { return std::vector<Tensor>{bits_reference(op, a)}; },
       .error_cases =
           [shift] {
             std::vector<ErrorCase> e{
                 {{zeros({2, 3}, kInt32), zeros({4}, kInt32)}, ErrorKind::Shape, "broadcast"},
                 {{zeros({2}), zeros({2})}, ErrorKind::DType, "float32 operands"},
                 {{zeros({2}, kInt32), zeros({2})}, ErrorKind::DType, "int32 with float32"},
                 {{zeros({2}, kUInt64), zeros({2}, kInt64)},
                  ErrorKind::DType,
                  "uint64 with int64"}};
             if (shift)
               e.push_back({{zeros({2}, kBool), zeros({2}, kBool)}, ErrorKind::DType, "bool"});
             return e;
           }});
  register_binary(
      {.name = scalar_name,
       .samples =
           [shift](ScalarType dt, std::mt19937_64& rng) {
             std::vector<Scalar> scalars =
                 shift
                     ? std::vector<Scalar>{Scalar(1), Scalar(7), Scalar(31), Scalar(64), Scalar(-1)}
                     : std::vector<Scalar>{Scalar(3), Scalar(-2), Scalar(true)};
             return scalar_samples(dt, rng, plain, scalars, {});
           },
       .reference = [op](const Stack& a) { return std::vector<Tensor>{bits_reference(op, a)}; },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2}, kInt32), Scalar(1.5)}, ErrorKind::DType, "float Scalar"}};
           }});
}

const bool registered = [] {
  register_compare("eq", "eq.Scalar", Cmp::Eq);
  register_compare("ne", "ne.Scalar", Cmp::Ne);
  register_compare("lt", "lt.Scalar", Cmp::Lt);
  register_compare("le", "le.Scalar", Cmp::Le);
  register_compare("gt", "gt.Scalar", Cmp::Gt);
  register_compare("ge", "ge.Scalar", Cmp::Ge);
  register_logical("logical_and", Logic::And);
  register_logical("logical_or", Logic::Or);
  register_logical("logical_xor", Logic::Xor);
  register_bits("bitwise_and", "bitwise_and.Scalar", Bits::And);
  register_bits("bitwise_or", "bitwise_or.Scalar", Bits::Or);
  register_bits("bitwise_xor", "bitwise_xor.Scalar", Bits::Xor);
  register_bits("bitwise_left_shift", "bitwise_left_shift.Tensor_Scalar", Bits::Shl);
  register_bits("bitwise_right_shift", "bitwise_right_shift.Tensor_Scalar", Bits::Shr);
  return true;
}();

}  // namespace
}  // namespace kiln::testing::binary
