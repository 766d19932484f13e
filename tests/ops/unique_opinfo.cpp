// OpInfos for unique and repeat_interleave (src/ops/unique.cpp), and sym_scalar_tensor
// (src/ops/scalar_output.cpp), which turns a (symbolic) int into a tensor.
#include <algorithm>
#include <map>

#include "src/core/shape.h"
#include "tests/ops/gather_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;
using Args = std::vector<SampleInput>;

// Random integers in [0, n) of dtype `dt`: repeated values, exact in every dtype.
Tensor small_ints(Shape s, int64_t n, ScalarType dt, std::mt19937_64& rng) {
  std::vector<int64_t> v(static_cast<size_t>(numel_of(s)));
  for (int64_t& x : v) x = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  return from_vector(v, s).to(dt);
}

ErrorCase err(Stack args, ErrorKind k, std::string d) { return {std::move(args), k, std::move(d)}; }

std::vector<Tensor> unique_ref(const Stack& a) {
  const Tensor& x = a[0].tensor();
  const std::vector<double> v = x.contiguous().to_vector<double>();
  std::map<double, int64_t> counts;
  for (double e : v) ++counts[e];
  std::vector<double> values;
  std::vector<int64_t> count;
  for (const auto& [value, n] : counts) {
    values.push_back(value);
    count.push_back(n);
  }
  std::vector<int64_t> inverse;
  for (double e : v)
    inverse.push_back(std::lower_bound(values.begin(), values.end(), e) - values.begin());
  const int64_t u = static_cast<int64_t>(values.size());
  return {from_vector(values, Shape{u}).to(x.dtype()), from_vector(inverse, shape_vec(x)),
          from_vector(count, Shape{u})};
}

std::vector<int64_t> repeated_indices(const std::vector<int64_t>& repeats) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < repeats.size(); ++i)
    for (int64_t k = 0; k < repeats[i]; ++k) out.push_back(static_cast<int64_t>(i));
  return out;
}

// Slice i of x along dim `dim` repeated repeats[i] times (dim absent: of the flattened x).
Tensor repeated_slices(const Tensor& x, std::vector<int64_t> repeats, std::optional<int64_t> dim) {
  Shape shape = dim ? shape_vec(x) : Shape{x.numel()};
  const int64_t d = dim ? (*dim < 0 ? *dim + x.dim() : *dim) : 0;
  if (repeats.size() == 1) repeats.assign(static_cast<size_t>(shape[d]), repeats[0]);
  const std::vector<double> v = x.contiguous().to_vector<double>();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  for (size_t k = static_cast<size_t>(d) + 1; k < shape.size(); ++k) inner *= shape[k];
  const std::vector<int64_t> rows = repeated_indices(repeats);
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r : rows)
      for (int64_t i = 0; i < inner; ++i) out.push_back(v[(o * shape[d] + r) * inner + i]);
  shape[d] = static_cast<int64_t>(rows.size());
  return from_vector(out, shape).to(x.dtype());
}

const bool registered = [] {
  register_op_info({.name = "unique",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          return Args{{{small_ints({4, 5}, 4, dt, rng)}, "[4, 5] of 4 values"},
                                      {{small_ints({5, 3}, 3, dt, rng).t()}, "non-contiguous"},
                                      {{small_ints({}, 4, dt, rng)}, "0-dim"},
                                      {{small_ints({0, 2}, 4, dt, rng)}, "zero-size"}};
                        },
                    .reference = unique_ref});
  register_op_info(
      {.name = "repeat_interleave.Tensor",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{{{small_ints({5}, 3, dt, rng), IValue()}, "5 repeats"},
                         {{small_ints({3}, 3, dt, rng) + 1, IValue()}, "positive"},
                         {{small_ints({0}, 3, dt, rng), IValue()}, "no repeats"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& r = a[0].tensor();
             const std::vector<int64_t> idx = repeated_indices(r.to_vector<int64_t>());
             return std::vector<Tensor>{
                 from_vector(idx, Shape{static_cast<int64_t>(idx.size())}).to(r.dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({from_vector(std::vector<int64_t>{1, -1}), IValue()}, ErrorKind::Value,
                     "negative"),
                 err({zeros({2, 2}, kInt64), IValue()}, ErrorKind::Value, "2-D repeats"),
                 err({from_vector(std::vector<int64_t>{1, 2}), IValue(int64_t{4})},
                     ErrorKind::Value, "wrong output_size")};
           }});
  register_op_info(
      {.name = "repeat_interleave.self_Tensor",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             const Tensor x = make_tensor({3, 2}, dt, rng);
             return Args{
                 {{x, from_vector(std::vector<int64_t>{2, 0, 1}), IValue(int64_t{0}), IValue()},
                  "rows"},
                 {{x, from_vector(std::vector<int64_t>{1, 3}), IValue(int64_t{-1}), IValue()},
                  "columns"},
                 {{x, from_vector(std::vector<int64_t>{2}), IValue(), IValue()},
                  "one repeat, flattened"},
                 {{make_tensor({4, 3}, dt, rng, -5, 5, Layout::NonContiguous),
                   from_vector(std::vector<int64_t>{1, 0, 2}), IValue(int64_t{1}),
                   IValue(int64_t{3})},
                  "non-contiguous, output_size"}};
           },
       .reference =
           [](const Stack& a) {
             const std::optional<int64_t> dim = a[2].optional_int();
             return std::vector<Tensor>{
                 repeated_slices(a[0].tensor(), a[1].tensor().to_vector<int64_t>(), dim)};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({2, 3}), from_vector(std::vector<int64_t>{1, 2}), IValue(int64_t{1}),
                      IValue()},
                     ErrorKind::Shape, "2 repeats for 3 slices"),
                 err({zeros({2, 3}), from_vector(std::vector<int64_t>{1, -2}), IValue(int64_t{0}),
                      IValue()},
                     ErrorKind::Value, "negative")};
           },
       .grad_samples =
           [](std::mt19937_64& rng) {
             return Args{
                 {{make_tensor({3, 2}, kFloat64, rng), from_vector(std::vector<int64_t>{2, 0, 3}),
                   IValue(int64_t{0}), IValue()},
                  "rows"}};
           }});
  register_op_info(
      {.name = "repeat_interleave.self_int",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             const Tensor x = make_tensor({2, 3}, dt, rng);
             return Args{
                 {{x, int64_t{2}, IValue(int64_t{1})}, "columns twice"},
                 {{x, int64_t{3}, IValue()}, "flattened"},
                 {{x, int64_t{0}, IValue(int64_t{0})}, "zero repeats"},
                 {{make_tensor({0, 2}, dt, rng), int64_t{2}, IValue(int64_t{0})}, "zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{repeated_slices(
                 a[0].tensor(), std::vector<int64_t>{a[1].to_int()}, a[2].optional_int())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({2}), int64_t{-1}, IValue(int64_t{0})}, ErrorKind::Value, "negative"),
                 err({zeros({2}), int64_t{2}, IValue(int64_t{1})}, ErrorKind::Index, "bad dim")};
           },
       .grad_samples =
           [](std::mt19937_64& rng) {
             return Args{{{make_tensor({2, 3}, kFloat64, rng), int64_t{2}, IValue(int64_t{1})},
                          "columns twice"}};
           }});
  register_op_info(
      {.name = "sym_scalar_tensor",
       .samples =
           [](ScalarType dt, std::mt19937_64&) {
             if (dt != kInt64) return Args{};  // its result is always int64
             return Args{{{int64_t{7}, Device::CPU}, "7"}, {{int64_t{-3}, Device::CPU}, "-3"}};
           },
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{scalar_tensor(a[0].to_int(), kInt64)};
           }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
