// Comparisons of compiled and eager results for the capture tests.
#pragma once

#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln::testing {

// Same dtype, sizes and values (bit-for-bit equal numbers; NaN equals NaN).
inline void expect_equal(const Tensor& actual, const Tensor& expected) {
  ASSERT_TRUE(actual.defined() && expected.defined());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec());
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    ASSERT_EQ(a[i], e[i]) << "element " << i;
  }
}

inline void expect_close(const Tensor& actual, const Tensor& expected, double tol) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec());
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << "element " << i;
}

}  // namespace kiln::testing
