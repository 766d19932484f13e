// Factories for evenly spaced values and identity matrices: linspace, eye.
#include <cmath>

#include "kiln/ops/creation.h"
#include "src/core/cast.h"
#include "src/ops/factory_options.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

void meta_linspace(OpCall& call) {
  const int64_t steps = call.int_arg(2);
  KILN_CHECK(steps >= 0, ValueError, "linspace: number of steps must be non-negative, got {}",
             steps);
  const ScalarType dtype = call.arg(3).dtype();
  KILN_CHECK(dtype != kBool, DTypeError, "linspace: dtype bool is not supported");
  call.set_output(0, dtype, {steps});
}

void cpu_linspace(OpCall& call) {
  const Tensor& out = call.output(0);
  const double start = call.scalar(0).to_double(), end = call.scalar(1).to_double();
  const int64_t steps = out.numel();
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  visit_dtype(out.dtype(), [&]<typename T>() {
    T* p = static_cast<T*>(out.data_ptr());
    // Both halves count from their own end (as PyTorch does), so the last value is exactly `end`.
    const int64_t half = steps == 1 ? 1 : steps / 2;
    for (int64_t i = 0; i < steps; ++i) {
      const double v = i < half ? start + step * static_cast<double>(i)
                                : end - step * static_cast<double>(steps - 1 - i);
      p[i] = cast_value<T>(v);
    }
  });
}

void meta_eye(OpCall& call) {
  const int64_t n = call.int_arg(0);
  const int64_t m = call.arg(1).is_none() ? n : call.int_arg(1);
  KILN_CHECK(n >= 0 && m >= 0, ValueError, "eye: sizes must be non-negative, got n={} m={}", n, m);
  checked_numel("eye", {n, m});
  call.set_output(0, call.arg(2).dtype(), {n, m});
}

void cpu_eye(OpCall& call) {
  const Tensor& out = call.output(0);
  const int64_t n = out.size(0), m = out.size(1);
  visit_dtype(out.dtype(), [&]<typename T>() {
    T* p = static_cast<T*>(out.data_ptr());
    for (int64_t i = 0; i < n * m; ++i) p[i] = cast_value<T>(0);
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = cast_value<T>(1);
  });
}

}  // namespace

void register_range_factory_ops(OpRegistry& r) {
  r.add({.name = "linspace",
         .schema = "linspace(Scalar start, Scalar end, int steps, ScalarType dtype, Device device) "
                   "-> Tensor",
         .family = "factory",
         .meta = meta_linspace,
         .cpu = cpu_linspace,
         .dtypes = dtypes::kNumeric,
         .tags = kTagFactory,
         .device_arg = 4});
  r.add({.name = "eye",
         .schema = "eye(int n, int? m, ScalarType dtype, Device device) -> Tensor",
         .family = "factory",
         .meta = meta_eye,
         .cpu = cpu_eye,
         .tags = kTagFactory,
         .device_arg = 3});
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options) {
  static const OpId id = op_id("linspace");
  return with_requires_grad(
      dispatch::call_tensor(id, start, end, steps, options.dtype_, options.device_), options);
}

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions options) {
  static const OpId id = op_id("eye");
  return with_requires_grad(dispatch::call_tensor(id, n, m, options.dtype_, options.device_),
                            options);
}

}  // namespace kiln
