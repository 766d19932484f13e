// OpInfos for the index ops: index_select, gather, scatter.src, scatter.value, scatter_add,
// nonzero, one_hot, index, index_put_.
#include "src/core/shape.h"
#include "tests/ops/gather_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;
using Args = std::vector<SampleInput>;

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng, Layout l = Layout::Contiguous) {
  return make_tensor(s, dt, rng, -5, 5, l);
}
// Random indices in [0, n) of the given shape and dtype.
Tensor idx(Shape s, int64_t n, std::mt19937_64& rng, ScalarType dt = kInt64) {
  std::vector<int64_t> v(static_cast<size_t>(numel_of(s)));
  for (int64_t& x : v) x = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  return from_vector(v, s).to(dt);
}
ErrorCase err(Stack args, ErrorKind k, std::string d) { return {std::move(args), k, std::move(d)}; }
Tensor ints(std::vector<int64_t> v, Shape s = {}) {
  if (s.empty() && v.size() != 1) s = {static_cast<int64_t>(v.size())};
  return from_vector(v, s);
}

// slot = v, or slot + v (wrapping integers, bool OR, reduced floats through float) with `add`.
template <typename T>
T combine(T slot, T v, bool add) {
  if (!add) return v;
  if constexpr (std::is_same_v<T, bool>) {
    return slot || v;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(slot) + static_cast<U>(v)));
  } else {
    return T(static_cast<double>(slot) + static_cast<double>(v));
  }
}

// Scatter into a copy of self, serially in index order (last write wins; add accumulates).
Tensor scatter_ref(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                   double value, bool add) {
  return visit_dtype(self.dtype(), [&]<typename T>() {
    std::vector<T> out = self.to_vector<T>();
    std::vector<T> sv = src ? src->to_vector<T>() : std::vector<T>{};
    const std::vector<int64_t> iv = int_values(index);
    Shape ishape = shape_vec(index), sshape = shape_vec(self),
          srcshape = src ? shape_vec(*src) : Shape{};
    if (ishape.empty()) ishape = {1};
    if (sshape.empty()) sshape = {1};
    if (src && srcshape.empty()) srcshape = {1};
    const int64_t d = dim < 0 ? dim + static_cast<int64_t>(sshape.size()) : dim;
    for (int64_t p = 0; p < numel_of(ishape); ++p) {
      Shape i = unravel(p, ishape);
      const T v = src ? sv[ravel(i, srcshape)] : cast_value<T>(value);
      i[d] = iv[p];
      const int64_t k = ravel(i, sshape);
      out[k] = combine<T>(out[k], v, add);
    }
    return from_vector(out, shape_vec(self));
  });
}

// Advanced indexing by the NumPy rules, position by position: returns the source flat index
// of every result position (row-major) and the result shape.
std::pair<std::vector<int64_t>, Shape> index_ref_positions(const Tensor& self,
                                                           const std::vector<Tensor>& list) {
  const int64_t nd = self.dim();
  std::vector<std::vector<int64_t>> per_dim(static_cast<size_t>(nd));
  std::vector<Shape> per_shape(static_cast<size_t>(nd));
  std::vector<bool> has(static_cast<size_t>(nd), false);
  int64_t pos = 0;
  for (const Tensor& t : list) {
    if (!t.defined()) {
      ++pos;
      continue;
    }
    if (t.dtype() == kBool) {
      const std::vector<bool> m = t.to_vector<bool>();
      std::vector<std::vector<int64_t>> coords(static_cast<size_t>(t.dim()));
      for (int64_t p = 0; p < t.numel(); ++p) {
        if (!m[p]) continue;
        Shape c = unravel(p, shape_vec(t));
        for (int64_t k = 0; k < t.dim(); ++k) coords[k].push_back(c[k]);
      }
      for (int64_t k = 0; k < t.dim(); ++k) {
        per_dim[pos + k] = coords[k];
        per_shape[pos + k] = {static_cast<int64_t>(coords[k].size())};
        has[pos + k] = true;
      }
      pos += t.dim();
    } else {
      per_dim[pos] = int_values(t);
      per_shape[pos] = shape_vec(t);
      has[pos] = true;
      ++pos;
    }
  }
  std::vector<int64_t> indexed;
  DimVector b;
  for (int64_t d = 0; d < nd; ++d) {
    if (!has[d]) continue;
    b = indexed.empty() ? DimVector(per_shape[d].begin(), per_shape[d].end())
                        : broadcast_shapes("ref", b, per_shape[d]);
    indexed.push_back(d);
  }
  const Shape bshape(b.begin(), b.end());
  const bool adjacent =
      indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  Shape before, after;
  for (int64_t d = 0; d < nd; ++d) {
    if (has[d]) continue;
    (adjacent && d < indexed.front() ? before : after).push_back(d);
  }
  Shape out_shape;
  for (int64_t d : before) out_shape.push_back(self.size(d));
  for (int64_t s : bshape) out_shape.push_back(s);
  for (int64_t d : after) out_shape.push_back(self.size(d));
  std::vector<int64_t> positions;
  for (int64_t p = 0; p < numel_of(out_shape); ++p) {
    const Shape o = unravel(p, out_shape);
    Shape src(static_cast<size_t>(nd), 0);
    size_t k = 0;
    for (int64_t d : before) src[d] = o[k++];
    const Shape bi(o.begin() + k, o.begin() + k + bshape.size());
    k += bshape.size();
    for (int64_t d : after) src[d] = o[k++];
    for (int64_t d : indexed) {
      // Broadcast: align per_shape[d] to the right of bshape.
      const Shape& ps = per_shape[d];
      Shape ii(ps.size());
      for (size_t j = 0; j < ps.size(); ++j) {
        const int64_t bj = bi[bshape.size() - ps.size() + j];
        ii[j] = ps[j] == 1 ? 0 : bj;
      }
      int64_t v = per_dim[d][ps.empty() ? 0 : ravel(ii, ps)];
      src[d] = v < 0 ? v + int64_t{self.size(d)} : v;
    }
    positions.push_back(ravel(src, shape_vec(self)));
  }
  return {positions, out_shape};
}

Args index_samples(ScalarType dt, std::mt19937_64& rng, bool put) {
  Args out;
  auto add = [&](Tensor self, std::vector<Tensor> list, std::string d, Shape vshape) {
    Stack s{self, list};
    if (put) {
      s.emplace_back(mk(vshape, dt, rng));
      s.emplace_back(false);
    }
    out.push_back({s, d});
  };
  add(mk({5, 6, 7}, dt, rng), {Tensor(), ints({-1, 0, 5, 2, 2, 3}, {2, 3})},
      "middle [2,3] with negatives", {5, 2, 3, 7});
  add(mk({5, 6, 7}, dt, rng, Layout::NonContiguous),
      {idx({4}, 5, rng), Tensor(), idx({1}, 7, rng, kUInt32)}, "non-adjacent, uint32", {4, 6});
  add(mk({4, 6}, dt, rng), {idx({3, 1}, 4, rng, kUInt8), idx({2}, 6, rng, kInt32)},
      "broadcast [3,1] with [2]", {3, 2});
  // Bool masks give value-dependent shapes, which Meta cannot run: see index_test.cpp.
  add(mk({4, 6}, dt, rng), {Tensor(), idx({0}, 6, rng)}, "empty index", {});
  if (put) {
    // Duplicates with accumulate.
    Stack s{mk({5, 3}, dt, rng), std::vector<Tensor>{ints({1, 3, 1, 1})}, mk({4, 3}, dt, rng),
            true};
    out.push_back({s, "accumulate duplicates"});
  }
  return out;
}

// float64 samples for the gradient check: None slots, bool masks, broadcast and non-adjacent
// index tensors. index_put_ without accumulate writes each position once (with duplicate
// positions the last write wins and the others' values have no effect, which finite differences
// see and a gradient formula can't).
Args index_grad_samples(std::mt19937_64& rng, bool put) {
  Args out;
  auto t = [&](Shape s, Layout l = Layout::Contiguous) {
    return make_tensor(s, kFloat64, rng, -2, 2, l);
  };
  auto add = [&](Tensor self, std::vector<Tensor> list, Shape vshape, bool acc, std::string d) {
    Stack s{self, list};
    if (put) {
      s.emplace_back(t(vshape));
      s.emplace_back(acc);
    }
    out.push_back({s, std::move(d)});
  };
  add(t({4, 5}), {Tensor(), ints({3, 0, 4})}, {4, 3}, false, "None slot, then [3]");
  add(t({3, 4, 2}, Layout::NonContiguous), {ints({0, 2}), Tensor(), ints({1, 0})}, {2, 4}, false,
      "non-adjacent index tensors");
  add(t({4, 3}), {ints({0, 3, 1}, {3, 1}), ints({2, 0})}, {3, 2}, false,
      "broadcast [3,1] with [2]");
  const Tensor mask =
      from_vector(std::vector<int64_t>{1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}, Shape{3, 4}).to(kBool);
  add(t({3, 4}), {mask}, {1}, false, "bool mask [3,4], broadcast value");
  add(t({3, 4, 2}), {Tensor(), from_vector(std::vector<int64_t>{1, 0, 1, 1}).to(kBool)}, {3, 3, 2},
      false, "None slot, then a bool mask");
  if (put) {
    add(t({5, 3}), {ints({1, 3, 1, 1})}, {4, 3}, true, "accumulate duplicates");
    add(t({4, 2}), {ints({2, 0, 2})}, {2}, true, "accumulate, broadcast values");
  } else {
    add(t({5, 3}), {ints({1, 3, 1, 1})}, {}, false, "duplicates");
  }
  return out;
}

std::vector<ErrorCase> index_errors(bool put) {
  auto args = [&](std::vector<Tensor> list) {
    Stack s{zeros({3, 4}), list};
    if (put) {
      s.emplace_back(zeros({}));
      s.emplace_back(false);
    }
    return s;
  };
  return {
      err(args({ints({3})}), ErrorKind::Index, "index 3 of size 3"),
      err(args({ints({-4})}), ErrorKind::Index, "index -4 of size 3"),
      err(args({from_vector(std::vector<uint64_t>{UINT64_MAX})}), ErrorKind::Index, "huge uint64"),
      err(args({zeros({2, 4}, kBool)}), ErrorKind::Index, "mask shape"),
      err(args({zeros({2}, kFloat32)}), ErrorKind::Index, "float index"),
      err(args({ints({0}), ints({0}), ints({0})}), ErrorKind::Index, "too many"),
      err(args({ints({0, 1}), ints({0, 1, 2})}), ErrorKind::Index, "broadcast mismatch")};
}

const bool registered = [] {
  register_op_info(
      {.name = "index_select",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{{{mk({5, 4}, dt, rng), int64_t{0}, ints({4, 0, 0, 2})}, "dim 0"},
                         {{mk({5, 4}, dt, rng, Layout::NonContiguous), int64_t{-1},
                           idx({6}, 4, rng, kUInt8)},
                          "uint8 dim -1"},
                         {{mk({5, 4}, dt, rng), int64_t{1}, ints({3})}, "0-dim index"},
                         {{mk({5, 4}, dt, rng), int64_t{1}, idx({0}, 4, rng)}, "empty index"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t d = a[1].to_int() < 0 ? a[1].to_int() + x.dim() : a[1].to_int();
             const std::vector<int64_t> iv = int_values(a[2].tensor());
             Shape shape = shape_vec(x);
             shape[d] = static_cast<int64_t>(iv.size());
             return std::vector<Tensor>{map_positions(x, shape, [&](Shape i) {
               i[d] = iv[i[d]];
               return ravel(i, shape_vec(x));
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({3}), int64_t{0}, ints({3})}, ErrorKind::Index, "oob"),
                 err({zeros({3}), int64_t{0}, ints({-1})}, ErrorKind::Index, "negative"),
                 err({zeros({3}), int64_t{0}, zeros({1, 1}, kInt64)}, ErrorKind::Index,
                     "2-D index"),
                 err({zeros({3}), int64_t{0}, zeros({1})}, ErrorKind::DType, "float index")};
           }});
  register_op_info(
      {.name = "gather",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{{{mk({4, 5}, dt, rng), int64_t{1}, idx({4, 3}, 5, rng)}, "dim 1"},
                         {{mk({4, 5}, dt, rng, Layout::NonContiguous), int64_t{0},
                           idx({6, 2}, 4, rng, kUInt16)},
                          "dim 0 uint16"},
                         {{mk({}, dt, rng), int64_t{0}, ints({0})}, "0-dim"},
                         {{mk({4, 5}, dt, rng), int64_t{1}, idx({0, 3}, 5, rng)}, "zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const Tensor& index = a[2].tensor();
             const std::vector<int64_t> iv = int_values(index);
             Shape xs = shape_vec(x);
             if (xs.empty()) xs = {1};
             Shape is = shape_vec(index);
             return std::vector<Tensor>{map_positions(x, is, [&](Shape i) {
               if (i.empty()) i = {0};
               const int64_t p = ravel(i, is.empty() ? Shape{1} : is);
               i[a[1].to_int()] = iv[p];
               return ravel(i, xs);
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({3, 2}), int64_t{0}, ints({3, 0}, {1, 2})}, ErrorKind::Index, "oob"),
                 err({zeros({3, 2}), int64_t{0}, ints({0})}, ErrorKind::Shape, "rank"),
                 err({zeros({3, 2}), int64_t{0}, ints({0, 0, 0}, {1, 3})}, ErrorKind::Shape,
                     "index too large")};
           }});
  for (const char* name : {"scatter.src", "scatter.value", "scatter_add"}) {
    const std::string n = name;
    // float64 samples; scatter without add writes each position once (a duplicate's value would
    // be overwritten, which finite differences see and a gradient formula can't).
    auto grad_samples = [n](std::mt19937_64& rng) {
      auto last = [&](Shape s) -> IValue {
        if (n == "scatter.value") return Scalar(2);
        return mk(s, kFloat64, rng);
      };
      return Args{
          {{mk({3, 4}, kFloat64, rng), int64_t{1}, ints({0, 2, 3, 1, 1, 0}, {3, 2}), last({3, 3})},
           "dim 1, src larger than the index"},
          {{mk({4, 2}, kFloat64, rng, Layout::NonContiguous), int64_t{0},
            ints({2, 0, 0, 3, 1, 1}, {3, 2}), last({3, 2})},
           "dim 0, non-contiguous"},
          {{mk({4}, kFloat64, rng), int64_t{-1}, ints({3, 1}, {2}), last({2})}, "1-D"},
          {{mk({}, kFloat64, rng), int64_t{0}, ints({0}), last({})}, "0-dim"}};
    };
    register_op_info(
        {.name = name,
         .samples =
             [n](ScalarType dt, std::mt19937_64& rng) {
               auto last = [&](Shape s) -> IValue {
                 if (n == "scatter.value") return Scalar(2);
                 return mk(s, dt, rng);
               };
               return Args{
                   {{mk({4, 5}, dt, rng), int64_t{1}, idx({3, 4}, 5, rng), last({4, 6})}, "dim 1"},
                   {{mk({4, 5}, dt, rng, Layout::NonContiguous), int64_t{0},
                     idx({6, 2}, 4, rng, kUInt8), last({6, 2})},
                    "dim 0 duplicates"},
                   {{mk({}, dt, rng), int64_t{0}, ints({0}), last({})}, "0-dim"},
                   {{mk({4, 5}, dt, rng), int64_t{1}, idx({0, 3}, 5, rng), last({0, 3})},
                    "zero-size"}};
             },
         .reference =
             [n](const Stack& a) {
               const Tensor* src = a[3].is_tensor() ? &a[3].tensor() : nullptr;
               return std::vector<Tensor>{scatter_ref(a[0].tensor(), a[1].to_int(), a[2].tensor(),
                                                      src, src ? 0 : a[3].scalar().to_double(),
                                                      n == "scatter_add")};
             },
         .error_cases =
             [n] {
               auto last = [&](Shape s, ScalarType dt = kFloat32) -> IValue {
                 if (n == "scatter.value") return Scalar(1);
                 return zeros(s, dt);
               };
               std::vector<ErrorCase> e{
                   err({zeros({3, 2}), int64_t{0}, ints({3, 0}, {1, 2}), last({1, 2})},
                       ErrorKind::Index, "oob"),
                   err({zeros({3, 2}), int64_t{0}, ints({0}), last({1})}, ErrorKind::Shape,
                       "rank")};
               if (n != "scatter.value")
                 e.push_back(
                     err({zeros({3, 2}), int64_t{0}, ints({0, 0}, {1, 2}), last({1, 2}, kInt64)},
                         ErrorKind::DType, "src dtype"));
               return e;
             },
         .grad_samples = grad_samples});
  }
  register_op_info(
      {.name = "nonzero",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return unary_samples(dt, rng, -1, 1); },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const std::vector<double> v = x.to_vector<double>();
             std::vector<int64_t> out;
             int64_t n = 0;
             for (size_t p = 0; p < v.size(); ++p) {
               if (v[p] == 0) continue;
               for (int64_t c : unravel(static_cast<int64_t>(p), shape_vec(x))) out.push_back(c);
               ++n;
             }
             return std::vector<Tensor>{from_vector(out, Shape{n, x.dim()})};
           }});
  register_op_info(
      {.name = "masked_select",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             const Tensor rows = tensor({1, 0, 1}).ne(0);
             return Args{{{make_tensor({2, 3}, dt, rng, -3, 3), rows}, "broadcast mask"},
                         {{make_tensor({3}, dt, rng, -3, 3), zeros({2, 3}).ne(0)}, "none"},
                         {{make_tensor({0, 3}, dt, rng, -3, 3), rows}, "zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const Tensor& m = a[1].tensor();
             const SymDimVector shape = sym_broadcast_shapes("ref", x.sym_sizes(), m.sym_sizes());
             const std::vector<double> v = x.expand(shape).contiguous().to_vector<double>();
             const std::vector<bool> keep = m.expand(shape).contiguous().to_vector<bool>();
             std::vector<double> out;
             for (size_t p = 0; p < v.size(); ++p)
               if (keep[p]) out.push_back(v[p]);
             return std::vector<Tensor>{
                 from_vector(out, Shape{static_cast<int64_t>(out.size())}).to(x.dtype())};
           },
       .grad_samples =
           [](std::mt19937_64& rng) {
             return Args{{{make_tensor({2, 3}, kFloat64, rng, -2, 2), tensor({1, 0, 1}).ne(0)},
                          "broadcast mask"}};
           }});
  register_op_info(
      {.name = "one_hot",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return Args{{{make_tensor({2, 3}, dt, rng, 0, 4), int64_t{6}}, "6 classes"},
                         {{make_tensor({5}, dt, rng, 0, 4, Layout::NonContiguous), int64_t{5}},
                          "non-contiguous"},
                         {{make_tensor({0}, dt, rng, 0, 4), int64_t{3}}, "zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const std::vector<int64_t> v = int_values(x);
             int64_t c = a[1].to_int();
             if (c == -1) c = *std::max_element(v.begin(), v.end()) + 1;
             std::vector<int64_t> out;
             for (int64_t e : v)
               for (int64_t k = 0; k < c; ++k) out.push_back(k == e);
             Shape s = shape_vec(x);
             s.push_back(c);
             return std::vector<Tensor>{from_vector(out, s)};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({ints({0, 3}), int64_t{3}}, ErrorKind::Index, "value >= classes"),
                 err({ints({0, -1}), int64_t{3}}, ErrorKind::Index, "negative value"),
                 err({ints({0}), int64_t{-2}}, ErrorKind::Value, "bad num_classes"),
                 err({zeros({0}, kInt64), int64_t{-1}}, ErrorKind::Value, "cannot infer")};
           }});
  register_op_info(
      {.name = "index",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return index_samples(dt, rng, false); },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             // Named copies, not a structured binding: clang 14 cannot capture bindings in lambdas.
             auto ref_positions = index_ref_positions(x, a[1].tensor_list());
             auto& pos = ref_positions.first;
             auto& shape = ref_positions.second;
             size_t k = 0;
             return std::vector<Tensor>{
                 map_positions(x, shape, [&](const Shape&) { return pos[k++]; })};
           },
       .error_cases = [] { return index_errors(false); },
       .grad_samples = [](std::mt19937_64& rng) { return index_grad_samples(rng, false); }});
  register_op_info(
      {.name = "index_put_",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return index_samples(dt, rng, true); },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             // Named copies, not a structured binding: clang 14 cannot capture bindings in lambdas.
             auto ref_positions = index_ref_positions(x, a[1].tensor_list());
             auto& pos = ref_positions.first;
             auto& shape = ref_positions.second;
             const bool acc = a[3].to_bool();
             return visit_dtype(x.dtype(), [&]<typename T>() {
               std::vector<T> out = x.to_vector<T>();
               const std::vector<T> v = a[2].tensor().expand(shape).to_vector<T>();
               for (size_t p = 0; p < pos.size(); ++p) {
                 out[pos[p]] = combine<T>(out[pos[p]], v[p], acc);
               }
               return std::vector<Tensor>{from_vector(out, shape_vec(x))};
             });
           },
       .error_cases =
           [] {
             std::vector<ErrorCase> e = index_errors(true);
             e.push_back(err({zeros({3, 4}), std::vector<Tensor>{ints({0, 1})}, zeros({3}), false},
                             ErrorKind::Shape, "values do not broadcast"));
             return e;
           },
       .grad_samples = [](std::mt19937_64& rng) { return index_grad_samples(rng, true); }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
