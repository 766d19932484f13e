// Comparisons of compiled and eager results for the capture and inductor tests.
//
// Note [Compiled tolerances]
// Compiled code computes the same values as the eager kernels, but not always in the same order
// or with the same instructions: vectorized reductions add in 8 lanes and fold them, fused bodies
// keep float16/bfloat16 intermediates in float32 and round once at the store (the eager ops round
// after every op), and SLEEF's vector functions and libm may differ from Highway's polynomials in
// the last bit (Note [Generated vector math] in src/codegen/cpp/prelude.cpp). So:
// - integer and bool results must be identical;
// - floating results must satisfy |actual - expected| <= atol + rtol * |expected| with
//     float64: 1e-12, 1e-12   float32: 1e-5, 1e-5   float16: 1e-2, 1e-2   bfloat16: 5e-2, 5e-2
//   and NaN/inf in the same places.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kiln/compile.h"
#include "kiln/kiln.h"

namespace kiln::testing {

// Options that compile with the code-generating backend.
inline CompileOptions inductor() {
  CompileOptions o;
  o.backend = "inductor";
  return o;
}

// Options for `backend` with fullgraph (a graph break raises), static or dynamic shapes: what
// the control-flow tests compile with.
inline CompileOptions fullgraph_on(const std::string& backend, bool dynamic = false) {
  CompileOptions o;
  o.backend = backend;
  o.fullgraph = true;
  o.dynamic = dynamic;
  return o;
}

// How often `what` occurs in `text` (nodes in a graph's text, kernels in generated code).
inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline double compiled_tolerance(ScalarType t) {
  switch (t) {
    case kFloat64:
      return 1e-12;
    case kFloat32:
      return 1e-5;
    case kFloat16:
      return 1e-2;
    case kBFloat16:
      return 5e-2;
    default:
      return 0;
  }
}

// Same dtype and sizes; values equal within Note [Compiled tolerances] (exact for integers).
inline void expect_equal(const Tensor& actual, const Tensor& expected) {
  ASSERT_TRUE(actual.defined() && expected.defined());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec());
  const double tol = compiled_tolerance(expected.dtype());
  if (expected.dtype() == kInt64 || expected.dtype() == kUInt64) {
    const std::vector<int64_t> a = actual.to_vector<int64_t>(), e = expected.to_vector<int64_t>();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], e[i]) << "element " << i;
    return;
  }
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (tol == 0 || std::isinf(e[i])) {
      ASSERT_EQ(a[i], e[i]) << "element " << i;
    } else {
      ASSERT_NEAR(a[i], e[i], tol + tol * std::abs(e[i])) << "element " << i;
    }
  }
}

// The message of the kiln::Error `f` throws, or "(no error)".
template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The message of the E that `f` throws; a test failure when it throws nothing or another kind.
template <typename E, typename F>
std::string error_of_kind(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "raised another kind of error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

inline void expect_close(const Tensor& actual, const Tensor& expected, double tol) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec());
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << "element " << i;
}

}  // namespace kiln::testing
