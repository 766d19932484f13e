// Helpers for the graph tests: build calls with metas from the op's meta function, compare tensors.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "kiln/kiln.h"
#include "src/graph/graph.h"
#include "src/graph/meta_inference.h"

namespace kiln::graph::testing {

inline Arg V(Value* v) { return Arg::value(v); }
inline Arg C(IValue c) { return Arg::constant(std::move(c)); }
inline Arg L(std::vector<Value*> vs) { return Arg::list(std::move(vs)); }

// Adds a call of `op` whose output metas are what the op's meta function says.
inline std::vector<Value*> call(Graph& g, std::string_view op, std::vector<Arg> args) {
  const OpId id = op_id(op);
  std::optional<std::vector<TensorMeta>> metas = infer_output_metas(id, args);
  if (!metas) throw Error("test helper: metas of " + std::string(op) + " cannot be inferred");
  return g.add_call(id, std::move(args), std::move(*metas));
}
inline Value* call1(Graph& g, std::string_view op, std::vector<Arg> args) {
  return call(g, op, std::move(args))[0];
}

inline Value* input(Graph& g, std::string source, ScalarType dtype, SymDimVector sizes) {
  return g.add_placeholder(std::move(source), TensorMeta::contiguous(dtype, std::move(sizes)));
}

// Same dtype, same sizes, bit-identical values (NaNs in the same places).
inline void expect_identical(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(std::vector<int64_t>(actual.sizes().begin(), actual.sizes().end()),
            std::vector<int64_t>(expected.sizes().begin(), expected.sizes().end()));
  const std::vector<double> a = actual.to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> e = expected.to(kFloat64).contiguous().to_vector<double>();
  ASSERT_EQ(a.size(), e.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(std::memcmp(&a[i], &e[i], sizeof(double)), 0)
        << "element " << i << ": " << a[i] << " vs " << e[i];
}

inline void expect_close(const Tensor& actual, const Tensor& expected, double tol = 1e-5) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  const std::vector<double> a = actual.to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> e = expected.to(kFloat64).contiguous().to_vector<double>();
  ASSERT_EQ(a.size(), e.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << "element " << i;
}

// Runs `fn` expecting exception type E whose message contains every one of `parts`.
template <typename E, typename F>
void expect_error(F&& fn, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string message = e.what();
    for (std::string_view p : parts)
      EXPECT_NE(message.find(p), std::string::npos) << "message: " << message << "\nmissing: " << p;
  }
}

}  // namespace kiln::graph::testing
