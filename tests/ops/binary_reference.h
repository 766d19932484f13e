// Samples and references shared by the binary OpInfos (binary_opinfo.cpp,
// binary_compare_opinfo.cpp). References never call a binary op: operands are read element by
// element (to_vector, cast_value) and combined in exact 128-bit integer arithmetic or float64.
#pragma once

#include <cmath>
#include <functional>

#include "src/core/cast.h"
#include "src/core/promotion.h"
#include "src/core/shape.h"
#include "tests/ops/harness.h"

namespace kiln::testing::binary {

using I128 = __int128;
using U128 = unsigned __int128;

// Draws a tensor of `shape` (the harness's layouts) with values from `draw`.
using Maker =
    std::function<Tensor(IntArrayRef shape, ScalarType dt, std::mt19937_64& rng, Layout layout)>;
using Draw = std::function<double(ScalarType dt, std::mt19937_64& rng)>;

inline Tensor make_from(IntArrayRef shape, ScalarType dt, std::mt19937_64& rng, Layout layout,
                        const Draw& draw) {
  std::vector<int64_t> sizes(shape.begin(), shape.end());
  if (layout == Layout::Expanded && !sizes.empty()) {
    std::vector<int64_t> one = sizes;
    one[0] = 1;
    return make_from(one, dt, rng, Layout::Contiguous, draw).expand(sizes);
  }
  std::vector<int64_t> alloc = sizes;
  if (layout == Layout::NonContiguous && !alloc.empty()) alloc.back() *= 2;
  int64_t n = 1;
  for (int64_t s : alloc) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = draw(dt, rng);
  Tensor t = from_vector(v, alloc).to(dt);
  if (layout == Layout::NonContiguous && !sizes.empty())
    t = t.slice(static_cast<int64_t>(sizes.size()) - 1, 0, std::nullopt, 2);
  return t;
}

inline Maker from_draw(Draw draw) {
  return [draw](IntArrayRef shape, ScalarType dt, std::mt19937_64& rng, Layout layout) {
    return make_from(shape, dt, rng, layout, draw);
  };
}

// Default operands: small values, and values near the top of unsigned types (wrap-around).
inline Tensor plain(IntArrayRef shape, ScalarType dt, std::mt19937_64& rng, Layout layout) {
  return make_tensor(shape, dt, rng, -5, 5, layout, /*full_range=*/true);
}
inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
inline double uniform_int(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return static_cast<double>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
}
// Divisors: never zero; negative too for signed and floating dtypes.
inline double nonzero(ScalarType dt, std::mt19937_64& rng) {
  const double sign = (is_unsigned(dt) || (rng() & 1)) ? 1.0 : -1.0;
  return sign * (is_floating(dt) ? uniform(rng, 0.5, 5) : uniform_int(rng, 1, 5));
}

// A tensor of `dt` paired with one of another dtype that promotes with it (never uint64 with
// a signed type), for the mixed-dtype samples.
inline ScalarType partner_dtype(ScalarType dt) {
  switch (dt) {
    case kBool:
      return kInt32;
    case kUInt8:
      return kInt8;  // -> int16
    case kUInt16:
      return kUInt8;
    case kUInt32:
      return kInt16;  // -> int64
    case kUInt64:
      return kUInt8;
    case kInt8:
      return kUInt8;  // -> int16
    case kInt16:
      return kInt64;
    case kInt32:
      return kBool;
    case kInt64:
      return kUInt32;
    case kFloat16:
      return kBFloat16;  // -> float32
    case kBFloat16:
      return kInt32;
    case kFloat32:
      return kFloat64;
    case kFloat64:
      return kInt64;
  }
  return dt;
}

// Tensor-Tensor samples: the harness's shapes, plus a mixed-dtype pair and a 0-dim operand of
// another dtype. `tail` is appended to each (alpha, rounding mode).
inline std::vector<SampleInput> pair_samples(ScalarType dt, std::mt19937_64& rng, const Maker& ma,
                                             const Maker& mb, const Stack& tail,
                                             bool mixed = true) {
  auto C = Layout::Contiguous;
  std::vector<SampleInput> s;
  auto add = [&](Tensor a, Tensor b, std::string d) {
    Stack args{a, b};
    for (const IValue& v : tail) args.push_back(v);
    s.push_back({std::move(args), std::move(d)});
  };
  add(ma({5, 7}, dt, rng, C), mb({5, 7}, dt, rng, C), "[5, 7] with [5, 7]");
  add(ma({3, 1}, dt, rng, C), mb({1, 4}, dt, rng, C), "broadcast [3, 1] with [1, 4]");
  add(ma({}, dt, rng, C), mb({2, 3}, dt, rng, C), "0-dim with [2, 3]");
  add(ma({2, 3}, dt, rng, C), mb({}, dt, rng, C), "[2, 3] with 0-dim");
  add(ma({}, dt, rng, C), mb({}, dt, rng, C), "0-dim with 0-dim");
  add(ma({0, 3}, dt, rng, C), mb({3}, dt, rng, C), "zero-size [0, 3] with [3]");
  add(ma({4, 6}, dt, rng, Layout::NonContiguous), mb({6, 4}, dt, rng, C).t(),
      "non-contiguous [4, 6] with transposed");
  add(ma({4, 3}, dt, rng, Layout::Expanded), mb({4, 3}, dt, rng, C), "expanded [4, 3] with [4, 3]");
  add(ma({100, 400}, dt, rng, C), mb({400}, dt, rng, C), "large [100, 400] with [400]");
  add(ma({100, 400}, dt, rng, C), mb({100, 400}, dt, rng, C), "large [100, 400] contiguous");
  if (mixed) {
    const ScalarType p = partner_dtype(dt);
    add(ma({3, 4}, dt, rng, C), mb({3, 4}, p, rng, C),
        "[3, 4] with [3, 4] of " + std::string(dtype_name(p)));
    add(ma({3, 4}, dt, rng, C), mb({}, p, rng, C),
        "[3, 4] with 0-dim " + std::string(dtype_name(p)));
    if (p != kBool)  // bool as the first operand is refused by ops without bool support
      add(ma({}, p, rng, C), mb({3, 4}, dt, rng, C),
          "0-dim " + std::string(dtype_name(p)) + " with [3, 4]");
  }
  return s;
}

// Tensor-Scalar samples for the ".Scalar" entries.
inline std::vector<SampleInput> scalar_samples(ScalarType dt, std::mt19937_64& rng, const Maker& ma,
                                               const std::vector<Scalar>& scalars,
                                               const Stack& tail) {
  std::vector<SampleInput> s;
  for (const Scalar& v : scalars) {
    for (auto [shape, layout, d] :
         {std::tuple{std::vector<int64_t>{5, 7}, Layout::Contiguous, "[5, 7]"},
          std::tuple{std::vector<int64_t>{}, Layout::Contiguous, "0-dim"},
          std::tuple{std::vector<int64_t>{0, 2}, Layout::Contiguous, "zero-size"},
          std::tuple{std::vector<int64_t>{4, 6}, Layout::NonContiguous, "non-contiguous [4, 6]"},
          std::tuple{std::vector<int64_t>{200, 300}, Layout::Contiguous, "large [200, 300]"}}) {
      Stack args{ma(shape, dt, rng, layout), v};
      for (const IValue& x : tail) args.push_back(x);
      s.push_back({std::move(args), std::string(d) + " with Scalar " + v.str()});
    }
  }
  return s;
}

// ---- references ----

inline DimVector ref_shape(const Stack& a) {
  const Tensor& x = a[0].tensor();
  if (!a[1].is_tensor()) return DimVector(x.sizes().begin(), x.sizes().end());
  return broadcast_shapes("reference", x.sizes(), a[1].tensor().sizes());
}
inline std::vector<int64_t> vec(const DimVector& d) { return {d.begin(), d.end()}; }

inline ScalarType ref_promoted(const Stack& a) {
  ResultTypeBuilder b("reference");
  b.add(a[0].tensor());
  if (a[1].is_tensor()) {
    b.add(a[1].tensor());
  } else {
    b.add(a[1].scalar());
  }
  return b.result();
}

// Operand i's values broadcast to `shape`, converted to C.
template <typename C>
std::vector<C> values_as(const IValue& v, const DimVector& shape) {
  if (v.is_tensor()) return v.tensor().expand(shape).to_vector<C>();
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return std::vector<C>(static_cast<size_t>(n), v.scalar().to<C>());
}

// Operand values as exact integers (integer or bool operands only).
inline std::vector<I128> exact_values(const IValue& v, const DimVector& shape) {
  if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    return visit_dtype(t.dtype(), [&]<typename T>() {
      std::vector<I128> out;
      if constexpr (!is_floating_v<T>) {
        for (T x : t.expand(shape).to_vector<T>()) out.push_back(static_cast<I128>(x));
      }
      return out;
    });
  }
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const Scalar& s = v.scalar();
  const I128 x = s.kind() == Scalar::Kind::UInt ? static_cast<I128>(s.to_uint64())
                                                : static_cast<I128>(s.to_int64());
  return std::vector<I128>(static_cast<size_t>(n), x);
}

// Converts an exact result to T modulo 2^bits (bool: nonzero).
template <typename T>
T wrap(I128 v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(static_cast<U128>(v));
  }
}

// The reference of a binary op computing in `compute` and writing `out`: int_fn(T x, T y)
// (T the compute dtype's C++ type, for integer and bool compute dtypes) or float_fn(double,
// double) for floating ones.
template <typename IntFn, typename FloatFn>
Tensor reference(const Stack& a, ScalarType compute, ScalarType out, IntFn int_fn,
                 FloatFn float_fn) {
  const DimVector shape = ref_shape(a);
  return visit_dtype(compute, [&]<typename C>() -> Tensor {
    const std::vector<C> x = values_as<C>(a[0], shape), y = values_as<C>(a[1], shape);
    if constexpr (is_floating_v<C>) {
      using R = decltype(float_fn(0.0, 0.0));
      std::vector<R> r(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        r[i] = float_fn(cast_value<double>(x[i]), cast_value<double>(y[i]));
      return from_vector(r, vec(shape)).to(out);
    } else {
      using R = decltype(int_fn(C{}, C{}));
      std::vector<R> r(x.size());
      for (size_t i = 0; i < x.size(); ++i) r[i] = int_fn(x[i], y[i]);
      return from_vector(r, vec(shape)).to(out);
    }
  });
}

// Integer inputs may give floating outputs (div, atan2, int * 2.5): those compare with float32's
// tolerance; integer outputs are always compared exactly.
inline std::pair<double, double> tolerance(ScalarType dt) {
  return default_tolerance(is_floating(dt) ? dt : kFloat32);
}

inline void register_binary(OpInfo info) {
  if (!info.tolerance) info.tolerance = tolerance;
  register_op_info(std::move(info));
}

inline Stack tail_of(std::initializer_list<IValue> v) { return Stack(v.begin(), v.end()); }

}  // namespace kiln::testing::binary
