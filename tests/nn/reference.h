// Reference values computed with PyTorch by tests/data/gen_nn.py (tests/data/nn_reference.json):
// per case, the module's state_dict, inputs, outputs and repr, all float64.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kiln/kiln.h"

namespace kiln::nn::testing {

using Json = nlohmann::json;

// The case named `name` (fails the test if the file or the case is missing).
const Json& reference_case(const std::string& name);

// {"shape", "dtype": float64 | int64 | bool, "data"} as a tensor.
Tensor tensor_from_json(const Json& j);
// A case's "state" (or another map of tensors) as a StateDict.
StateDict state_from_json(const Json& j);
// Named entries of a case's "inputs" / "outputs".
Tensor input(const Json& c, const std::string& name);
Tensor output(const Json& c, const std::string& name);

// Kiln and PyTorch both compute in float64 and differ only in the order of their sums, so values
// must agree to |a - b| <= tol * (1 + |b|) with tol = 1e-10 by default.
void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                  double tol = 1e-10);

// The case's inputs by name; those PyTorch differentiated ("input:<name>" in the case's "grads")
// require grad.
std::map<std::string, Tensor> case_inputs(const Json& c);

// Backpropagates 0.5 * sum(y^2) (y itself when `scalar`, for losses) from the inputs' and m's
// cleared gradients, and compares them with the case's "grads" (PyTorch's, for the same function):
// "param:<name>" for parameters of m, "input:<name>" for inputs. A parameter PyTorch gave no
// gradient must get none or zeros. m may be null (losses).
void expect_gradients(const Json& c, Module* m, const Tensor& y,
                      const std::map<std::string, Tensor>& inputs, bool scalar = false);

// Converts `m` to float64 and loads the case's state dict (strict).
void load_case_state(Module& m, const Json& c);

}  // namespace kiln::nn::testing
