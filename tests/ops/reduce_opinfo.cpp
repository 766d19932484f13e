// OpInfos for the reductions (src/ops/reduce.cpp). References group each output's values with
// plain loops (tests/ops/reduce_helpers.h) and reduce them in float64 or exact uint64 arithmetic.
#include "tests/ops/reduce_helpers.h"

namespace kiln::testing {
namespace {

using namespace reduce_ref;

ScalarType sum_out(ScalarType in, const IValue& dtype) {
  if (!dtype.is_none()) return dtype.dtype();
  if (is_unsigned(in)) return kUInt64;
  if (in == kBool || is_integral(in)) return kInt64;
  return in;
}

// (x, dims, keepdim [, extra...]) reference pieces.
const Tensor& X(const Stack& a) { return a[0].tensor(); }

Tensor accumulate_ref(const Stack& a, bool prod, bool mean) {
  const Tensor& x = X(a);
  const uint64_t mask = mask_of(x, a[1].int_list());
  const std::vector<int64_t> shape = out_shape(x, mask, a[2].to_bool());
  const ScalarType out =
      mean ? (a[3].is_none() ? x.dtype() : a[3].dtype()) : sum_out(x.dtype(), a[3]);
  if (is_floating(out)) {
    std::vector<double> r;
    for (const auto& g : group<double>(x, mask)) {
      double acc = prod ? 1 : 0;
      for (double v : g) acc = prod ? acc * v : acc + v;
      if (mean) acc /= static_cast<double>(g.size());
      r.push_back(acc);
    }
    return from_vector(r, shape).to(out);
  }
  std::vector<uint64_t> r;
  for (const auto& g : group<uint64_t>(x, mask)) {
    uint64_t acc = prod ? 1 : 0;
    for (uint64_t v : g) acc = prod ? acc * v : acc + v;
    r.push_back(acc);
  }
  return from_vector(r, shape).to(out);
}

// NaN-propagating max/min (first NaN wins) and its index, in the input's own type.
template <typename T>
std::pair<T, int64_t> extremum(const std::vector<T>& g, bool is_max) {
  T best = g[0];
  int64_t at = 0;
  for (size_t i = 1; i < g.size(); ++i) {
    const double b = cast_value<double>(best), v = cast_value<double>(g[i]);
    if (std::isnan(b)) break;
    bool better;
    if constexpr (std::is_integral_v<T>) {
      better = is_max ? g[i] > best : g[i] < best;
    } else {
      better = std::isnan(v) || (is_max ? v > b : v < b);
    }
    if (better) best = g[i], at = static_cast<int64_t>(i);
  }
  return {best, at};
}

// values and indices of max/min over `mask` of x.
std::vector<Tensor> extremum_ref(const Tensor& x, uint64_t mask, std::vector<int64_t> shape,
                                 bool is_max) {
  return visit_dtype(x.dtype(), [&]<typename T>() {
    std::vector<T> vals;
    std::vector<int64_t> idx;
    for (const auto& g : group<T>(x, mask)) {
      auto [v, i] = extremum(g, is_max);
      vals.push_back(v);
      idx.push_back(i);
    }
    return std::vector<Tensor>{from_vector(vals, shape), from_vector(idx, shape)};
  });
}

// Samples as (x, dims, keepdim) stacks, plus `extra` arguments appended.
std::vector<SampleInput> stacks(const std::vector<ReduceSample>& samples,
                                const std::function<void(Stack&, size_t)>& extra) {
  std::vector<SampleInput> out;
  for (size_t i = 0; i < samples.size(); ++i) {
    const ReduceSample& s = samples[i];
    Stack args{s.x, s.dims, s.keepdim};
    if (extra) extra(args, i);
    out.push_back({args, s.description});
  }
  return out;
}

ErrorCase dim_out_of_range(Stack args) {
  return {std::move(args), ErrorKind::Index, "dim out of range"};
}

void register_accumulate(const std::string& name, bool prod, bool mean) {
  register_op_info(
      {.name = name,
       .samples =
           [prod, mean](ScalarType dt, std::mt19937_64& rng) {
             auto base = reduce_samples(dt, rng, prod ? 0.5 : -5, prod ? 1.5 : 5, true, false);
             std::vector<SampleInput> out = stacks(base, [&](Stack& a, size_t) {
               a.emplace_back(mean && !is_floating(dt) ? IValue(kFloat32) : IValue());
             });
             Tensor x = make_tensor({3, 4}, dt, rng);
             out.push_back({{x, std::vector<int64_t>{1}, false, kFloat64}, "dtype=float64"});
             return out;
           },
       .reference =
           [prod, mean](const Stack& a) {
             return std::vector<Tensor>{accumulate_ref(a, prod, mean)};
           },
       .error_cases =
           [name, mean] {
             std::vector<ErrorCase> e{
                 dim_out_of_range({zeros({2, 3}), std::vector<int64_t>{2}, false, IValue()}),
                 {{zeros({2, 3}), std::vector<int64_t>{0, -2}, false, IValue()},
                  ErrorKind::Value,
                  "repeated dim"}};
             if (mean)
               e.push_back({{zeros({2}, kInt64), std::vector<int64_t>{}, false, IValue()},
                            ErrorKind::DType,
                            "int64 without dtype"});
             return e;
           },
       .tolerance = tolerance});
}

void register_amax(const std::string& name, bool is_max) {
  register_op_info(
      {.name = name,
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             auto out = stacks(reduce_samples(dt, rng, -5, 5, false, false), nullptr);
             if (is_floating(dt)) {
               Tensor x =
                   from_vector(std::vector<double>{1, NAN, 3, 2, 5, 4}, std::vector<int64_t>{2, 3})
                       .to(dt);
               out.push_back({{x, std::vector<int64_t>{1}, false}, "NaN propagates"});
             }
             return out;
           },
       .reference =
           [is_max](const Stack& a) {
             const Tensor& x = X(a);
             const uint64_t mask = mask_of(x, a[1].int_list());
             return std::vector<Tensor>{
                 extremum_ref(x, mask, out_shape(x, mask, a[2].to_bool()), is_max)[0]};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({0, 3}), std::vector<int64_t>{0}, false},
                  ErrorKind::Index,
                  "empty reduced dim"},
                 {{zeros({0}), std::vector<int64_t>{}, false}, ErrorKind::Index, "empty tensor"},
                 dim_out_of_range({zeros({2, 3}), std::vector<int64_t>{-3}, false})};
           },
       .grad_samples =
           [](std::mt19937_64& rng) {
             return without_ties(
                 stacks(reduce_samples(kFloat64, rng, -5, 5, false, false), nullptr));
           }});
}

// max()/min() over every element: amax/amin's values; their own gradient (ties share it, a NaN
// result's goes to the NaN elements).
void register_full_extremum(const std::string& name, bool is_max) {
  register_op_info(
      {.name = name,
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             for (const ReduceSample& s : reduce_samples(dt, rng, -5, 5, false, false))
               if (s.x.numel() > 0) out.push_back({{s.x}, s.description});
             if (is_floating(dt))
               out.push_back(
                   {{from_vector(std::vector<double>{1, NAN, 3}).to(dt)}, "NaN propagates"});
             return out;
           },
       .reference =
           [is_max](const Stack& a) {
             const Tensor& x = X(a);
             const uint64_t mask = mask_of(x, {});
             return std::vector<Tensor>{
                 extremum_ref(x, mask, out_shape(x, mask, false), is_max)[0]};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{{{zeros({0})}, ErrorKind::Index, "empty tensor"}};
           },
       .grad_samples =
           [](std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             for (const ReduceSample& s : reduce_samples(kFloat64, rng, -5, 5, false, false))
               if (s.x.numel() > 0) out.push_back({{s.x}, s.description});
             return without_ties(out);
           }});
}

std::vector<SampleInput> single_dim_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> out;
  for (const ReduceSample& s : reduce_samples(dt, rng, -5, 5, false, true))
    out.push_back({{s.x, s.dims[0], s.keepdim}, s.description});
  if (is_floating(dt)) {
    Tensor x =
        from_vector(std::vector<double>{1, NAN, 3, NAN, 5, 4}, std::vector<int64_t>{2, 3}).to(dt);
    out.push_back({{x, int64_t{1}, false}, "NaN wins, first NaN's index"});
  }
  Tensor ties =
      from_vector(std::vector<double>{2, 1, 2, 0, 0, 1}, std::vector<int64_t>{2, 3}).to(dt);
  out.push_back({{ties, int64_t{1}, false}, "ties: first occurrence"});
  return out;
}

void register_max_dim(const std::string& name, bool is_max) {
  register_op_info(
      {.name = name,
       .samples = single_dim_samples,
       .reference =
           [is_max](const Stack& a) {
             const Tensor& x = X(a);
             const uint64_t mask = uint64_t{1} << wrap(a[1].to_int(), x.dim());
             return extremum_ref(x, mask, out_shape(x, mask, a[2].to_bool()), is_max);
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({3, 0}), int64_t{1}, false}, ErrorKind::Index, "empty dim"},
                 dim_out_of_range({zeros({2, 3}), int64_t{2}, false})};
           },
       .grad_samples =
           [](std::mt19937_64& rng) { return without_ties(single_dim_samples(kFloat64, rng)); }});
}

void register_argmax(const std::string& name, bool is_max) {
  register_op_info(
      {.name = name,
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out = single_dim_samples(dt, rng);
             out.push_back(
                 {{make_tensor({4, 5}, dt, rng), IValue(), false}, "no dim: flattened index"});
             out.push_back(
                 {{make_tensor({4, 5}, dt, rng, -5, 5, Layout::NonContiguous), IValue(), true},
                  "no dim keepdim, non-contiguous"});
             return out;
           },
       .reference =
           [is_max](const Stack& a) {
             const Tensor& x = X(a);
             if (a[1].is_none()) {
               Tensor flat = x.reshape({x.numel()});
               std::vector<int64_t> shape =
                   a[2].to_bool() ? std::vector<int64_t>(x.dim(), 1) : std::vector<int64_t>{};
               return std::vector<Tensor>{extremum_ref(flat, 1, shape, is_max)[1]};
             }
             const uint64_t mask = uint64_t{1} << wrap(a[1].to_int(), x.dim());
             return std::vector<Tensor>{
                 extremum_ref(x, mask, out_shape(x, mask, a[2].to_bool()), is_max)[1]};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({0}), IValue(), false}, ErrorKind::Index, "empty, no dim"},
                 {{zeros({2, 0}), int64_t{1}, false}, ErrorKind::Index, "empty dim"},
                 dim_out_of_range({zeros({2, 3}), int64_t{-3}, false})};
           }});
}

// Floating reductions in float64: f(group) -> value.
using GroupFn = std::function<double(const std::vector<double>&, const Stack&)>;
Tensor float_ref(const Stack& a, int dims_at, int keepdim_at, const GroupFn& f) {
  const Tensor& x = X(a);
  const uint64_t mask = mask_of(x, a[dims_at].int_list());
  std::vector<double> r;
  for (const auto& g : group<double>(x, mask)) r.push_back(f(g, a));
  return from_vector(r, out_shape(x, mask, a[keepdim_at].to_bool())).to(x.dtype());
}

double variance(const std::vector<double>& g, double correction) {
  double m = 0, ss = 0;
  for (double v : g) m += v;
  m /= static_cast<double>(g.size());
  for (double v : g) ss += (v - m) * (v - m);
  return ss / std::max(0.0, static_cast<double>(g.size()) - correction);
}

std::vector<SampleInput> var_samples(ScalarType dt, std::mt19937_64& rng) {
  return stacks(reduce_samples(dt, rng, -5, 5, true, false), [](Stack& a, size_t i) {
    const double corrections[] = {1, 0, 2};
    // Stack is (x, dims, keepdim): insert correction before keepdim.
    IValue keepdim = a[2];
    a[2] = corrections[i % 3];
    a.push_back(keepdim);
  });
}

void register_var(const std::string& name, bool take_sqrt) {
  register_op_info(
      {.name = name,
       .samples = var_samples,
       .reference =
           [take_sqrt](const Stack& a) {
             return std::vector<Tensor>{
                 float_ref(a, 1, 3, [take_sqrt](const std::vector<double>& g, const Stack& s) {
                   const double v = variance(g, s[2].to_double());
                   return take_sqrt ? std::sqrt(v) : v;
                 })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({3}, kInt64), std::vector<int64_t>{}, 1.0, false},
                  ErrorKind::DType,
                  "integer input"},
                 dim_out_of_range({zeros({2, 3}), std::vector<int64_t>{5}, 1.0, false})};
           },
       // std of a constant line (an expanded sample's columns) is 0, where sqrt has no slope.
       .grad_samples =
           [](std::mt19937_64& rng) { return without_ties(var_samples(kFloat64, rng)); }});
}

const bool registered = [] {
  register_accumulate("sum", false, false);
  register_accumulate("prod", true, false);
  register_accumulate("mean", false, true);
  register_amax("amax", true);
  register_amax("amin", false);
  register_full_extremum("max", true);
  register_full_extremum("min", false);
  register_max_dim("max.dim", true);
  register_max_dim("min.dim", false);
  register_argmax("argmax", true);
  register_argmax("argmin", false);
  register_var("var", false);
  register_var("std", true);
  register_op_info(
      {.name = "logsumexp",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             auto out = stacks(reduce_samples(dt, rng, -5, 5, true, false), nullptr);
             Tensor inf = from_vector(std::vector<double>{-INFINITY, -INFINITY, 1, INFINITY},
                                      std::vector<int64_t>{2, 2})
                              .to(dt);
             out.push_back({{inf, std::vector<int64_t>{1}, false}, "all -inf row and +inf row"});
             return out;
           },
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{
                 float_ref(a, 1, 2, [](const std::vector<double>& g, const Stack&) {
                   double m = -INFINITY;
                   for (double v : g) m = std::max(m, v);
                   if (std::isinf(m)) return m;
                   double s = 0;
                   for (double v : g) s += std::exp(v - m);
                   return m + std::log(s);
                 })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 dim_out_of_range({zeros({2, 3}), std::vector<int64_t>{3}, false})};
           }});
  register_op_info(
      {.name = "norm",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return stacks(reduce_samples(dt, rng, -5, 5, true, false), [](Stack& a, size_t i) {
               const double ps[] = {2, 1, INFINITY, 0, 3, -INFINITY, 0.5};
               Stack b{a[0], Scalar(ps[i % 7]), a[1], a[2]};
               a = b;
             });
           },
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{
                 float_ref(a, 2, 3, [](const std::vector<double>& g, const Stack& s) {
                   const double p = s[1].scalar().to_double();
                   if (std::isinf(p)) {
                     double r = p > 0 ? 0 : INFINITY;
                     for (double v : g)
                       r = p > 0 ? std::max(r, std::fabs(v)) : std::min(r, std::fabs(v));
                     return r;
                   }
                   double acc = 0;
                   for (double v : g) acc += p == 0 ? (v != 0) : std::pow(std::fabs(v), p);
                   return p == 0 ? acc : std::pow(acc, 1 / p);
                 })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({3}, kInt32), Scalar(2), std::vector<int64_t>{}, false},
                  ErrorKind::DType,
                  "integer input"}};
           },
       .tolerance = tolerance});
  for (bool is_all : {true, false}) {
    register_op_info({.name = is_all ? "all" : "any",
                      .samples =
                          [](ScalarType dt, std::mt19937_64& rng) {
                            return stacks(reduce_samples(dt, rng, 0, 1.2, true, false), nullptr);
                          },
                      .reference =
                          [is_all](const Stack& a) {
                            const Tensor& x = X(a);
                            const uint64_t mask = mask_of(x, a[1].int_list());
                            std::vector<uint8_t> r;
                            for (const auto& g : group<double>(x, mask)) {
                              bool acc = is_all;
                              for (double v : g) acc = is_all ? (acc && v != 0) : (acc || v != 0);
                              r.push_back(acc);
                            }
                            return std::vector<Tensor>{
                                from_vector(r, out_shape(x, mask, a[2].to_bool())).to(kBool)};
                          },
                      .error_cases =
                          [] {
                            return std::vector<ErrorCase>{
                                dim_out_of_range({zeros({2, 3}), std::vector<int64_t>{2}, false})};
                          }});
  }
  return true;
}();

}  // namespace
}  // namespace kiln::testing
