// OpInfos for where, clamp, lerp, addcmul, addcdiv and masked_fill. References broadcast the
// operands with expand() and compute on float64 values (the sampled integers are small, so this
// is exact), then convert to the expected dtype; conversion wraps like the ops' integer math.
#include <cmath>
#include <functional>

#include "src/core/promotion.h"
#include "src/core/shape.h"
#include "src/core/tensor_factory.h"
#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

using Fn3 = std::function<double(double, double, double)>;

// Applies f to the broadcast operands (undefined tensors read as 0).
Tensor map3(const Tensor& a, const Tensor& b, const Tensor& c, ScalarType out, const Fn3& f) {
  DimVector shape(a.sizes().begin(), a.sizes().end());
  for (const Tensor* t : {&b, &c})
    if (t->defined()) shape = broadcast_shapes("reference", shape, t->sizes());
  auto values = [&](const Tensor& t) {
    return t.defined()
               ? t.expand(shape).to_vector<double>()
               : std::vector<double>(static_cast<size_t>(checked_numel("reference", shape)), 0.0);
  };
  std::vector<double> va = values(a), vb = values(b), vc = values(c);
  for (size_t i = 0; i < va.size(); ++i) va[i] = f(va[i], vb[i], vc[i]);
  return from_vector(va, std::vector<int64_t>(shape.begin(), shape.end())).to(out);
}

Tensor as_tensor(const IValue& v) {
  return v.is_tensor() ? v.tensor() : scalar_to_tensor(v.scalar(), kFloat64);
}

ScalarType value_dtype(const IValue& a, const IValue& b) {
  ResultTypeBuilder r("reference");
  for (const IValue* v : {&a, &b}) {
    if (v->is_tensor()) {
      r.add(v->tensor());
    } else {
      r.add(v->scalar());
    }
  }
  return r.result();
}

Tensor boolean(IntArrayRef shape, std::mt19937_64& rng) { return make_tensor(shape, kBool, rng); }
bool skip_for_inplace(const std::string& d) { return d.find("expanded") != std::string::npos; }

std::vector<SampleInput> where_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  for (const SampleInput& b : binary_samples(dt, rng)) {
    const Tensor& x = b.args[0].tensor();
    s.push_back({{boolean(x.sizes(), rng), b.args[0], b.args[1]}, b.description});
  }
  s.push_back({{boolean({3, 1}, rng), make_tensor({1, 4}, dt, rng), make_tensor({}, dt, rng)},
               "condition [3, 1], [1, 4] and 0-dim"});
  s.push_back({{boolean({4}, rng), make_tensor({4}, dt, rng), make_tensor({4}, kFloat64, rng)},
               "mixed dtypes: other float64"});
  return s;
}

std::vector<Tensor> where_ref(const Stack& a) {
  return {map3(a[0].tensor(), as_tensor(a[1]), as_tensor(a[2]), value_dtype(a[1], a[2]),
               [](double c, double x, double y) { return c != 0 ? x : y; })};
}

Scalar small_scalar(ScalarType dt, bool second = false) {
  if (dt == kBool) return Scalar(!second);
  if (is_floating(dt)) return Scalar(second ? -2.5 : 1.5);
  return Scalar(second ? 2 : 3);
}

std::vector<ErrorCase> where_errors() {
  return {{{tensor({1.0, 0.0}), tensor({1.0, 2.0}), tensor({3.0, 4.0})},
           ErrorKind::DType,
           "float condition"},
          {{tensor({1, 0}).to(kBool), tensor({1.0, 2.0, 3.0}), tensor({3.0, 4.0})},
           ErrorKind::Shape,
           "shapes [3] and [2]"},
          {{tensor({1, 0}).to(kBool), tensor({1, 2}, kUInt64), tensor({3, 4}, kInt64)},
           ErrorKind::DType,
           "uint64 with int64"}};
}

double clamp_ref(double x, bool has_lo, double lo, bool has_hi, double hi) {
  if (has_lo && std::isnan(lo)) return lo;
  if (has_hi && std::isnan(hi)) return hi;
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}

std::vector<SampleInput> clamp_samples(ScalarType dt, std::mt19937_64& rng, bool in_place) {
  using OS = std::optional<Scalar>;
  std::vector<std::pair<OS, OS>> bounds = {{Scalar(1), Scalar(3)},
                                           {std::nullopt, Scalar(2)},
                                           {Scalar(1), std::nullopt},
                                           {Scalar(4), Scalar(1)}};
  if (is_floating(dt)) {
    bounds.push_back({Scalar(-1.5), Scalar(2.5)});
    bounds.push_back({Scalar(std::nan("")), std::nullopt});
  } else if (!in_place) {
    bounds.push_back({Scalar(0.5), std::nullopt});  // promotes to float32
  }
  std::vector<SampleInput> s;
  for (const SampleInput& x : unary_samples(dt, rng)) {
    if (in_place && skip_for_inplace(x.description)) continue;
    for (const auto& [lo, hi] : bounds) {
      s.push_back({{x.args[0], lo, hi},
                   x.description + " min=" + (lo ? lo->str() : "None") +
                       " max=" + (hi ? hi->str() : "None")});
    }
  }
  return s;
}

// A NaN bound makes every output NaN: no finite differences to compare with.
std::vector<SampleInput> clamp_grad_samples(std::mt19937_64& rng, bool in_place) {
  std::vector<SampleInput> s;
  for (SampleInput& x : clamp_samples(kFloat64, rng, in_place))
    if (x.description.find("nan") == std::string::npos) s.push_back(std::move(x));
  return s;
}

std::vector<Tensor> clamp_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  const std::optional<Scalar> lo = a[1].optional_scalar(), hi = a[2].optional_scalar();
  ResultTypeBuilder r("reference");
  r.add(x);
  if (lo) r.add(*lo);
  if (hi) r.add(*hi);
  const double l = lo ? lo->to_double() : 0, h = hi ? hi->to_double() : 0;
  return {map_unary_f64(
      x, r.result(), [&](double v) { return clamp_ref(v, lo.has_value(), l, hi.has_value(), h); })};
}

std::pair<double, double> float_result_tolerance(ScalarType dt) {
  return default_tolerance(is_floating(dt) ? dt : kFloat32);
}

std::vector<SampleInput> lerp_samples(ScalarType dt, std::mt19937_64& rng, bool tensor_weight,
                                      bool in_place) {
  std::vector<SampleInput> s;
  for (const SampleInput& b : binary_samples(dt, rng)) {
    const Tensor& x = b.args[0].tensor();
    const Tensor& y = b.args[1].tensor();
    if (in_place && !(broadcast_shapes("sample", x.sizes(), y.sizes()) == x.sizes())) continue;
    if (tensor_weight) {
      s.push_back({{x, y, make_tensor(y.sizes(), dt, rng, 0, 1)}, b.description});
    } else {
      s.push_back({{x, y, Scalar(0.3)}, b.description + " weight 0.3"});
      s.push_back({{x, y, Scalar(0.8)}, b.description + " weight 0.8"});
    }
  }
  return s;
}

std::vector<Tensor> lerp_ref(const Stack& a) {
  const Tensor& s = a[0].tensor();
  return {map3(s, a[1].tensor(), as_tensor(a[2]), s.dtype(),
               [](double x, double e, double w) { return x + w * (e - x); })};
}

std::vector<ErrorCase> lerp_errors() {
  return {{{tensor({1.0}, kFloat32), tensor({1.0}, kFloat64), Scalar(0.5)},
           ErrorKind::DType,
           "end float64 with start float32"},
          {{tensor({1, 2}), tensor({1, 2}), Scalar(0.5)}, ErrorKind::DType, "int64 start"},
          {{tensor({1.0, 2.0}), tensor({1.0, 2.0, 3.0}), Scalar(0.5)},
           ErrorKind::Shape,
           "shapes [2] and [3]"}};
}

// addcmul/addcdiv: self [5, 7], tensor1 [7], tensor2 [5, 1] and friends. addcdiv's divisors avoid
// 0.
std::vector<SampleInput> addc_samples(ScalarType dt, std::mt19937_64& rng, bool div,
                                      bool in_place) {
  const ScalarType tdt = div && !is_floating(dt) ? kFloat32 : dt;
  auto divisor = [&](IntArrayRef shape) {
    return div ? make_tensor(shape, tdt, rng, 1, 4) : make_tensor(shape, tdt, rng);
  };
  const Scalar value = is_floating(dt) ? Scalar(0.5) : Scalar(-2);
  std::vector<SampleInput> s;
  s.push_back({{make_tensor({5, 7}, dt, rng), make_tensor({7}, tdt, rng), divisor({5, 1}), value},
               "[5, 7] with [7] and [5, 1]"});
  s.push_back({{make_tensor({4, 6}, dt, rng, -5, 5, Layout::NonContiguous),
                make_tensor({6, 4}, tdt, rng).t(), divisor({4, 6}), Scalar(1)},
               "non-contiguous"});
  s.push_back({{make_tensor({0, 3}, dt, rng), make_tensor({3}, tdt, rng), divisor({3}), value},
               "zero-size"});
  s.push_back(
      {{make_tensor({200, 200}, dt, rng), make_tensor({200}, tdt, rng), divisor({200, 1}), value},
       "large [200, 200]"});
  if (!in_place) {
    s.push_back({{make_tensor({}, dt, rng), make_tensor({2, 3}, tdt, rng), divisor({3}), value},
                 "0-dim self broadcast"});
  }
  return s;
}

std::vector<Tensor> addc_ref(const Stack& a, bool div) {
  const Tensor &x = a[0].tensor(), &t1 = a[1].tensor(), &t2 = a[2].tensor();
  const double v = a[3].scalar().to_double();
  const ScalarType out = ResultTypeBuilder("reference").add(x).add(t1).add(t2).result();
  return {map3(x, t1, t2, out,
               [=](double s, double p, double q) { return div ? s + v * p / q : s + v * p * q; })};
}

const bool registered = [] {
  register_op_info({.name = "where",
                    .samples = where_samples,
                    .reference = where_ref,
                    .error_cases = where_errors});
  register_op_info(
      {.name = "where.ScalarSelf",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> s;
             for (const SampleInput& x : unary_samples(dt, rng))
               s.push_back({{boolean(x.args[0].tensor().sizes(), rng), small_scalar(dt), x.args[0]},
                            x.description});
             s.push_back(
                 {{boolean({3}, rng), Scalar(2.5), make_tensor({3}, dt, rng)}, "float scalar"});
             return s;
           },
       .reference = where_ref,
       .error_cases =
           [] {
             return std::vector<ErrorCase>{{{tensor({1, 0}), Scalar(1), tensor({1, 2})},
                                            ErrorKind::DType,
                                            "int64 condition"}};
           }});
  register_op_info({.name = "where.ScalarOther",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          std::vector<SampleInput> s;
                          for (const SampleInput& x : unary_samples(dt, rng))
                            s.push_back({{boolean(x.args[0].tensor().sizes(), rng), x.args[0],
                                          small_scalar(dt, true)},
                                         x.description});
                          return s;
                        },
                    .reference = where_ref,
                    .error_cases =
                        [] {
                          return std::vector<ErrorCase>{
                              {{tensor({1, 0}).to(kBool), tensor({1, 2, 3}), Scalar(1)},
                               ErrorKind::Shape,
                               "shapes [2] and [3]"}};
                        }});
  register_op_info(
      {.name = "where.Scalar",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> s;
             if (dt != kBool) return s;  // the only tensor is the condition
             s.push_back({{boolean({3, 4}, rng), Scalar(1), Scalar(-2)}, "int scalars -> int64"});
             s.push_back({{boolean({5}, rng), Scalar(1.5), Scalar(0)}, "float and int -> float32"});
             s.push_back({{boolean({}, rng), Scalar(true), Scalar(false)}, "bool scalars, 0-dim"});
             return s;
           },
       .reference = where_ref});

  register_op_info(
      {.name = "clamp",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return clamp_samples(dt, rng, false); },
       .reference = clamp_reference,
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{tensor({1.0}), std::nullopt, std::nullopt}, ErrorKind::Value, "no bounds"},
                 {{tensor({1, 2}, kUInt8), Scalar(-1), std::nullopt},
                  ErrorKind::Value,
                  "uint8 with min -1"},
                 {{tensor({1, 0}).to(kBool), Scalar(0), Scalar(1)}, ErrorKind::DType, "bool"}};
           },
       .tolerance = float_result_tolerance,
       .grad_samples = [](std::mt19937_64& rng) { return clamp_grad_samples(rng, false); }});
  register_op_info(
      {.name = "clamp_",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return clamp_samples(dt, rng, true); },
       .reference = clamp_reference,
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{tensor({1, 2}), Scalar(0.5), std::nullopt},
                  ErrorKind::DType,
                  "int64 clamped in place to a float bound"},
                 {{tensor({1.0, 2.0}).expand({3, 2}), Scalar(0), Scalar(1)},
                  ErrorKind::Value,
                  "expanded self"}};
           },
       .grad_samples = [](std::mt19937_64& rng) { return clamp_grad_samples(rng, true); }});
  register_op_info({.name = "clamp.Tensor",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          std::vector<SampleInput> s;
                          const Tensor x = make_tensor({5, 7}, dt, rng);
                          const Tensor lo = make_tensor({7}, dt, rng, -3, 0),
                                       hi = make_tensor({5, 1}, dt, rng, 0, 3);
                          s.push_back({{x, lo, hi}, "[5, 7] min [7] max [5, 1]"});
                          s.push_back({{x, lo, IValue()}, "min only"});
                          s.push_back({{make_tensor({4, 6}, dt, rng, -5, 5, Layout::NonContiguous),
                                        IValue(), make_tensor({6, 4}, dt, rng, 0, 3).t()},
                                       "max only, non-contiguous"});
                          s.push_back({{make_tensor({0, 3}, dt, rng), lo.slice(0, 0, 3), IValue()},
                                       "zero-size"});
                          s.push_back({{make_tensor({}, dt, rng), lo, hi}, "0-dim self"});
                          return s;
                        },
                    .reference =
                        [](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          const Tensor lo = a[1].is_none() ? Tensor() : a[1].tensor();
                          const Tensor hi = a[2].is_none() ? Tensor() : a[2].tensor();
                          ResultTypeBuilder r("reference");
                          r.add(x);
                          if (lo.defined()) r.add(lo);
                          if (hi.defined()) r.add(hi);
                          const bool has_lo = lo.defined(), has_hi = hi.defined();
                          return std::vector<Tensor>{
                              map3(x, lo, hi, r.result(), [=](double v, double l, double h) {
                                return clamp_ref(v, has_lo, l, has_hi, h);
                              })};
                        },
                    .error_cases =
                        [] {
                          return std::vector<ErrorCase>{
                              {{tensor({1.0}), IValue(), IValue()}, ErrorKind::Value, "no bounds"},
                              {{tensor({1.0, 2.0}), tensor({1.0, 2.0, 3.0}), IValue()},
                               ErrorKind::Shape,
                               "min [3] with self [2]"}};
                        }});

  register_op_info(
      {.name = "lerp",
       .samples = [](ScalarType dt,
                     std::mt19937_64& rng) { return lerp_samples(dt, rng, false, false); },
       .reference = lerp_ref,
       .error_cases = lerp_errors});
  register_op_info(
      {.name = "lerp.Tensor",
       .samples = [](ScalarType dt,
                     std::mt19937_64& rng) { return lerp_samples(dt, rng, true, false); },
       .reference = lerp_ref,
       .error_cases =
           [] {
             return std::vector<ErrorCase>{{{tensor({1.0}), tensor({2.0}), tensor({0.5}, kFloat64)},
                                            ErrorKind::DType,
                                            "float64 weight"}};
           }});
  register_op_info(
      {.name = "lerp_",
       .samples = [](ScalarType dt,
                     std::mt19937_64& rng) { return lerp_samples(dt, rng, false, true); },
       .reference = lerp_ref,
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{tensor({1.0, 2.0}), tensor({3, 2}, kFloat32).expand({3, 2}), Scalar(0.5)},
                  ErrorKind::Shape,
                  "end [3, 2] into self [2]"}};
           }});

  for (bool div : {false, true}) {
    for (bool in_place : {false, true}) {
      const std::string name = std::string(div ? "addcdiv" : "addcmul") + (in_place ? "_" : "");
      register_op_info(
          {.name = name,
           .samples = [=](ScalarType dt,
                          std::mt19937_64& rng) { return addc_samples(dt, rng, div, in_place); },
           .reference = [=](const Stack& a) { return addc_ref(a, div); },
           .error_cases =
               [=] {
                 std::vector<ErrorCase> e = {
                     {{tensor({1.0, 2.0}), tensor({1.0, 2.0, 3.0}), tensor({1.0}), Scalar(1)},
                      ErrorKind::Shape,
                      "shapes [2] and [3]"}};
                 if (div) {
                   e.push_back({{tensor({1.0}), tensor({1}), tensor({2}), Scalar(1)},
                                ErrorKind::DType,
                                "integer tensor1 / tensor2"});
                 } else {
                   e.push_back({{tensor({1}), tensor({1}), tensor({2}), Scalar(0.5)},
                                ErrorKind::DType,
                                "floating value with integer tensors"});
                 }
                 return e;
               },
           .tolerance = float_result_tolerance});
    }
  }

  for (bool in_place : {false, true}) {
    register_op_info(
        {.name = in_place ? "masked_fill_" : "masked_fill",
         .samples =
             [=](ScalarType dt, std::mt19937_64& rng) {
               std::vector<SampleInput> s;
               const Scalar v = small_scalar(dt);
               s.push_back(
                   {{make_tensor({5, 7}, dt, rng), boolean({7}, rng), v}, "[5, 7] mask [7]"});
               s.push_back({{make_tensor({4, 6}, dt, rng, -5, 5, Layout::NonContiguous),
                             boolean({4, 6}, rng), v},
                            "non-contiguous"});
               s.push_back({{make_tensor({0, 3}, dt, rng), boolean({3}, rng), v}, "zero-size"});
               s.push_back(
                   {{make_tensor({300, 200}, dt, rng), boolean({300, 200}, rng), v}, "large"});
               if (!in_place) {
                 s.push_back({{make_tensor({3, 1}, dt, rng), boolean({1, 4}, rng), v},
                              "broadcast to [3, 4]"});
                 s.push_back(
                     {{make_tensor({4, 3}, dt, rng, -5, 5, Layout::Expanded), boolean({}, rng), v},
                      "expanded self, 0-dim mask"});
               }
               return s;
             },
         .reference =
             [](const Stack& a) {
               const Tensor& x = a[0].tensor();
               const double v = a[2].scalar().to_double();
               return std::vector<Tensor>{
                   map3(x, a[1].tensor(), Tensor(), x.dtype(),
                        [=](double e, double m, double) { return m != 0 ? v : e; })};
             },
         .error_cases =
             [=] {
               std::vector<ErrorCase> e = {
                   {{tensor({1.0, 2.0}), tensor({1, 0}), Scalar(0)},
                    ErrorKind::DType,
                    "int64 mask"},
                   {{tensor({1.0, 2.0}), tensor({1, 0, 1}).to(kBool), Scalar(0)},
                    ErrorKind::Shape,
                    "mask [3] with self [2]"}};
               if (in_place) {
                 e.push_back({{tensor({1.0, 2.0}), zeros({3, 2}, kBool), Scalar(0)},
                              ErrorKind::Shape,
                              "mask [3, 2] larger than self [2]"});
               }
               return e;
             }});
  }
  return true;
}();

}  // namespace
}  // namespace kiln::testing
