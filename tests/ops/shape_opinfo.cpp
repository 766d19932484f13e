// OpInfos for the shape ops: cat, stack, split, split_with_sizes, chunk, pad, flip, roll, repeat,
// tril, triu.
#include "src/core/promotion.h"
#include "tests/ops/gather_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;
using Args = std::vector<SampleInput>;

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng, Layout l = Layout::Contiguous) {
  return make_tensor(s, dt, rng, -5, 5, l);
}

// Concatenation along d of tensors already cast to `dt`, position by position.
Tensor cat_ref(const std::vector<Tensor>& ts, int64_t dim, ScalarType dt) {
  std::vector<Tensor> used;
  for (const Tensor& t : ts)
    if (!(t.dim() == 1 && t.size(0) == 0)) used.push_back(t.to(dt));
  if (used.empty()) return from_vector(std::vector<double>{}).to(dt);
  const int64_t d = dim < 0 ? dim + used[0].dim() : dim;
  Shape shape = shape_vec(used[0]);
  shape[d] = 0;
  for (const Tensor& t : used) shape[d] += t.size(d);
  std::vector<double> out;
  std::vector<std::vector<double>> vals;
  for (const Tensor& t : used) vals.push_back(t.to_vector<double>());
  for (int64_t p = 0; p < numel_of(shape); ++p) {
    Shape idx = unravel(p, shape);
    size_t k = 0;
    while (idx[d] >= used[k].size(d)) idx[d] -= used[k++].size(d);
    out.push_back(vals[k][ravel(idx, shape_vec(used[k]))]);
  }
  return from_vector(out, shape).to(dt);
}

std::vector<Tensor> split_ref(const Tensor& x, int64_t d, const Shape& sizes) {
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : sizes) {
    Shape shape = shape_vec(x);
    shape[d] = s;
    out.push_back(map_positions(x, shape, [&](Shape i) {
      i[d] += off;
      return ravel(i, shape_vec(x));
    }));
    off += s;
  }
  return out;
}

// The source index of pad output position i along a dim of size n with left padding l.
int64_t pad_source(const std::string& mode, int64_t i, int64_t l, int64_t n) {
  int64_t s = i - l;
  if (mode == "reflect") {
    if (s < 0) s = -s;
    if (s >= n) s = 2 * (n - 1) - s;
  } else if (mode == "replicate") {
    s = std::clamp<int64_t>(s, 0, n - 1);
  } else if (mode == "circular") {
    s = ((s % n) + n) % n;
  }
  return s >= 0 && s < n ? s : -1;
}

ErrorCase err(Stack args, ErrorKind k, std::string d) { return {std::move(args), k, std::move(d)}; }

const bool registered = [] {
  register_op_info(
      {.name = "cat",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{
                 {{std::vector<Tensor>{mk({2, 3}, dt, rng),
                                       mk({4, 3}, dt, rng, Layout::NonContiguous)},
                   0},
                  "[2,3] + non-contiguous [4,3] dim 0"},
                 {{std::vector<Tensor>{mk({2, 3}, dt, rng), mk({2, 1}, dt, rng),
                                       mk({2, 3}, dt, rng, Layout::Expanded)},
                   -1},
                  "three along dim -1"},
                 {{std::vector<Tensor>{mk({2, 3}, dt, rng), mk({0}, dt, rng),
                                       mk({1, 3}, dt == kUInt64 ? kUInt8 : kInt32, rng)},
                   0},
                  "skips [0], promotes with int32"},
                 {{std::vector<Tensor>{mk({0, 3}, dt, rng), mk({0, 3}, dt, rng)}, 1}, "zero-size"},
                 {{std::vector<Tensor>{mk({300, 200}, dt, rng), mk({100, 200}, dt, rng)}, 0},
                  "large"}};
           },
       .reference =
           [](const Stack& a) {
             const auto& ts = a[0].tensor_list();
             ScalarType dt = ts[0].dtype();
             for (const Tensor& t : ts) dt = promote_types(dt, t.dtype());
             return std::vector<Tensor>{cat_ref(ts, a[1].to_int(), dt)};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({std::vector<Tensor>{zeros({2, 3}), zeros({2, 3, 1})}, 0}, ErrorKind::Shape,
                     "rank mismatch"),
                 err({std::vector<Tensor>{zeros({2, 3}), zeros({2, 4})}, 0}, ErrorKind::Shape,
                     "size mismatch"),
                 err({std::vector<Tensor>{zeros({}), zeros({})}, 0}, ErrorKind::Shape, "0-dim"),
                 err({std::vector<Tensor>{zeros({2, 3})}, 2}, ErrorKind::Index,
                     "dim out of range")};
           }});
  register_op_info(
      {.name = "stack",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             Args out;
             for (int64_t d : {0, 1, -1})
               out.push_back({{std::vector<Tensor>{mk({2, 3}, dt, rng),
                                                   mk({2, 3}, dt, rng, Layout::NonContiguous)},
                               d},
                              "two [2,3] dim " + std::to_string(d)});
             out.push_back({{std::vector<Tensor>{mk({}, dt, rng), mk({}, dt, rng)}, 0}, "0-dim"});
             return out;
           },
       .reference =
           [](const Stack& a) {
             std::vector<Tensor> ts;
             const int64_t n = a[0].tensor_list()[0].dim() + 1;
             int64_t d = a[1].to_int();
             if (d < 0) d += n;
             for (const Tensor& t : a[0].tensor_list()) {
               Shape s = shape_vec(t);
               s.insert(s.begin() + d, 1);
               ts.push_back(map_positions(t, s, [&](Shape i) {
                 i.erase(i.begin() + d);
                 return ravel(i, shape_vec(t));
               }));
             }
             return std::vector<Tensor>{cat_ref(ts, d, ts[0].dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({std::vector<Tensor>{zeros({2, 3}), zeros({3, 2})}, 0}, ErrorKind::Shape,
                     "shape mismatch")};
           }});
  register_op_info(
      {.name = "split",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{{{mk({7, 4}, dt, rng), int64_t{3}, int64_t{0}}, "[7,4] by 3"},
                         {{mk({7, 4}, dt, rng, Layout::NonContiguous), int64_t{2}, int64_t{-1}},
                          "by 2 dim -1"},
                         {{mk({0, 4}, dt, rng), int64_t{2}, int64_t{0}}, "zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t d = a[2].to_int() < 0 ? a[2].to_int() + x.dim() : a[2].to_int();
             const int64_t n = x.size(d), k = a[1].to_int();
             Shape sizes;
             if (n == 0) sizes.push_back(0);
             for (int64_t o = 0; o < n; o += k) sizes.push_back(std::min(k, n - o));
             return split_ref(x, d, sizes);
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({4}), int64_t{0}, int64_t{0}}, ErrorKind::Value, "size 0")};
           }});
  register_op_info(
      {.name = "split_with_sizes",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{
                 {{mk({7, 4}, dt, rng), std::vector<int64_t>{2, 0, 5}, int64_t{0}}, "[2,0,5]"},
                 {{mk({3, 4}, dt, rng, Layout::NonContiguous), std::vector<int64_t>{1, 3},
                   int64_t{1}},
                  "dim 1"}};
           },
       .reference =
           [](const Stack& a) {
             return split_ref(a[0].tensor(), a[2].to_int(), a[1].int_list().vec());
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{err({zeros({4}), std::vector<int64_t>{1, 2}, int64_t{0}},
                                               ErrorKind::Value, "wrong sum")};
           }});
  register_op_info({.name = "chunk",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          return Args{
                              {{mk({7, 4}, dt, rng), int64_t{3}, int64_t{0}}, "[7,4] in 3"},
                              {{mk({6}, dt, rng), int64_t{4}, int64_t{0}}, "[6] in 4 -> 3 pieces"},
                              {{mk({0, 2}, dt, rng), int64_t{2}, int64_t{0}}, "zero-size"}};
                        },
                    .reference =
                        [](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          const int64_t n = x.size(a[2].to_int()), c = a[1].to_int();
                          Shape sizes;
                          if (n == 0) sizes.assign(static_cast<size_t>(c), 0);
                          const int64_t step = (n + c - 1) / c;
                          for (int64_t o = 0; o < n; o += step)
                            sizes.push_back(std::min(step, n - o));
                          return split_ref(x, a[2].to_int(), sizes);
                        },
                    .error_cases =
                        [] {
                          return std::vector<ErrorCase>{err({zeros({4}), int64_t{0}, int64_t{0}},
                                                            ErrorKind::Value, "0 chunks")};
                        }});
  register_op_info(
      {.name = "pad",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{
                 {{mk({3, 4}, dt, rng), std::vector<int64_t>{1, 2}, "constant", 1.5},
                  "constant 1.5"},
                 {{mk({4, 5}, dt, rng, Layout::NonContiguous), std::vector<int64_t>{-1, 2, 1, -2},
                   "constant", std::nullopt},
                  "negative crops"},
                 {{mk({2, 3, 5}, dt, rng), std::vector<int64_t>{2, 1, 1, 2}, "reflect",
                   std::nullopt},
                  "reflect"},
                 {{mk({2, 3, 4}, dt, rng, Layout::Expanded), std::vector<int64_t>{1, 3, 0, 2},
                   "replicate", std::nullopt},
                  "replicate"},
                 {{mk({3, 4}, dt, rng), std::vector<int64_t>{1, 2}, "circular", std::nullopt},
                  "circular"},
                 {{mk({0, 4}, dt, rng), std::vector<int64_t>{1, 1}, "constant", std::nullopt},
                  "zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const Shape pad = a[1].int_list().vec();
             const std::string mode = a[2].string();
             const double value = a[3].is_none() ? 0.0 : a[3].to_double();
             Shape shape = shape_vec(x);
             const int64_t np = static_cast<int64_t>(pad.size()) / 2;
             for (int64_t k = 0; k < np; ++k) shape[x.dim() - 1 - k] += pad[2 * k] + pad[2 * k + 1];
             return std::vector<Tensor>{map_positions(
                 x, shape,
                 [&](Shape i) -> int64_t {
                   for (int64_t k = 0; k < np; ++k) {
                     const int64_t d = x.dim() - 1 - k;
                     i[d] = pad_source(mode, i[d], pad[2 * k], x.size(d));
                     if (i[d] < 0) return -1;
                   }
                   return ravel(i, shape_vec(x));
                 },
                 value)};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({3}), std::vector<int64_t>{1}, "constant", std::nullopt},
                     ErrorKind::Value, "odd"),
                 err({zeros({3}), std::vector<int64_t>{3, 0}, "reflect", std::nullopt},
                     ErrorKind::Value, "reflect too big"),
                 err({zeros({3}), std::vector<int64_t>{1, 1}, "wrap", std::nullopt},
                     ErrorKind::Value, "mode"),
                 err({zeros({3}), std::vector<int64_t>{1, 1, 1, 1}, "constant", std::nullopt},
                     ErrorKind::Value, "too many"),
                 err({zeros({3}), std::vector<int64_t>{-2, -2}, "constant", std::nullopt},
                     ErrorKind::Shape, "negative size")};
           }});
  register_op_info(
      {.name = "flip",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{{{mk({3, 4, 5}, dt, rng), std::vector<int64_t>{0, 2}}, "dims 0,2"},
                         {{mk({5, 6}, dt, rng, Layout::NonContiguous), std::vector<int64_t>{-1}},
                          "non-contiguous"},
                         {{mk({}, dt, rng), std::vector<int64_t>{}}, "0-dim"},
                         {{mk({200, 300}, dt, rng), std::vector<int64_t>{0, 1}}, "large"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             Shape dims = a[1].int_list().vec();
             return std::vector<Tensor>{map_positions(x, shape_vec(x), [&](Shape i) {
               for (int64_t d : dims) {
                 d = d < 0 ? d + x.dim() : d;
                 i[d] = x.size(d) - 1 - i[d];
               }
               return ravel(i, shape_vec(x));
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({2, 3}), std::vector<int64_t>{0, -2}}, ErrorKind::Value, "duplicate"),
                 err({zeros({2, 3}), std::vector<int64_t>{2}}, ErrorKind::Index, "out of range")};
           }});
  register_op_info(
      {.name = "roll",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{
                 {{mk({3, 4}, dt, rng), std::vector<int64_t>{1, -6}, std::vector<int64_t>{0, 1}},
                  "two dims"},
                 {{mk({3, 4}, dt, rng, Layout::NonContiguous), std::vector<int64_t>{5},
                   std::vector<int64_t>{}},
                  "flattened"},
                 {{mk({}, dt, rng), std::vector<int64_t>{3}, std::vector<int64_t>{}}, "0-dim"},
                 {{mk({0, 3}, dt, rng), std::vector<int64_t>{2}, std::vector<int64_t>{0}},
                  "zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const Shape shifts = a[1].int_list().vec(), dims = a[2].int_list().vec();
             if (dims.empty()) {
               const int64_t n = x.numel();
               return std::vector<Tensor>{map_positions(x, shape_vec(x), [&](Shape i) {
                 const int64_t p = ravel(i, shape_vec(x));
                 return (((p - shifts[0]) % n) + n) % n;
               })};
             }
             return std::vector<Tensor>{map_positions(x, shape_vec(x), [&](Shape i) {
               for (size_t k = 0; k < dims.size(); ++k) {
                 const int64_t n = x.size(dims[k]);
                 i[dims[k]] = (((i[dims[k]] - shifts[k]) % n) + n) % n;
               }
               return ravel(i, shape_vec(x));
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({2, 3}), std::vector<int64_t>{1, 2}, std::vector<int64_t>{0}},
                     ErrorKind::Value, "mismatch"),
                 err({zeros({2, 3}), std::vector<int64_t>{1, 2}, std::vector<int64_t>{}},
                     ErrorKind::Value, "no dims")};
           }});
  register_op_info(
      {.name = "repeat",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{{{mk({2, 3}, dt, rng), std::vector<int64_t>{2, 1, 3}}, "[2,3] x (2,1,3)"},
                         {{mk({3, 2}, dt, rng, Layout::NonContiguous), std::vector<int64_t>{2, 2}},
                          "non-contiguous"},
                         {{mk({}, dt, rng), std::vector<int64_t>{2, 2}}, "0-dim"},
                         {{mk({2}, dt, rng), std::vector<int64_t>{0, 2}}, "zero repeat"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const Shape reps = a[1].int_list().vec();
             const int64_t lead = static_cast<int64_t>(reps.size()) - x.dim();
             Shape shape;
             for (size_t i = 0; i < reps.size(); ++i)
               shape.push_back(reps[i] *
                               (static_cast<int64_t>(i) < lead ? 1 : int64_t{x.size(i - lead)}));
             return std::vector<Tensor>{map_positions(x, shape, [&](Shape i) {
               Shape s(i.begin() + lead, i.end());
               for (size_t d = 0; d < s.size(); ++d) s[d] %= x.size(d);
               return ravel(s, shape_vec(x));
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({2, 3}), std::vector<int64_t>{2}}, ErrorKind::Shape, "too few"),
                 err({zeros({2}), std::vector<int64_t>{-1}}, ErrorKind::Value, "negative")};
           }});
  for (const char* name : {"tril", "triu"}) {
    const bool lower = std::string(name) == "tril";
    register_op_info(
        {.name = name,
         .samples =
             [](ScalarType dt, std::mt19937_64& rng) {
               return Args{{{mk({4, 5}, dt, rng), int64_t{0}}, "[4,5]"},
                           {{mk({4, 5}, dt, rng), int64_t{1}}, "k=1"},
                           {{mk({5, 3}, dt, rng), int64_t{-2}}, "k=-2"},
                           {{mk({2, 3, 4}, dt, rng, Layout::NonContiguous), int64_t{0}}, "batched"},
                           {{mk({0, 3}, dt, rng), int64_t{0}}, "zero-size"}};
             },
         .reference =
             [lower](const Stack& a) {
               const Tensor& x = a[0].tensor();
               const int64_t k = a[1].to_int();
               return std::vector<Tensor>{map_positions(x, shape_vec(x), [&](Shape i) -> int64_t {
                 const int64_t r = i[i.size() - 2], c = i.back();
                 const bool keep = lower ? c - r <= k : c - r >= k;
                 return keep ? ravel(i, shape_vec(x)) : -1;
               })};
             },
         .error_cases =
             [] {
               return std::vector<ErrorCase>{
                   err({zeros({3}), int64_t{0}}, ErrorKind::Shape, "1-D")};
             }});
  }
  return true;
}();

}  // namespace
}  // namespace kiln::testing
