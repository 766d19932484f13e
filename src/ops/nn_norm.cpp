// Normalization ops: native_layer_norm / layer_norm, native_batch_norm / batch_norm,
// native_group_norm / group_norm, and instance_norm. The native_* ops return the saved statistics
// the backward needs; the plain names are composites returning only the normalized tensor, as in
// PyTorch.
#include "kiln/autograd.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/reduce.h"
#include "src/ops/nn_common.h"

namespace kiln {
namespace {

int64_t prod(IntArrayRef s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}

SymInt sym_prod(SymIntArrayRef s) {
  SymInt p = 1;
  for (SymInt v : s) p *= v;
  return p;
}

// ---- layer_norm ----

void meta_native_layer_norm(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const SymIntArrayRef ns = call.sym_ints(1), sizes = input.sym_sizes();
  const auto nd = static_cast<int64_t>(ns.size());
  KILN_CHECK(nd >= 1, ValueError,
             "{}: normalized_shape must have at least one dim (the trailing dims of the input to "
             "normalize over), got []",
             call.name());
  // normalized_shape usually comes from the module (concrete), the input's trailing dims too;
  // a symbolic trailing dim guards here.
  KILN_CHECK(
      input.dim() >= nd && shapes_equal(sizes.slice(static_cast<size_t>(input.dim() - nd)), ns),
      ShapeError,
      "{}: normalized_shape {} must equal the last {} dims of the input, but the input has "
      "shape {}",
      call.name(), shape_str(ns), nd, shape_str(sizes));
  check_param(call.name(), "weight", call.optional_tensor(2), ns, sizes);
  check_param(call.name(), "bias", call.optional_tensor(3), ns, sizes);
  call.set_output(0, input.dtype(), sizes);
  SymDimVector stat(sizes.begin(), sizes.end());
  for (int64_t d = input.dim() - nd; d < input.dim(); ++d) stat[static_cast<size_t>(d)] = 1;
  call.set_output(1, input.dtype(), stat);
  call.set_output(2, input.dtype(), stat);
}

void cpu_native_layer_norm(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const int64_t N = prod(call.ints(1));
  const int64_t M =
      N == 0 ? prod(input.sizes().slice(0, input.dim() - call.ints(1).size())) : input.numel() / N;
  cpu::layer_norm(input, call.optional_tensor(2), call.optional_tensor(3), call.double_arg(4), M, N,
                  call.output(0), call.output(1), call.output(2));
}

void composite_layer_norm(OpCall& call) {
  static const OpId id = op_id("native_layer_norm");
  Stack out =
      dispatch::call_boxed(id, call.arg(0), call.arg(1), call.arg(2), call.arg(3), call.arg(4));
  call.set_output(0, std::move(out[0].tensor()));
}

// ---- batch_norm ----

// native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
void meta_native_batch_norm(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const SymIntArrayRef sizes = input.sym_sizes();
  KILN_CHECK(input.dim() >= 2, ShapeError,
             "{}: input must have shape (N, C), (N, C, L) or (N, C, H, W), got shape {}",
             call.name(), shape_str(sizes));
  const SymInt C = sizes[1];
  const bool training = call.bool_arg(5);
  const Tensor rm = call.optional_tensor(3), rv = call.optional_tensor(4);
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (size_t i = 0; i < 4; ++i)
    check_param(call.name(), names[i], call.optional_tensor(1 + i), SymIntArrayRef(&C, 1), sizes);
  if (training) {
    // The values per channel as a product (not numel / C): with symbolic sizes, which are >= 2
    // under 0/1 specialization, the ShapeEnv can prove it is not 1 from value ranges, no guard.
    const SymInt per_channel = sizes[0] * sym_prod(sizes.slice(2));
    KILN_CHECK(per_channel != 1, ValueError,
               "{}: expected more than 1 value per channel when training, got input of shape {}; "
               "use eval mode (training=false) or a larger batch",
               call.name(), shape_str(sizes));
  } else {
    KILN_CHECK(rm.defined() && rv.defined(), ValueError,
               "{}: eval mode (training=false) normalizes with running_mean and running_var, "
               "which must be given (input of shape {})",
               call.name(), shape_str(sizes));
  }
  call.set_output(0, input.dtype(), sizes);
  const SymInt saved = training ? C : SymInt(0);
  call.set_output(1, input.dtype(), SymIntArrayRef(&saved, 1));
  call.set_output(2, input.dtype(), SymIntArrayRef(&saved, 1));
}

void cpu_native_batch_norm(OpCall& call) {
  cpu::batch_norm(call.tensor(0), call.optional_tensor(1), call.optional_tensor(2),
                  call.optional_tensor(3), call.optional_tensor(4), call.bool_arg(5),
                  call.double_arg(6), call.double_arg(7), call.output(0), call.output(1),
                  call.output(2));
}

// batch_norm(input, running_mean?, running_var?, weight?, bias?, training, momentum, eps): the
// argument order of torch.nn.functional.batch_norm.
void composite_batch_norm(OpCall& call) {
  static const OpId id = op_id("native_batch_norm");
  Stack out = dispatch::call_boxed(id, call.arg(0), call.arg(3), call.arg(4), call.arg(1),
                                   call.arg(2), call.arg(5), call.arg(6), call.arg(7));
  call.set_output(0, std::move(out[0].tensor()));
}

// ---- group_norm ----

// native_group_norm(input, weight?, bias?, num_groups, eps)
void meta_native_group_norm(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const SymIntArrayRef sizes = input.sym_sizes();
  const int64_t groups = call.int_arg(3);
  KILN_CHECK(input.dim() >= 2, ShapeError,
             "{}: input must have shape (N, C, *) (at least 2 dims), got shape {}", call.name(),
             shape_str(sizes));
  KILN_CHECK(groups > 0, ValueError, "{}: num_groups must be positive, got {}", call.name(),
             groups);
  const SymInt C = sizes[1];
  KILN_CHECK(C % groups == 0, ShapeError,
             "{}: the input's {} channels (shape {}) must be divisible by num_groups {}",
             call.name(), C, shape_str(sizes), groups);
  check_param(call.name(), "weight", call.optional_tensor(1), SymIntArrayRef(&C, 1), sizes);
  check_param(call.name(), "bias", call.optional_tensor(2), SymIntArrayRef(&C, 1), sizes);
  call.set_output(0, input.dtype(), sizes);
  const SymDimVector stat{sizes[0], groups};
  call.set_output(1, input.dtype(), stat);
  call.set_output(2, input.dtype(), stat);
}

void cpu_native_group_norm(OpCall& call) {
  cpu::group_norm(call.tensor(0), call.optional_tensor(1), call.optional_tensor(2), call.int_arg(3),
                  call.double_arg(4), call.output(0), call.output(1), call.output(2));
}

// group_norm(input, num_groups, weight?, bias?, eps)
void composite_group_norm(OpCall& call) {
  static const OpId id = op_id("native_group_norm");
  Stack out =
      dispatch::call_boxed(id, call.arg(0), call.arg(2), call.arg(3), call.arg(1), call.arg(4));
  call.set_output(0, std::move(out[0].tensor()));
}

// ---- instance_norm ----

// Note [Instance norm through batch norm]
// Instance norm normalizes each (sample, channel) plane over its spatial values. Without running
// statistics that is group_norm with one channel per group. With them it is PyTorch's
// construction (ATen's instance_norm), so the running statistics follow PyTorch's exactly: the
// input viewed as (1, N C, *) goes through batch_norm with the running statistics, weight and bias
// repeated N times (so each plane is one batch-norm channel, and in training each copy gets
// (1 - momentum) r + momentum s with s the plane's mean or unbiased variance); then each running
// statistic becomes the mean of its N updated copies. That copy-back also runs in eval mode, as
// in PyTorch. An empty batch (N = 0) leaves the running statistics as they are (PyTorch's mean of
// no copies would make them NaN).
// t (C) repeated n times: a new tensor (N C), not a view, since batch_norm updates it in place.
Tensor repeated(const Tensor& t, SymInt n) { return t.defined() ? t.repeat(SymDimVector{n}) : t; }

// instance_norm(input, running_mean?, running_var?, weight?, bias?, use_input_stats, momentum,
// eps): the argument order of torch.nn.functional.instance_norm.
void composite_instance_norm(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor rm = call.optional_tensor(1), rv = call.optional_tensor(2);
  const Tensor weight = call.optional_tensor(3), bias = call.optional_tensor(4);
  const bool use_input_stats = call.bool_arg(5);
  const double momentum = call.double_arg(6), eps = call.double_arg(7);
  const SymIntArrayRef sizes = input.sym_sizes();
  KILN_CHECK(is_floating(input.dtype()), DTypeError,
             "{}: dtype {} is not supported (input of shape {}); use a floating input", call.name(),
             dtype_name(input.dtype()), shape_str(sizes));
  KILN_CHECK(input.dim() >= 2, ShapeError,
             "{}: input must have shape (N, C, *) (at least 2 dims), got shape {}", call.name(),
             shape_str(sizes));
  const SymInt N = sizes[0], C = sizes[1];
  const char* names[] = {"running_mean", "running_var", "weight", "bias"};
  for (size_t i = 0; i < 4; ++i)
    check_param(call.name(), names[i], call.optional_tensor(1 + i), SymIntArrayRef(&C, 1), sizes);
  KILN_CHECK(use_input_stats || (rm.defined() && rv.defined()), ValueError,
             "{}: use_input_stats=false normalizes with running_mean and running_var, which must "
             "be given (input of shape {})",
             call.name(), shape_str(sizes));
  if (use_input_stats) {
    KILN_CHECK(sym_prod(sizes.slice(2)) != 1, ValueError,
               "{}: expected more than 1 spatial element per channel when using the input's "
               "statistics, got input of shape {}; use a larger input or the running statistics",
               call.name(), shape_str(sizes));
  }
  if (use_input_stats && !rm.defined() && !rv.defined() && !sizes_equal(C, 0)) {
    // num_groups is an int: a symbolic channel count is specialized here.
    call.set_output(0, group_norm(input, static_cast<int64_t>(C), weight, bias, eps));
    return;
  }
  SymDimVector planes(sizes.begin(), sizes.end());
  planes[0] = 1;
  planes[1] = N * C;
  const Tensor rm_n = repeated(rm, N), rv_n = repeated(rv, N);
  const Tensor out = batch_norm(input.reshape(planes), rm_n, rv_n, repeated(weight, N),
                                repeated(bias, N), use_input_stats, momentum, eps);
  if (!sizes_equal(N, 0)) {
    const NoGradGuard no_grad;  // a statistics update, not part of the result
    if (rm.defined()) rm.copy_(rm_n.view(SymDimVector{N, C}).mean({0}));
    if (rv.defined()) rv.copy_(rv_n.view(SymDimVector{N, C}).mean({0}));
  }
  call.set_output(0, out.view(sizes));
}

}  // namespace

void register_nn_norm_ops(OpRegistry& r) {
  r.add({.name = "native_layer_norm",
         .schema = "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, "
                   "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
         .family = "nn",
         .meta = meta_native_layer_norm,
         .cpu = cpu_native_layer_norm,
         .dtypes = dtypes::kFloating});
  r.add({.name = "layer_norm",
         .schema = "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                   "Tensor? bias=None, float eps=1e-05) -> Tensor",
         .family = "nn",
         .composite = composite_layer_norm,
         .dtypes = dtypes::kFloating});
  r.add({.name = "native_batch_norm",
         .schema = "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, "
                   "Tensor(a!)? running_mean, Tensor(b!)? running_var, bool training, "
                   "float momentum, float eps) -> (Tensor, Tensor, Tensor)",
         .family = "nn",
         .meta = meta_native_batch_norm,
         .cpu = cpu_native_batch_norm,
         .dtypes = dtypes::kFloating});
  r.add({.name = "batch_norm",
         .schema = "batch_norm(Tensor input, Tensor(a!)? running_mean, Tensor(b!)? running_var, "
                   "Tensor? weight=None, Tensor? bias=None, bool training=False, "
                   "float momentum=0.1, float eps=1e-05) -> Tensor",
         .family = "nn",
         .composite = composite_batch_norm,
         .dtypes = dtypes::kFloating});
  r.add({.name = "native_group_norm",
         .schema = "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, int num_groups, "
                   "float eps) -> (Tensor, Tensor, Tensor)",
         .family = "nn",
         .meta = meta_native_group_norm,
         .cpu = cpu_native_group_norm,
         .dtypes = dtypes::kFloating});
  r.add({.name = "group_norm",
         .schema = "group_norm(Tensor input, int num_groups, Tensor? weight=None, "
                   "Tensor? bias=None, float eps=1e-05) -> Tensor",
         .family = "nn",
         .composite = composite_group_norm,
         .dtypes = dtypes::kFloating});
  r.add({.name = "instance_norm",
         .schema = "instance_norm(Tensor input, Tensor(a!)? running_mean=None, "
                   "Tensor(b!)? running_var=None, Tensor? weight=None, Tensor? bias=None, "
                   "bool use_input_stats=True, float momentum=0.1, float eps=1e-05) -> Tensor",
         .family = "nn",
         .composite = composite_instance_norm,
         .dtypes = dtypes::kFloating});
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input,
                                                     IntArrayRef normalized_shape,
                                                     const Tensor& weight, const Tensor& bias,
                                                     double eps) {
  static const OpId id = op_id("native_layer_norm");
  return three_tensors(
      dispatch::call_boxed(id, input, normalized_shape, opt_tensor(weight), opt_tensor(bias), eps));
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  static const OpId id = op_id("layer_norm");
  return dispatch::call_tensor(id, input, normalized_shape, opt_tensor(weight), opt_tensor(bias),
                               eps);
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, const Tensor& running_mean,
                                                     const Tensor& running_var, bool training,
                                                     double momentum, double eps) {
  static const OpId id = op_id("native_batch_norm");
  return three_tensors(dispatch::call_boxed(id, input, opt_tensor(weight), opt_tensor(bias),
                                            opt_tensor(running_mean), opt_tensor(running_var),
                                            training, momentum, eps));
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  static const OpId id = op_id("batch_norm");
  return dispatch::call_tensor(id, input, opt_tensor(running_mean), opt_tensor(running_var),
                               opt_tensor(weight), opt_tensor(bias), training, momentum, eps);
}

std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, int64_t num_groups,
                                                     double eps) {
  static const OpId id = op_id("native_group_norm");
  return three_tensors(
      dispatch::call_boxed(id, input, opt_tensor(weight), opt_tensor(bias), num_groups, eps));
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  static const OpId id = op_id("group_norm");
  return dispatch::call_tensor(id, input, num_groups, opt_tensor(weight), opt_tensor(bias), eps);
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  static const OpId id = op_id("instance_norm");
  return dispatch::call_tensor(id, input, opt_tensor(running_mean), opt_tensor(running_var),
                               opt_tensor(weight), opt_tensor(bias), use_input_stats, momentum,
                               eps);
}

}  // namespace kiln
