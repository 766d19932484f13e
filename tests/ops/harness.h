// The op harness (DESIGN.md section 7): one place that checks every op in the table on every dtype
// it supports. Each op family registers an OpInfo per op (tests/ops/<family>_opinfo.cpp); the
// harness (harness_test.cpp) then, for every op in the table:
//   - fails if the op has no OpInfo (and is not in the exemption list with a reason);
//   - for each supported dtype, runs each sample (contiguous, non-contiguous, broadcast, zero-size
//     inputs) and compares the outputs with the OpInfo's reference, computed independently of
//     Kiln's kernels in float64 or exact integer arithmetic;
//   - runs the same sample on Meta tensors and checks dtype, shape and strides against the real
//     outputs;
//   - runs each error case and checks the kiln::Error kind and that the message names the op.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "src/dispatch/dispatcher.h"

namespace kiln::testing {

struct SampleInput {
  Stack args;
  std::string description;  // "non-contiguous [3, 4]": printed when the sample fails
};

enum class ErrorKind { Shape, DType, Index, Value, NotImplemented };

struct ErrorCase {
  Stack args;
  ErrorKind kind;
  std::string description;
};

struct OpInfo {
  std::string name;  // the op table name
  // Inputs for one dtype (the dtype of the op's main tensor input).
  std::function<std::vector<SampleInput>(ScalarType dtype, std::mt19937_64& rng)> samples;
  // The expected outputs for a sample, computed without calling the op under test. Return the
  // outputs in op order; undefined tensors are not compared.
  std::function<std::vector<Tensor>(const Stack& args)> reference;
  // Bad inputs and the error each must raise.
  std::function<std::vector<ErrorCase>()> error_cases;
  // Tolerance for floating outputs: |actual - expected| <= atol + rtol * |expected|. Integer
  // and bool outputs must match exactly. Defaults by dtype when unset (see default_tolerance).
  std::function<std::pair<double, double>(ScalarType dtype)> tolerance;
  // Ops with random outputs check only shapes/dtypes/statistics in their own tests.
  bool compare_values = true;

  // ---- gradient check (tests/ops/gradcheck_test.cpp) ----
  // float64 samples for the gradient check when samples(kFloat64) does not suit it (inputs too
  // large for finite differences, or values at points where the op is not differentiable).
  std::function<std::vector<SampleInput>(std::mt19937_64& rng)> grad_samples;
  // Tolerance of analytic vs finite-difference gradients (|a - n| <= atol + rtol * |n|).
  double grad_atol = 1e-5;
  double grad_rtol = 1e-3;
};

// Registration from a static initializer in each *_opinfo.cpp file:
//   static const bool registered = kiln::testing::register_op_info({...});
bool register_op_info(OpInfo info);
const std::vector<OpInfo>& op_infos();
const OpInfo* find_op_info(std::string_view name);

// Differentiable ops whose gradient check is skipped, each with the reason.
const std::vector<std::pair<std::string, std::string>>& gradcheck_exemptions();

// Ops deliberately not covered by the harness, each with the reason (and where they are tested).
const std::vector<std::pair<std::string, std::string>>& harness_exemptions();

std::pair<double, double> default_tolerance(ScalarType dtype);

// ---- sample construction ----

enum class Layout { Contiguous, NonContiguous, Expanded };

// Random values suited to the dtype: small integers (so products and sums stay exact), floats in
// [low, high). Bool is a coin flip. Unsigned draws include values near the type's top so
// wrap-around is exercised when `full_range` is true.
Tensor make_tensor(IntArrayRef shape, ScalarType dtype, std::mt19937_64& rng, double low = -5,
                   double high = 5, Layout layout = Layout::Contiguous, bool full_range = false);

// The standard shapes: scalar (0-dim), 1-D, 2-D, a zero-size tensor, and a non-contiguous one.
std::vector<SampleInput> unary_samples(ScalarType dtype, std::mt19937_64& rng, double low = -5,
                                       double high = 5);
// Pairs of inputs: same shape, broadcast ([3,1] with [1,4]), 0-dim with n-dim, zero-size,
// non-contiguous.
std::vector<SampleInput> binary_samples(ScalarType dtype, std::mt19937_64& rng, double low = -5,
                                        double high = 5);

// ---- reference helpers (no Kiln kernels involved) ----

// Applies f elementwise in T (the tensor's own C++ type), producing dtype `out`.
// The input may be any layout; the result is contiguous.
Tensor map_unary_f64(const Tensor& x, ScalarType out, const std::function<double(double)>& f);
// Broadcasts a and b (NumPy rules) and applies f on float64 values.
Tensor map_binary_f64(const Tensor& a, const Tensor& b, ScalarType out,
                      const std::function<double(double, double)>& f);

// Compares `actual` with `expected` (dtype, shape, values within tolerance; NaNs equal), with a
// message naming the op, the sample and the first mismatching index. Empty string when equal.
std::string compare_tensors(const Tensor& actual, const Tensor& expected, double atol, double rtol);

// ---- running samples ----

// Every op in the table, by name.
std::vector<std::string> all_op_names();
// Why `name` is exempt from the harness, or null.
const char* exemption_reason(std::string_view name);
// A Meta tensor with the same dtype, sizes, strides and offset as `t`; and a stack of them.
Tensor to_meta(const Tensor& t);
Stack meta_args(const Stack& args);
// Deep copies of tensor args (contiguous: only values matter), so in-place ops do not disturb
// the reference.
Stack copy_args(const Stack& args);
// The tensors of an op's outputs, tensor lists flattened.
std::vector<Tensor> tensors_of(const Stack& outputs);
// `op` as a gtest parameter name (non-alphanumerics become '_').
std::string op_test_name(const std::string& op);

}  // namespace kiln::testing
