// Gradients checked against values computed with PyTorch (tests/data/pointwise_grads.txt, written
// by tests/data/gen_pointwise_grads.py, which documents the cotangents used here).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "src/dispatch/dispatcher.h"

namespace kiln::testing {

// "<case>/<input index>" -> the reference gradient, flattened.
inline const std::map<std::string, std::vector<double>>& reference_grads() {
  static const std::map<std::string, std::vector<double>> table = [] {
    std::map<std::string, std::vector<double>> t;
    const std::string path = std::string(KILN_TEST_DATA_DIR) + "/pointwise_grads.txt";
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "missing " << path;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string key, value;
      fields >> key;
      std::vector<double>& values = t[key];
      while (fields >> value) values.push_back(std::strtod(value.c_str(), nullptr));
    }
    return t;
  }();
  return table;
}

inline Tensor f64(std::vector<double> values, std::vector<int64_t> shape) {
  return from_vector(values, shape);
}
inline Tensor f64(std::vector<double> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return from_vector(values, std::vector<int64_t>{n});
}

// scale * (1, 2, 3, ...) + shift in `shape` (the generator's ramp()).
inline Tensor ramp(IntArrayRef shape, double scale, double shift = 0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (arange(1, n + 1, 1, TensorOptions(kFloat64)) * scale + shift).reshape(shape);
}

// Equal within tolerance; NaN matches NaN and infinities match exactly.
inline void expect_matches(const Tensor& actual, const std::vector<double>& expected,
                           const std::string& what, double tol = 1e-9) {
  ASSERT_TRUE(actual.defined()) << what;
  const std::vector<double> got = actual.contiguous().to(kFloat64).to_vector<double>();
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], e = expected[i];
    if (std::isnan(e) || std::isinf(e)) {
      EXPECT_TRUE(std::isnan(e) ? std::isnan(a) : a == e)
          << what << " element " << i << ": " << a << " vs " << e;
    } else {
      EXPECT_NEAR(a, e, tol * (1 + std::fabs(e))) << what << " element " << i;
    }
  }
}

// Ops (named as in the op table) without a derivative formula yet.
inline std::vector<std::string> missing_formulas(const std::vector<std::string>& ops) {
  std::vector<std::string> missing;
  for (const std::string& name : ops)
    if (!OpRegistry::instance().get(op_id(name)).has_derivative) missing.push_back(name);
  return missing;
}

using GradFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// Runs fn on float64 leaves with `inputs`' values, backpropagates the cotangent
// ramp(out.shape, 0.25) and compares each input's gradient with "<name>/<i>". With `second`, also
// differentiates F = sum_i <grad_i, ramp(grad_i.shape, 0.1, -0.3)> and compares with
// "<name>.second/<i>"; that part needs the formulas of `second_needs` (ops whose derivatives
// another family provides) and is skipped, saying so, while one is missing.
inline void check_reference(const std::string& name, const GradFn& fn,
                            const std::vector<Tensor>& inputs, bool second = false,
                            const std::vector<std::string>& second_needs = {}) {
  SCOPED_TRACE(name);
  const auto& table = reference_grads();
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) leaves.push_back(t.to(kFloat64).clone().requires_grad_());
  {
    Tensor out = fn(leaves);
    std::vector<Tensor> g =
        grad({out}, leaves, {ramp(out.sizes(), 0.25)}, std::nullopt, false, /*allow_unused=*/true);
    for (size_t i = 0; i < leaves.size(); ++i) {
      const std::string key = name + "/" + std::to_string(i);
      ASSERT_TRUE(table.count(key)) << "no reference " << key << "; regenerate the data file";
      expect_matches(g[i].defined() ? g[i] : zeros_like(leaves[i]), table.at(key), key);
    }
  }
  if (!second) return;
  const std::vector<std::string> missing = missing_formulas(second_needs);
  if (!missing.empty()) {
    FAIL() << name << ": double backward needs the derivative of " << missing[0]
           << ", which the derivative table lacks";
  }
  Tensor out = fn(leaves);
  std::vector<Tensor> g =
      grad({out}, leaves, {ramp(out.sizes(), 0.25)}, std::nullopt, true, /*allow_unused=*/true);
  Tensor f = zeros({}, kFloat64);
  for (const Tensor& gi : g)
    if (gi.defined()) f = f + (gi * ramp(gi.sizes(), 0.1, -0.3)).sum();
  std::vector<Tensor> g2(leaves.size());
  if (f.requires_grad()) g2 = grad({f}, leaves, {}, std::nullopt, false, /*allow_unused=*/true);
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string key = name + ".second/" + std::to_string(i);
    ASSERT_TRUE(table.count(key)) << "no reference " << key << "; regenerate the data file";
    expect_matches(g2[i].defined() ? g2[i] : zeros_like(leaves[i]), table.at(key), key);
  }
}

}  // namespace kiln::testing
