// OpInfos for the arithmetic binary ops and their Scalar and in-place forms. References:
// exact 128-bit integer math reduced modulo 2^bits, float64 for floating dtypes (see
// binary_reference.h). Comparisons, logical and bitwise ops: binary_compare_opinfo.cpp.
#include "tests/ops/binary_reference.h"

namespace kiln::testing::binary {
namespace {

// Exact integer results of one op; T is the compute dtype's C++ type.
enum class Arith {
  Add,
  Sub,
  Mul,
  Div,
  DivFloor,
  DivTrunc,
  Remainder,
  Fmod,
  Pow,
  Max,
  Min,
  Atan2,
  Hypot
};

I128 floor_div(I128 x, I128 y) {
  I128 q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) q -= 1;
  return q;
}

template <typename T>
T int_ref(Arith op, T xt, T yt, I128 alpha) {
  const I128 x = static_cast<I128>(xt), y = static_cast<I128>(yt);
  auto mulmod = [](I128 p, I128 q) {
    return wrap<T>(static_cast<I128>(static_cast<U128>(p) * static_cast<U128>(q)));
  };
  switch (op) {
    case Arith::Add:
      return wrap<T>(static_cast<I128>(static_cast<U128>(x) +
                                       static_cast<U128>(alpha) * static_cast<U128>(y)));
    case Arith::Sub:
      return wrap<T>(static_cast<I128>(static_cast<U128>(x) -
                                       static_cast<U128>(alpha) * static_cast<U128>(y)));
    case Arith::Mul:
      return mulmod(x, y);
    case Arith::DivFloor:
      return wrap<T>(floor_div(x, y));
    case Arith::DivTrunc:
      return wrap<T>(x / y);
    case Arith::Remainder:
      return wrap<T>(x - y * floor_div(x, y));
    case Arith::Fmod:
      return wrap<T>(x % y);
    case Arith::Pow: {
      if (y < 0) return wrap<T>(x == 1 ? 1 : x == -1 ? ((y % 2 == 0) ? 1 : -1) : 0);
      T r = wrap<T>(1);
      for (I128 k = 0; k < y; ++k) r = mulmod(static_cast<I128>(r), x);
      return r;
    }
    case Arith::Max:
      return x > y ? xt : yt;
    case Arith::Min:
      return x < y ? xt : yt;
    default:
      return T{};  // Div, Atan2, Hypot compute in floating dtypes only
  }
}

double float_ref(Arith op, double x, double y, double alpha) {
  switch (op) {
    case Arith::Add:
      return x + alpha * y;
    case Arith::Sub:
      return x - alpha * y;
    case Arith::Mul:
      return x * y;
    case Arith::Div:
      return x / y;
    case Arith::DivFloor:
      return std::floor(x / y);
    case Arith::DivTrunc:
      return std::trunc(x / y);
    case Arith::Remainder: {  // Python's float %: exact, unlike x - y * floor(x / y)
      const double r = std::fmod(x, y);
      return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
    }
    case Arith::Fmod:
      return std::fmod(x, y);
    case Arith::Pow:
      return std::pow(x, y);
    case Arith::Max:
      return (std::isnan(x) || std::isnan(y)) ? NAN : std::max(x, y);
    case Arith::Min:
      return (std::isnan(x) || std::isnan(y)) ? NAN : std::min(x, y);
    case Arith::Atan2:
      return std::atan2(x, y);
    case Arith::Hypot:
      return std::hypot(x, y);
  }
  return 0;
}

bool int_to_float(Arith op) { return op == Arith::Div || op == Arith::Atan2 || op == Arith::Hypot; }

Arith with_mode(Arith op, const Stack& a) {
  if (op != Arith::Div || a.size() < 3) return op;
  const std::string& m = a[2].string();
  return m == "floor" ? Arith::DivFloor : m == "trunc" ? Arith::DivTrunc : Arith::Div;
}

// out = op(a[0], a[1]) (in the promoted dtype, or the in-place self's dtype).
Tensor arith_reference(Arith op, const Stack& a, bool inplace) {
  op = with_mode(op, a);
  ScalarType c = ref_promoted(a);
  if (int_to_float(op) && !is_floating(c)) c = kDefaultFloat;
  const bool has_alpha = (op == Arith::Add || op == Arith::Sub) && a.size() >= 3;
  const Scalar alpha = has_alpha ? a[2].scalar() : Scalar(1);
  const ScalarType out = inplace ? a[0].tensor().dtype() : c;
  return reference(
      a, c, out,
      [&]<typename T>(T x, T y) {
        return int_ref<T>(op, x, y,
                          alpha.kind() == Scalar::Kind::UInt ? static_cast<I128>(alpha.to_uint64())
                                                             : static_cast<I128>(alpha.to_int64()));
      },
      [&](double x, double y) { return float_ref(op, x, y, alpha.to_double()); });
}

// Operand makers per op.
Maker divisor_maker() { return from_draw(nonzero); }
Maker exponent_maker() {
  return from_draw([](ScalarType dt, std::mt19937_64& rng) {
    return is_floating(dt) ? uniform(rng, -2, 3) : uniform_int(rng, 0, 12);
  });
}
Maker base_maker() {
  return [](IntArrayRef shape, ScalarType dt, std::mt19937_64& rng, Layout layout) {
    if (is_floating(dt))
      return make_from(shape, dt, rng, layout,
                       [](ScalarType, std::mt19937_64& r) { return uniform(r, 0.5, 3); });
    return plain(shape, dt, rng, layout);
  };
}

struct ArithSpec {
  const char* name;
  const char* scalar_name;  // nullptr: no Scalar form
  Arith op;
  Maker a = plain;
  Maker b = plain;
  std::vector<Scalar> scalars = {Scalar(3), Scalar(-2), Scalar(2.5)};
};

std::vector<ErrorCase> common_errors(const char* name, bool scalar_form) {
  std::vector<ErrorCase> e;
  if (!scalar_form) {
    e.push_back({{zeros({2, 3}), zeros({4})}, ErrorKind::Shape, "broadcast [2, 3] with [4]"});
    e.push_back({{zeros({2}, kUInt64), zeros({2}, kInt64)}, ErrorKind::DType, "uint64 with int64"});
  }
  return e;
}

// Rounding mode / alpha for the samples of one dtype.
Stack tail_for(Arith op, ScalarType dt, bool inplace) {
  if (op == Arith::Add || op == Arith::Sub)
    return tail_of({Scalar(is_floating(dt) ? Scalar(0.5) : Scalar(2))});
  if (op == Arith::Div) {
    if (inplace && !is_floating(dt)) return tail_of({std::string("floor")});
    return tail_of({std::string("")});
  }
  return {};
}

void register_arith(const ArithSpec& s) {
  const Arith op = s.op;
  auto errors = [s](bool scalar_form) {
    return [s, scalar_form] {
      std::vector<ErrorCase> e = common_errors(s.name, scalar_form);
      Stack tail = tail_for(s.op, kInt64, false);
      auto with_tail = [&](Stack args) {
        for (const IValue& v : tail) args.push_back(v);
        return args;
      };
      if (s.op == Arith::Div) {
        e.push_back({{zeros({2}), scalar_form ? IValue(Scalar(2)) : IValue(ones({2})),
                      std::string("round")},
                     ErrorKind::Value,
                     "unknown rounding mode"});
        e.push_back(
            {{ones({2}, kInt32), scalar_form ? IValue(Scalar(0)) : IValue(zeros({2}, kInt32)),
              std::string("floor")},
             ErrorKind::Value,
             "integer division by zero"});
      }
      if (s.op == Arith::Remainder || s.op == Arith::Fmod) {
        e.push_back(
            {{ones({2}, kInt32), scalar_form ? IValue(Scalar(0)) : IValue(zeros({2}, kInt32))},
             ErrorKind::Value,
             "integer division by zero"});
        e.push_back(
            {{ones({2}, kUInt8), scalar_form ? IValue(Scalar(0)) : IValue(zeros({2}, kUInt8))},
             ErrorKind::Value,
             "unsigned division by zero"});
      }
      if (s.op == Arith::Pow && scalar_form)
        e.push_back(
            {{ones({2}, kInt32), Scalar(-1)}, ErrorKind::Value, "negative integer exponent"});
      if (s.op == Arith::Sub)
        e.push_back(
            {with_tail({ones({2}), scalar_form ? IValue(Scalar(true)) : IValue(ones({2}, kBool))}),
             ErrorKind::DType, "sub with bool"});
      if ((s.op == Arith::Add || s.op == Arith::Sub))
        e.push_back({{ones({2}, kInt64),
                      scalar_form ? IValue(Scalar(1)) : IValue(ones({2}, kInt64)), Scalar(1.5)},
                     ErrorKind::Value,
                     "float alpha for integers"});
      return e;
    };
  };
  register_binary(
      {.name = s.name,
       .samples =
           [s](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             std::vector<Stack> tails{tail_for(s.op, dt, false)};
             if (s.op == Arith::Div && dt != kBool) {
               tails.push_back(tail_of({std::string("floor")}));
               tails.push_back(tail_of({std::string("trunc")}));
             }
             for (const Stack& tail : tails) {
               for (SampleInput& x : pair_samples(dt, rng, s.a, s.b, tail)) {
                 // Subtraction refuses bool operands (an error case, not a sample).
                 if (s.op == Arith::Sub &&
                     (x.args[0].tensor().dtype() == kBool || x.args[1].tensor().dtype() == kBool))
                   continue;
                 if (tail.size() == 1 && tail[0].is_string())
                   x.description += " mode '" + tail[0].string() + "'";
                 out.push_back(std::move(x));
               }
             }
             return out;
           },
       .reference =
           [op](const Stack& a) { return std::vector<Tensor>{arith_reference(op, a, false)}; },
       .error_cases = errors(false)});
  if (s.scalar_name != nullptr) {
    register_binary(
        {.name = s.scalar_name,
         .samples =
             [s](ScalarType dt, std::mt19937_64& rng) {
               return scalar_samples(dt, rng, s.a, s.scalars, tail_for(s.op, dt, false));
             },
         .reference =
             [op](const Stack& a) { return std::vector<Tensor>{arith_reference(op, a, false)}; },
         .error_cases = errors(true),
         // A Scalar like 2^64 - 1 swamps a float64 input: x - 2^64 does not change
         // when x moves by the finite-difference step.
         .grad_samples =
             [s](std::mt19937_64& rng) {
               std::vector<Scalar> moderate;
               for (const Scalar& v : s.scalars)
                 if (std::fabs(v.to_double()) < 1e6) moderate.push_back(v);
               return scalar_samples(kFloat64, rng, s.a, moderate, tail_for(s.op, kFloat64, false));
             }});
  }
}

// In-place: self keeps its shape and dtype; other broadcasts into it and may be of a dtype
// whose promotion with self is castable to self.
void register_inplace(const char* name, const char* scalar_name, Arith op, Maker b,
                      std::vector<Scalar> scalars) {
  auto samples = [op, b](ScalarType dt, std::mt19937_64& rng) {
    const Stack tail = tail_for(op, dt, true);
    const auto C = Layout::Contiguous;
    std::vector<SampleInput> s;
    auto add = [&](Tensor self, Tensor other, std::string d) {
      Stack args{self, other};
      for (const IValue& v : tail) args.push_back(v);
      s.push_back({std::move(args), std::move(d)});
    };
    add(plain({5, 7}, dt, rng, C), b({5, 7}, dt, rng, C), "[5, 7] with [5, 7]");
    add(plain({3, 4}, dt, rng, C), b({4}, dt, rng, C), "[3, 4] with [4]");
    add(plain({3, 4}, dt, rng, C), b({}, dt, rng, C), "[3, 4] with 0-dim");
    add(plain({}, dt, rng, C), b({}, dt, rng, C), "0-dim with 0-dim");
    add(plain({0, 3}, dt, rng, C), b({3}, dt, rng, C), "zero-size");
    add(plain({4, 6}, dt, rng, Layout::NonContiguous), b({6, 4}, dt, rng, C).t(),
        "non-contiguous self with transposed other");
    add(plain({100, 400}, dt, rng, C), b({100, 400}, dt, rng, C), "large contiguous");
    // A narrower operand of the same or lower category: the result is castable to self.
    if (is_floating(dt)) {
      add(plain({3, 4}, dt, rng, C), b({3, 4}, kInt32, rng, C), "with int32");
    } else if (dt != kBool && op != Arith::Sub) {
      add(plain({3, 4}, dt, rng, C), b({3, 4}, kBool, rng, C), "with bool");
    }
    if (!is_floating(dt) && dt != kBool) {
      // A wider integer other: promotion widens, the result is narrowed back into self.
      add(plain({3, 4}, dt, rng, C), b({3, 4}, dt == kUInt64 ? kUInt32 : kInt64, rng, C),
          "with a wider integer");
    }
    return s;
  };
  register_binary(
      {.name = name,
       .samples = samples,
       .reference =
           [op](const Stack& a) { return std::vector<Tensor>{arith_reference(op, a, true)}; },
       .error_cases =
           [op] {
             Stack tail = tail_for(op, kInt64, true);
             Stack bad_shape{zeros({3}), zeros({2, 3})};
             Stack bad_dtype{zeros({3}, kInt64), zeros({3})};
             for (const IValue& v : tail) {
               bad_shape.push_back(v);
               bad_dtype.push_back(v);
             }
             if (op == Arith::Div) bad_dtype[2] = IValue(std::string(""));
             return std::vector<ErrorCase>{
                 {bad_shape, ErrorKind::Shape, "other larger than self"},
                 {bad_dtype, ErrorKind::DType, "float result into int64 self"},
                 {{zeros({1}).expand({3}), zeros({3}), tail.empty() ? IValue() : tail[0]},
                  ErrorKind::Value,
                  "expanded self"}};
           }});
  register_binary(
      {.name = scalar_name,
       .samples =
           [op, scalars](ScalarType dt, std::mt19937_64& rng) {
             std::vector<Scalar> ok;
             if (dt == kBool) {
               ok = {Scalar(true), Scalar(false)};
             } else {
               for (const Scalar& v : scalars)
                 if (is_floating(dt) || !v.is_floating()) ok.push_back(v);
             }
             auto self_maker = [](IntArrayRef shape, ScalarType d, std::mt19937_64& r, Layout l) {
               return plain(shape, d, r, l == Layout::Expanded ? Layout::Contiguous : l);
             };
             return scalar_samples(dt, rng, self_maker, ok, tail_for(op, dt, true));
           },
       .reference =
           [op](const Stack& a) { return std::vector<Tensor>{arith_reference(op, a, true)}; },
       .error_cases =
           [op] {
             Stack bad{zeros({3}, kInt64), Scalar(1.5)};
             for (const IValue& v : tail_for(op, kInt64, true)) bad.push_back(v);
             if (op == Arith::Div) bad[2] = IValue(std::string(""));
             return std::vector<ErrorCase>{{bad, ErrorKind::DType, "float Scalar into int64 self"}};
           }});
}

const bool registered = [] {
  const std::vector<Scalar> kDivisors = {Scalar(3), Scalar(-2), Scalar(2.5)};
  register_arith({.name = "add",
                  .scalar_name = "add.Scalar",
                  .op = Arith::Add,
                  .scalars = {Scalar(3), Scalar(-2), Scalar(2.5), Scalar(1000), Scalar(true)}});
  register_arith({.name = "sub",
                  .scalar_name = "sub.Scalar",
                  .op = Arith::Sub,
                  .scalars = {Scalar(3), Scalar(-2), Scalar(2.5), Scalar(UINT64_MAX)}});
  register_arith({.name = "mul",
                  .scalar_name = "mul.Scalar",
                  .op = Arith::Mul,
                  .scalars = {Scalar(3), Scalar(-2), Scalar(2.5), Scalar(true)}});
  register_arith({.name = "div",
                  .scalar_name = "div.Scalar",
                  .op = Arith::Div,
                  .b = divisor_maker(),
                  .scalars = kDivisors});
  register_arith({.name = "remainder",
                  .scalar_name = "remainder.Scalar",
                  .op = Arith::Remainder,
                  .b = divisor_maker(),
                  .scalars = kDivisors});
  register_arith({.name = "fmod",
                  .scalar_name = "fmod.Scalar",
                  .op = Arith::Fmod,
                  .b = divisor_maker(),
                  .scalars = kDivisors});
  register_arith({.name = "pow",
                  .scalar_name = "pow.Tensor_Scalar",
                  .op = Arith::Pow,
                  .a = base_maker(),
                  .b = exponent_maker(),
                  .scalars = {Scalar(0), Scalar(3), Scalar(0.5)}});
  register_arith({.name = "maximum", .scalar_name = nullptr, .op = Arith::Max});
  register_arith({.name = "minimum", .scalar_name = nullptr, .op = Arith::Min});
  register_arith({.name = "atan2", .scalar_name = nullptr, .op = Arith::Atan2});
  register_arith({.name = "hypot", .scalar_name = nullptr, .op = Arith::Hypot});
  register_inplace("add_", "add_.Scalar", Arith::Add, plain, {Scalar(3), Scalar(-2), Scalar(2.5)});
  register_inplace("sub_", "sub_.Scalar", Arith::Sub, plain, {Scalar(3), Scalar(-2), Scalar(2.5)});
  register_inplace("mul_", "mul_.Scalar", Arith::Mul, plain, {Scalar(3), Scalar(-2), Scalar(2.5)});
  register_inplace("div_", "div_.Scalar", Arith::Div, divisor_maker(), kDivisors);
  return true;
}();

}  // namespace
}  // namespace kiln::testing::binary
