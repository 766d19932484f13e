// OpInfos for view ops. References gather values by explicit index arithmetic on the input's
// row-major values, so they never use the view machinery under test.
#include "src/core/shape.h"
#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

using Index = std::vector<int64_t>;
using IndexMap = std::function<Index(const Index& out_index)>;

// out[idx] = x[map(idx)] for every idx in out_shape.
Tensor gather_reference(const Tensor& x, const Index& out_shape, const IndexMap& map) {
  return visit_dtype(x.dtype(), [&]<typename T>() {
    std::vector<T> in = x.to_vector<T>();
    std::vector<T> out;
    int64_t n = 1;
    for (int64_t s : out_shape) n *= s;
    Index idx(out_shape.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i;
      for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1; d >= 0; --d) {
        idx[d] = rest % out_shape[d];
        rest /= out_shape[d];
      }
      Index src = map(idx);
      int64_t linear = 0;
      for (int64_t d = 0; d < x.dim(); ++d) linear = linear * x.size(d) + src[d];
      out.push_back(in[static_cast<size_t>(linear)]);
    }
    return from_vector(out, out_shape);
  });
}

Index shape_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

const bool registered = [] {
  register_op_info(
      {.name = "view",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({2, 3, 4}, dt, rng), std::vector<int64_t>{6, -1}},
                  "[2,3,4] -> [6,-1]"},
                 {{make_tensor({2, 3, 4}, dt, rng).transpose(0, 1),
                   std::vector<int64_t>{3, 2, 2, 2}},
                  "split last dim of a transposed tensor"},
                 {{make_tensor({0, 4}, dt, rng), std::vector<int64_t>{4, 0}}, "zero-size"},
                 {{make_tensor({}, dt, rng), std::vector<int64_t>{1, 1}}, "0-dim to [1, 1]"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             Index shape = a[1].int_list().vec();
             int64_t known = 1;
             for (int64_t s : shape) known *= s == -1 ? 1 : s;
             for (int64_t& s : shape)
               if (s == -1) s = x.numel() / known;
             return std::vector<Tensor>{visit_dtype(
                 x.dtype(), [&]<typename T>() { return from_vector(x.to_vector<T>(), shape); })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), std::vector<int64_t>{4}}, ErrorKind::Shape, "wrong numel"},
                 {{zeros({2, 3}), std::vector<int64_t>{-1, -1}}, ErrorKind::Shape, "two -1"},
                 {{zeros({2, 3}).t(), std::vector<int64_t>{6}},
                  ErrorKind::Shape,
                  "incompatible strides"}};
           }});
  register_op_info(
      {.name = "reshape",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({3, 4}, dt, rng).t(), std::vector<int64_t>{12}},
                  "transposed -> flat (copies)"},
                 {{make_tensor({3, 4}, dt, rng), std::vector<int64_t>{2, -1}}, "view path"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             Index shape = a[1].int_list().vec();
             for (int64_t& s : shape)
               if (s == -1) s = x.numel() / 2;
             return std::vector<Tensor>{visit_dtype(
                 x.dtype(), [&]<typename T>() { return from_vector(x.to_vector<T>(), shape); })};
           }});
  register_op_info(
      {.name = "permute",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({2, 3, 4}, dt, rng), std::vector<int64_t>{2, 0, -2}}, "[2,0,1]"},
                 {{make_tensor({}, dt, rng), std::vector<int64_t>{}}, "0-dim"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             Index dims = a[1].int_list().vec();
             for (int64_t& d : dims) d = d < 0 ? d + x.dim() : d;
             Index shape;
             for (int64_t d : dims) shape.push_back(x.size(d));
             return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
               Index src(o.size());
               for (size_t i = 0; i < dims.size(); ++i) src[dims[i]] = o[i];
               return src;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), std::vector<int64_t>{0}}, ErrorKind::Shape, "too few dims"},
                 {{zeros({2, 3}), std::vector<int64_t>{0, 0}}, ErrorKind::Value, "repeated dim"},
                 {{zeros({2, 3}), std::vector<int64_t>{0, 2}},
                  ErrorKind::Index,
                  "dim out of range"}};
           }});
  register_op_info(
      {.name = "transpose",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({2, 3, 4}, dt, rng), int64_t{0}, int64_t{-1}}, "0 <-> -1"},
                 {{make_tensor({}, dt, rng), int64_t{0}, int64_t{-1}}, "0-dim"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             if (x.dim() == 0)
               return std::vector<Tensor>{
                   gather_reference(x, {}, [](const Index& o) { return o; })};
             int64_t d0 = 0, d1 = x.dim() - 1;
             Index shape = shape_of(x);
             std::swap(shape[d0], shape[d1]);
             return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
               Index src = o;
               std::swap(src[d0], src[d1]);
               return src;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), int64_t{0}, int64_t{2}}, ErrorKind::Index, "dim out of range"}};
           }});
  register_op_info(
      {.name = "slice",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({5, 6}, dt, rng), int64_t{1}, int64_t{1}, int64_t{-1}, int64_t{2}},
                  "[:, 1:-1:2]"},
                 {{make_tensor({5, 6}, dt, rng), int64_t{0}, IValue(), int64_t{100}, int64_t{1}},
                  "clamped end"},
                 {{make_tensor({5, 6}, dt, rng), int64_t{0}, int64_t{4}, int64_t{2}, int64_t{1}},
                  "empty"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t d = a[1].to_int();
             const int64_t size = x.size(d);
             auto bound = [&](const IValue& v, int64_t dflt) {
               if (v.is_none()) return dflt;
               int64_t b = v.to_int() < 0 ? v.to_int() + size : v.to_int();
               return std::clamp<int64_t>(b, 0, size);
             };
             const int64_t start = bound(a[2], 0), end = std::max(start, bound(a[3], size));
             const int64_t step = a[4].to_int();
             Index shape = shape_of(x);
             shape[d] = (end - start + step - 1) / step;
             return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
               Index src = o;
               src[d] = start + o[d] * step;
               return src;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), int64_t{0}, int64_t{0}, int64_t{2}, int64_t{0}},
                  ErrorKind::Value,
                  "zero step"},
                 {{zeros({2, 3}), int64_t{5}, int64_t{0}, int64_t{2}, int64_t{1}},
                  ErrorKind::Index,
                  "bad dim"}};
           }});
  register_op_info(
      {.name = "select",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({4, 5}, dt, rng), int64_t{1}, int64_t{-2}}, "[:, -2]"},
                 {{make_tensor({4}, dt, rng, -5, 5, Layout::NonContiguous), int64_t{0}, int64_t{3}},
                  "strided"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t d = a[1].to_int();
             int64_t i = a[2].to_int();
             if (i < 0) i += x.size(d);
             Index shape = shape_of(x);
             shape.erase(shape.begin() + d);
             return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
               Index src = o;
               src.insert(src.begin() + d, i);
               return src;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), int64_t{1}, int64_t{3}}, ErrorKind::Index, "index 3 of size 3"},
                 {{zeros({2, 3}), int64_t{1}, int64_t{-4}}, ErrorKind::Index, "index -4"},
                 {{zeros({}), int64_t{0}, int64_t{0}}, ErrorKind::Index, "0-dim"}};
           }});
  register_op_info(
      {.name = "expand",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({3, 1}, dt, rng), std::vector<int64_t>{2, 3, 4}},
                  "[3,1] -> [2,3,4]"},
                 {{make_tensor({3, 1}, dt, rng), std::vector<int64_t>{-1, 0}}, "to zero-size"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             Index target = a[1].int_list().vec();
             const int64_t lead = static_cast<int64_t>(target.size()) - x.dim();
             for (int64_t i = 0; i < x.dim(); ++i)
               if (target[lead + i] == -1) target[lead + i] = x.size(i);
             return std::vector<Tensor>{gather_reference(x, target, [&](const Index& o) {
               Index src;
               for (int64_t i = 0; i < x.dim(); ++i)
                 src.push_back(x.size(i) == 1 ? 0 : o[lead + i]);
               return src;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), std::vector<int64_t>{3}}, ErrorKind::Shape, "fewer dims"},
                 {{zeros({2, 3}), std::vector<int64_t>{4, 3}}, ErrorKind::Shape, "2 -> 4"}};
           }});
  auto squeeze_ref = [](const Stack& a) {
    const Tensor& x = a[0].tensor();
    std::optional<int64_t> only;
    if (a.size() > 1) only = a[1].to_int() < 0 ? a[1].to_int() + x.dim() : a[1].to_int();
    Index shape, kept;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (x.size(d) == 1 && (!only || *only == d)) continue;
      shape.push_back(x.size(d));
      kept.push_back(d);
    }
    return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
      Index src(static_cast<size_t>(x.dim()), 0);
      for (size_t i = 0; i < kept.size(); ++i) src[kept[i]] = o[i];
      return src;
    })};
  };
  register_op_info({.name = "squeeze",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          return std::vector<SampleInput>{
                              {{make_tensor({1, 3, 1, 2}, dt, rng)}, "[1,3,1,2]"},
                              {{make_tensor({}, dt, rng)}, "0-dim"}};
                        },
                    .reference = squeeze_ref});
  register_op_info({.name = "squeeze.dim",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          return std::vector<SampleInput>{
                              {{make_tensor({1, 3, 1, 2}, dt, rng), int64_t{-2}}, "dim -2"},
                              {{make_tensor({1, 3}, dt, rng), int64_t{1}}, "not size 1"}};
                        },
                    .reference = squeeze_ref});
  register_op_info(
      {.name = "unsqueeze",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({3, 2}, dt, rng), int64_t{-1}}, "at end"},
                 {{make_tensor({3, 2}, dt, rng).t(), int64_t{1}}, "middle of transposed"},
                 {{make_tensor({}, dt, rng), int64_t{0}}, "0-dim"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             int64_t d = a[1].to_int();
             if (d < 0) d += x.dim() + 1;
             Index shape = shape_of(x);
             shape.insert(shape.begin() + d, 1);
             return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
               Index src = o;
               src.erase(src.begin() + d);
               return src;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), int64_t{3}}, ErrorKind::Index, "dim 3"}};
           }});
  register_op_info(
      {.name = "as_strided",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({12}, dt, rng), std::vector<int64_t>{3, 3},
                   std::vector<int64_t>{3, 1}, int64_t{2}},
                  "overlapping-free window"},
                 {{make_tensor({12}, dt, rng), std::vector<int64_t>{4, 3},
                   std::vector<int64_t>{2, 1}, IValue()},
                  "overlapping rows"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             Index sizes = a[1].int_list().vec(), strides = a[2].int_list().vec();
             const int64_t off = a[3].is_none() ? 0 : a[3].to_int();
             return std::vector<Tensor>{gather_reference(x, sizes, [&](const Index& o) {
               int64_t lin = off;
               for (size_t i = 0; i < o.size(); ++i) lin += o[i] * strides[i];
               return Index{lin};
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({4}), std::vector<int64_t>{3, 3}, std::vector<int64_t>{3, 1}, IValue()},
                  ErrorKind::Index,
                  "beyond storage"},
                 {{zeros({4}), std::vector<int64_t>{2}, std::vector<int64_t>{1, 1}, IValue()},
                  ErrorKind::Shape,
                  "rank mismatch"}};
           }});
  register_op_info(
      {.name = "diagonal",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({4, 5}, dt, rng), int64_t{1}, int64_t{0}, int64_t{1}}, "offset 1"},
                 {{make_tensor({2, 4, 3}, dt, rng), int64_t{-1}, int64_t{1}, int64_t{2}},
                  "batched, offset -1"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t off = a[1].to_int(), d1 = a[2].to_int(), d2 = a[3].to_int();
             Index shape, rest;
             for (int64_t d = 0; d < x.dim(); ++d)
               if (d != d1 && d != d2) {
                 shape.push_back(x.size(d));
                 rest.push_back(d);
               }
             const int64_t len = off >= 0 ? std::min(x.size(d1), x.size(d2) - off)
                                          : std::min(x.size(d1) + off, x.size(d2));
             shape.push_back(std::max<int64_t>(len, 0));
             return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
               Index src(static_cast<size_t>(x.dim()));
               for (size_t i = 0; i < rest.size(); ++i) src[rest[i]] = o[i];
               const int64_t k = o.back();
               src[d1] = off >= 0 ? k : k - off;
               src[d2] = off >= 0 ? k + off : k;
               return src;
             })};
           }});
  register_op_info(
      {.name = "unfold",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             return std::vector<SampleInput>{
                 {{make_tensor({3, 7}, dt, rng), int64_t{1}, int64_t{3}, int64_t{2}},
                  "windows of 3 step 2"}};
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const int64_t d = a[1].to_int(), size = a[2].to_int(), step = a[3].to_int();
             Index shape = shape_of(x);
             shape[d] = (x.size(d) - size) / step + 1;
             shape.push_back(size);
             return std::vector<Tensor>{gather_reference(x, shape, [&](const Index& o) {
               Index src(o.begin(), o.end() - 1);
               src[d] = o[d] * step + o.back();
               return src;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{{{zeros({3, 7}), int64_t{1}, int64_t{8}, int64_t{1}},
                                            ErrorKind::Value,
                                            "window too big"},
                                           {{zeros({3, 7}), int64_t{1}, int64_t{2}, int64_t{0}},
                                            ErrorKind::Value,
                                            "zero step"}};
           }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
