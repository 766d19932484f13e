// Backward ops of the nn family: native_layer_norm_backward, native_batch_norm_backward,
// native_group_norm_backward, cross_entropy_backward, embedding_dense_backward. Their kernels
// (src/kernels/cpu/norm_backward.cpp, loss_backward.cpp, embedding.cpp) are what training runs;
// their own derivatives (double backward) are in src/autograd/formulas/nn.cpp.
#include "src/ops/nn_backward.h"

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

// output_mask: three 0/1 flags (grad_input, grad_weight, grad_bias).
NormGradMask read_mask(const OpCall& call, size_t i) {
  return read_output_mask(call, i, "grad_input, grad_weight, grad_bias");
}

void check_grad_like_input(const OpCall& call, const Tensor& grad, const Tensor& input) {
  KILN_CHECK(shapes_equal(grad.sym_sizes(), input.sym_sizes()), ShapeError,
             "{}: grad_out of shape {} must have the input's shape {}", call.name(),
             shape_str(grad.sym_sizes()), shape_str(input.sym_sizes()));
  KILN_CHECK(grad.dtype() == input.dtype(), DTypeError,
             "{}: grad_out ({}) must have the input's dtype ({})", call.name(),
             dtype_name(grad.dtype()), dtype_name(input.dtype()));
}

void check_stat(const OpCall& call, const char* what, const Tensor& stat, SymInt count,
                const Tensor& input) {
  KILN_CHECK(stat.sym_numel() == count, ShapeError,
             "{}: {} of shape {} must hold {} values for an input of shape {}", call.name(), what,
             shape_str(stat.sym_sizes()), count, shape_str(input.sym_sizes()));
  KILN_CHECK(is_floating(stat.dtype()), DTypeError, "{}: {} must be floating, got {}", call.name(),
             what, dtype_name(stat.dtype()));
}

// Creates the three outputs; a gradient not in the mask is an empty [0] tensor.
void set_norm_outputs(OpCall& call, const Tensor& input, NormGradMask mask, SymIntArrayRef param) {
  const ScalarType dt = input.dtype();
  const SymDimVector empty{0};
  call.set_output(0, dt, mask[0] ? input.sym_sizes() : SymIntArrayRef(empty));
  call.set_output(1, dt, mask[1] ? param : SymIntArrayRef(empty));
  call.set_output(2, dt, mask[2] ? param : SymIntArrayRef(empty));
}

Tensor out_if(const OpCall& call, size_t i, bool wanted) {
  return wanted ? call.output(i) : Tensor();
}

// ---- native_layer_norm_backward ----

// (grad_out, input, normalized_shape, mean, rstd, weight?, output_mask)
void meta_layer_norm_backward(OpCall& call) {
  const Tensor &grad = call.tensor(0), &input = call.tensor(1);
  const SymIntArrayRef ns = call.sym_ints(2), sizes = input.sym_sizes();
  const auto nd = static_cast<int64_t>(ns.size());
  KILN_CHECK(nd >= 1 && input.dim() >= nd &&
                 shapes_equal(sizes.slice(static_cast<size_t>(input.dim() - nd)), ns),
             ShapeError,
             "{}: normalized_shape {} must be non-empty and equal the last dims of the input of "
             "shape {}",
             call.name(), shape_str(ns), shape_str(sizes));
  check_grad_like_input(call, grad, input);
  const SymInt M = sym_prod(sizes.slice(0, static_cast<size_t>(input.dim() - nd)));
  check_stat(call, "mean", call.tensor(3), M, input);
  check_stat(call, "rstd", call.tensor(4), M, input);
  check_param(call.name(), "weight", call.optional_tensor(5), ns, sizes);
  set_norm_outputs(call, input, read_mask(call, 6), ns);
}

void cpu_layer_norm_backward(OpCall& call) {
  const Tensor& input = call.tensor(1);
  const IntArrayRef ns = call.ints(2);
  const int64_t N = prod(ns);
  const int64_t M = prod(input.sizes().slice(0, input.dim() - ns.size()));
  const NormGradMask mask = read_mask(call, 6);
  cpu::layer_norm_backward(call.tensor(0), input, call.tensor(3), call.tensor(4),
                           call.optional_tensor(5), M, N, out_if(call, 0, mask[0]),
                           out_if(call, 1, mask[1]), out_if(call, 2, mask[2]));
}

// ---- native_batch_norm_backward ----

// (grad_out, input, weight?, mean, invstd, training, output_mask)
void meta_batch_norm_backward(OpCall& call) {
  const Tensor &grad = call.tensor(0), &input = call.tensor(1);
  KILN_CHECK(input.dim() >= 2, ShapeError,
             "{}: input must have shape (N, C, *) (at least 2 dims), got shape {}", call.name(),
             shape_str(input.sym_sizes()));
  check_grad_like_input(call, grad, input);
  const SymIntArrayRef sizes = input.sym_sizes();
  const SymIntArrayRef C = sizes.slice(1, 1);
  check_param(call.name(), "weight", call.optional_tensor(2), C, sizes);
  check_param(call.name(), "mean", call.tensor(3), C, sizes);
  check_param(call.name(), "invstd", call.tensor(4), C, sizes);
  set_norm_outputs(call, input, read_mask(call, 6), C);
}

void cpu_batch_norm_backward(OpCall& call) {
  const NormGradMask mask = read_mask(call, 6);
  cpu::batch_norm_backward(call.tensor(0), call.tensor(1), call.optional_tensor(2), call.tensor(3),
                           call.tensor(4), call.bool_arg(5), out_if(call, 0, mask[0]),
                           out_if(call, 1, mask[1]), out_if(call, 2, mask[2]));
}

// ---- native_group_norm_backward ----

// (grad_out, input, mean, rstd, weight?, num_groups, output_mask)
void meta_group_norm_backward(OpCall& call) {
  const Tensor &grad = call.tensor(0), &input = call.tensor(1);
  const int64_t groups = call.int_arg(5);
  const SymIntArrayRef sizes = input.sym_sizes();
  KILN_CHECK(input.dim() >= 2, ShapeError,
             "{}: input must have shape (N, C, *) (at least 2 dims), got shape {}", call.name(),
             shape_str(sizes));
  KILN_CHECK(groups > 0 && sizes[1] % groups == 0, ValueError,
             "{}: num_groups {} must be positive and divide the input's {} channels (shape {})",
             call.name(), groups, sizes[1], shape_str(sizes));
  check_grad_like_input(call, grad, input);
  check_stat(call, "mean", call.tensor(2), sizes[0] * groups, input);
  check_stat(call, "rstd", call.tensor(3), sizes[0] * groups, input);
  const SymIntArrayRef C = sizes.slice(1, 1);
  check_param(call.name(), "weight", call.optional_tensor(4), C, sizes);
  set_norm_outputs(call, input, read_mask(call, 6), C);
}

void cpu_group_norm_backward(OpCall& call) {
  const NormGradMask mask = read_mask(call, 6);
  cpu::group_norm_backward(call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3),
                           call.optional_tensor(4), call.int_arg(5), out_if(call, 0, mask[0]),
                           out_if(call, 1, mask[1]), out_if(call, 2, mask[2]));
}

// ---- cross_entropy_backward ----

// (grad_output, input, target, weight?, reduction, ignore_index, label_smoothing)
void meta_cross_entropy_backward(OpCall& call) {
  const Tensor &grad = call.tensor(0), &input = call.tensor(1), &target = call.tensor(2);
  const ClassLayout l = class_layout(call.name(), input);
  const cpu::Reduction red = parse_reduction(call.name(), call.arg(4).string());
  const double ls = call.double_arg(6);
  KILN_CHECK(ls >= 0.0 && ls <= 1.0, ValueError, "{}: label_smoothing must be in [0, 1], got {}",
             call.name(), ls);
  check_class_weight(call.name(), call.optional_tensor(3), l.C, input);
  check_index_target(call.name(), target, l, input);
  const SymIntArrayRef loss_shape =
      red == cpu::Reduction::None ? SymIntArrayRef(l.sample_shape) : SymIntArrayRef();
  KILN_CHECK(shapes_equal(grad.sym_sizes(), loss_shape), ShapeError,
             "{}: grad_output of shape {} must have the loss's shape {} (reduction '{}')",
             call.name(), shape_str(grad.sym_sizes()), shape_str(loss_shape), call.arg(4).string());
  KILN_CHECK(is_floating(grad.dtype()), DTypeError, "{}: grad_output must be floating, got {}",
             call.name(), dtype_name(grad.dtype()));
  call.set_output(0, input.dtype(), input.sym_sizes());
}

void cpu_cross_entropy_backward(OpCall& call) {
  const Tensor& input = call.tensor(1);
  const ClassLayout l = class_layout(call.name(), input);
  cpu::cross_entropy_backward(call.tensor(0), input, call.tensor(2), call.optional_tensor(3),
                              parse_reduction(call.name(), call.arg(4).string()), call.int_arg(5),
                              call.double_arg(6), l.outer.expect_int(), l.C.expect_int(),
                              l.inner.expect_int(), call.output(0));
}

// ---- embedding_dense_backward ----

// (grad_output, indices, num_weights, padding_idx?)
void meta_embedding_backward(OpCall& call) {
  const Tensor &grad = call.tensor(0), &indices = call.tensor(1);
  const SymInt rows = call.sym_int_arg(2);
  const SymIntArrayRef grad_sizes = grad.sym_sizes(), index_sizes = indices.sym_sizes();
  KILN_CHECK(is_integral(indices.dtype()), DTypeError,
             "{}: indices must have an integer dtype, got {} (shape {})", call.name(),
             dtype_name(indices.dtype()), shape_str(index_sizes));
  KILN_CHECK(rows >= 0, ValueError, "{}: num_weights must be >= 0, got {}", call.name(), rows);
  KILN_CHECK(grad.dim() == indices.dim() + 1 &&
                 shapes_equal(grad_sizes.slice(0, index_sizes.size()), index_sizes),
             ShapeError,
             "{}: grad_output of shape {} must have the indices' shape {} plus one trailing dim "
             "(embedding_dim)",
             call.name(), shape_str(grad_sizes), shape_str(index_sizes));
  if (const std::optional<int64_t> pad = call.arg(3).optional_int()) {
    KILN_CHECK(*pad >= -rows && *pad < rows, IndexError,
               "{}: padding_idx {} is out of range for a table of {} rows", call.name(), *pad,
               rows);
  }
  call.set_output(0, grad.dtype(), SymDimVector{rows, grad_sizes[grad_sizes.size() - 1]});
}

void cpu_embedding_backward(OpCall& call) {
  cpu::embedding_backward(call.tensor(0), call.tensor(1), call.int_arg(2),
                          call.arg(3).optional_int(), call.output(0));
}

}  // namespace

void register_nn_backward_ops(OpRegistry& r) {
  r.add({.name = "native_layer_norm_backward",
         .schema = "native_layer_norm_backward(Tensor grad_out, Tensor input, "
                   "SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, "
                   "int[] output_mask) -> (Tensor, Tensor, Tensor)",
         .family = "nn",
         .meta = meta_layer_norm_backward,
         .cpu = cpu_layer_norm_backward,
         .dtypes = dtypes::kFloating});
  r.add({.name = "native_batch_norm_backward",
         .schema = "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
                   "Tensor mean, Tensor invstd, bool training, int[] output_mask) "
                   "-> (Tensor, Tensor, Tensor)",
         .family = "nn",
         .meta = meta_batch_norm_backward,
         .cpu = cpu_batch_norm_backward,
         .dtypes = dtypes::kFloating});
  r.add({.name = "native_group_norm_backward",
         .schema = "native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, "
                   "Tensor rstd, Tensor? weight, int num_groups, int[] output_mask) "
                   "-> (Tensor, Tensor, Tensor)",
         .family = "nn",
         .meta = meta_group_norm_backward,
         .cpu = cpu_group_norm_backward,
         .dtypes = dtypes::kFloating});
  r.add({.name = "cross_entropy_backward",
         .schema = "cross_entropy_backward(Tensor grad_output, Tensor input, Tensor target, "
                   "Tensor? weight, str reduction, int ignore_index, float label_smoothing) "
                   "-> Tensor",
         .family = "nn",
         .meta = meta_cross_entropy_backward,
         .cpu = cpu_cross_entropy_backward,
         .dtypes = dtypes::kFloating});
  r.add({.name = "embedding_dense_backward",
         .schema = "embedding_dense_backward(Tensor grad_output, Tensor indices, "
                   "SymInt num_weights, int? padding_idx) -> Tensor",
         .family = "nn",
         .meta = meta_embedding_backward,
         .cpu = cpu_embedding_backward,
         .dtypes = dtypes::kFloating});
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean,
    const Tensor& rstd, const Tensor& weight, NormGradMask mask) {
  static const OpId id = op_id("native_layer_norm_backward");
  return three_tensors(dispatch::call_boxed(id, grad_out, input, normalized_shape, mean, rstd,
                                            opt_tensor(weight), output_mask_value(mask)));
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight, const Tensor& mean,
    const Tensor& invstd, bool training, NormGradMask mask) {
  static const OpId id = op_id("native_batch_norm_backward");
  return three_tensors(dispatch::call_boxed(id, grad_out, input, opt_tensor(weight), mean, invstd,
                                            training, output_mask_value(mask)));
}

std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const Tensor& weight, int64_t num_groups, NormGradMask mask) {
  static const OpId id = op_id("native_group_norm_backward");
  return three_tensors(dispatch::call_boxed(id, grad_out, input, mean, rstd, opt_tensor(weight),
                                            num_groups, output_mask_value(mask)));
}

Tensor cross_entropy_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                              const Tensor& weight, std::string_view reduction,
                              int64_t ignore_index, double label_smoothing) {
  static const OpId id = op_id("cross_entropy_backward");
  return dispatch::call_tensor(id, grad_output, input, target, opt_tensor(weight), reduction,
                               ignore_index, label_smoothing);
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, std::optional<int64_t> padding_idx) {
  static const OpId id = op_id("embedding_dense_backward");
  return dispatch::call_tensor(id, grad_output, indices, num_weights, padding_idx);
}

}  // namespace kiln
