// OpInfos for ops along one dim whose output keeps the dim: sort, topk (src/ops/sort.cpp),
// cumsum, cumprod, softmax, log_softmax (src/ops/scan_softmax.cpp). References process each line
// with plain loops in float64 / exact uint64 arithmetic.
#include <algorithm>

#include "tests/ops/reduce_helpers.h"

namespace kiln::testing {
namespace {

using namespace reduce_ref;

// Writes lines[o][r] (o: index over the kept dims, r: position along dim) into a tensor of x's
// shape with size k along dim.
template <typename T>
Tensor from_lines(const Tensor& x, int64_t dim, int64_t k,
                  const std::vector<std::vector<T>>& lines) {
  std::vector<int64_t> shape = shape_of(x);
  if (x.dim() > 0) shape[dim] = k;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<T> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != dim) o = o * shape[d] + idx[d];
    out[flat] = lines[o][x.dim() == 0 ? 0 : idx[dim]];
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return from_vector(out, shape);
}

// Samples (x, dim) along one dim: every layout of reduce_samples plus ties and NaN.
std::vector<std::pair<Tensor, int64_t>> line_samples(ScalarType dt, std::mt19937_64& rng,
                                                     double low, double high,
                                                     std::vector<std::string>& names) {
  std::vector<std::pair<Tensor, int64_t>> s;
  for (const ReduceSample& r : reduce_samples(dt, rng, low, high, true, true)) {
    s.push_back({r.x, r.dims[0]});
    names.push_back(r.description);
  }
  s.push_back({make_tensor({3, 9}, dt, rng, -2, 2), 1});
  names.push_back("[3, 9] many ties");
  if (is_floating(dt)) {
    s.push_back(
        {from_vector(std::vector<double>{3, NAN, -1, INFINITY, NAN, -INFINITY, 0, 3}).to(dt), 0});
    names.push_back("NaN and inf");
  }
  return s;
}

// Stable (value, index) order of one line, NaN largest.
template <typename T>
std::vector<int64_t> sorted_order(const std::vector<T>& line, bool descending) {
  std::vector<int64_t> order(line.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  auto less = [&](int64_t a, int64_t b) {
    const double x = cast_value<double>(line[a]), y = cast_value<double>(line[b]);
    if constexpr (std::is_integral_v<T>) {
      return line[a] < line[b];
    } else {
      if (std::isnan(y)) return !std::isnan(x);
      return x < y;
    }
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return descending ? less(b, a) : less(a, b); });
  return order;
}

std::vector<Tensor> sort_ref(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  return visit_dtype(x.dtype(), [&]<typename T>() {
    std::vector<std::vector<T>> vals;
    std::vector<std::vector<int64_t>> idx;
    for (const auto& line : group<T>(x, x.dim() == 0 ? 0 : uint64_t{1} << dim)) {
      std::vector<int64_t> order = sorted_order(line, descending);
      order.resize(static_cast<size_t>(k));
      std::vector<T> v;
      for (int64_t i : order) v.push_back(line[i]);
      vals.push_back(v);
      idx.push_back(order);
    }
    return std::vector<Tensor>{from_lines(x, dim, k, vals), from_lines(x, dim, k, idx)};
  });
}

int64_t line_length(const Tensor& x, int64_t dim) {
  return x.dim() == 0 ? 1 : int64_t{x.size(dim)};
}

ErrorCase dim_out_of_range(Stack args) {
  return {std::move(args), ErrorKind::Index, "dim out of range"};
}

// Scans and softmax: f(line of doubles) -> line of doubles, or exact uint64 for integer scans.
std::vector<SampleInput> dtype_samples(ScalarType dt, std::mt19937_64& rng, double low, double high,
                                       const IValue& dtype) {
  std::vector<std::string> names;
  std::vector<SampleInput> out;
  auto s = line_samples(dt, rng, low, high, names);
  for (size_t i = 0; i < s.size(); ++i) out.push_back({{s[i].first, s[i].second, dtype}, names[i]});
  return out;
}

void register_scan(const std::string& name, bool is_prod) {
  register_op_info(
      {.name = name,
       .samples =
           [is_prod](ScalarType dt, std::mt19937_64& rng) {
             auto out = dtype_samples(dt, rng, is_prod ? 0.5 : -5, is_prod ? 1.5 : 5, IValue());
             out.push_back(
                 {{make_tensor({3, 4}, dt, rng), int64_t{-1}, kFloat64}, "dtype=float64"});
             return out;
           },
       .reference =
           [is_prod](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t dim = wrap(a[1].to_int(), x.dim());
             ScalarType out = !a[2].is_none()          ? a[2].dtype()
                              : is_unsigned(x.dtype()) ? kUInt64
                              : is_floating(x.dtype()) ? x.dtype()
                                                       : kInt64;
             const uint64_t mask = x.dim() == 0 ? 0 : uint64_t{1} << dim;
             auto scan = [&]<typename V>() {
               std::vector<std::vector<V>> lines = group<V>(x, mask);
               for (auto& l : lines)
                 for (size_t i = 1; i < l.size(); ++i)
                   l[i] = is_prod ? l[i - 1] * l[i] : l[i - 1] + l[i];
               return from_lines(x, dim, line_length(x, dim), lines).to(out);
             };
             if (is_floating(out)) return std::vector<Tensor>{scan.template operator()<double>()};
             return std::vector<Tensor>{scan.template operator()<uint64_t>()};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{dim_out_of_range({zeros({2, 3}), int64_t{2}, IValue()})};
           },
       .tolerance = tolerance});
}

void register_softmax(const std::string& name, bool log) {
  register_op_info(
      {.name = name,
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             auto out =
                 dtype_samples(dt, rng, -5, 5, is_floating(dt) ? IValue() : IValue(kFloat32));
             out.push_back({{make_tensor({64, 1000}, dt, rng), int64_t{-1},
                             is_floating(dt) ? IValue() : IValue(kFloat32)},
                            "[64, 1000] last dim (fused rows, parallel)"});
             out.push_back({{make_tensor({3, 4}, dt, rng), int64_t{0}, kFloat64}, "dtype=float64"});
             return out;
           },
       .reference =
           [log](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t dim = wrap(a[1].to_int(), x.dim());
             const ScalarType out = a[2].is_none() ? x.dtype() : a[2].dtype();
             std::vector<std::vector<double>> lines =
                 group<double>(x.to(out), x.dim() == 0 ? 0 : uint64_t{1} << dim);
             for (auto& l : lines) {
               double m = -INFINITY, s = 0;
               for (double v : l) m = std::max(m, v);
               for (double v : l) s += std::exp(v - m);
               for (double& v : l) v = log ? v - m - std::log(s) : std::exp(v - m) / s;
             }
             return std::vector<Tensor>{from_lines(x, dim, line_length(x, dim), lines).to(out)};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}, kInt64), int64_t{1}, IValue()},
                  ErrorKind::DType,
                  "int64 without dtype"},
                 {{zeros({2, 3}), int64_t{1}, kInt32}, ErrorKind::DType, "integer dtype="},
                 dim_out_of_range({zeros({2, 3}), int64_t{-3}, IValue()})};
           },
       .tolerance = tolerance});
}

const bool registered = [] {
  auto sort_samples = [](ScalarType dt, std::mt19937_64& rng) {
    std::vector<std::string> names;
    std::vector<SampleInput> out;
    auto s = line_samples(dt, rng, -5, 5, names);
    for (size_t i = 0; i < s.size(); ++i)
      for (bool desc : {false, true})
        out.push_back(
            {{s[i].first, s[i].second, desc, i % 2 == 0}, names[i] + (desc ? " descending" : "")});
    return out;
  };
  auto topk_samples = [](ScalarType dt, std::mt19937_64& rng) {
    std::vector<std::string> names;
    std::vector<SampleInput> out;
    auto s = line_samples(dt, rng, -5, 5, names);
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t n = line_length(s[i].first, wrap(s[i].second, s[i].first.dim()));
      for (int64_t k : {s[i].first.dim() == 0 ? n : 0, std::min<int64_t>(n, 3), n})
        for (bool largest : {true, false})
          out.push_back({{s[i].first, k, s[i].second, largest, true},
                         fmt::format("{} k={} largest={}", names[i], k, largest)});
    }
    return out;
  };
  register_op_info(
      {.name = "sort",
       .samples = sort_samples,
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t dim = wrap(a[1].to_int(), x.dim());
             return sort_ref(x, dim, a[2].to_bool(), line_length(x, dim));
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 dim_out_of_range({zeros({2, 3}), int64_t{2}, false, false})};
           },
       .grad_samples =
           [=](std::mt19937_64& rng) { return without_ties(sort_samples(kFloat64, rng)); }});
  register_op_info(
      {.name = "topk",
       .samples = topk_samples,
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t dim = wrap(a[2].to_int(), x.dim());
             return sort_ref(x, dim, a[3].to_bool(), a[1].to_int());
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), int64_t{4}, int64_t{1}, true, true},
                  ErrorKind::Index,
                  "k > size"},
                 {{zeros({2, 3}), int64_t{-1}, int64_t{1}, true, true}, ErrorKind::Index, "k < 0"},
                 {{zeros({}), int64_t{0}, int64_t{0}, true, true},
                  ErrorKind::Index,
                  "k = 0 on a 0-dim tensor"},
                 dim_out_of_range({zeros({2, 3}), int64_t{1}, int64_t{2}, true, true})};
           },
       .grad_samples =
           [=](std::mt19937_64& rng) { return without_ties(topk_samples(kFloat64, rng)); }});
  register_scan("cumsum", false);
  register_scan("cumprod", true);
  register_softmax("softmax", false);
  register_softmax("log_softmax", true);
  return true;
}();

}  // namespace
}  // namespace kiln::testing
