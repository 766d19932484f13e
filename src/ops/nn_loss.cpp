// Losses: cross_entropy, nll_loss, mse_loss, binary_cross_entropy_with_logits, with PyTorch's
// formulas (see the kernels in src/kernels/cpu/loss.cpp) and string reductions.
#include "kiln/ops/nn.h"
#include "src/ops/nn_common.h"
#include "src/ops/pointwise_utils.h"

namespace kiln {
namespace {

// cross_entropy(input, target, weight?, reduction, ignore_index, label_smoothing)
void meta_cross_entropy(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& target = call.tensor(1);
  const ClassLayout l = class_layout("cross_entropy", input);
  const cpu::Reduction red = parse_reduction("cross_entropy", call.arg(3).string());
  const double ls = call.double_arg(5);
  KILN_CHECK(ls >= 0.0 && ls <= 1.0, ValueError,
             "cross_entropy: label_smoothing must be in [0, 1], got {}", ls);
  check_class_weight("cross_entropy", call.optional_tensor(2), l.C, input);
  if (is_floating(target.dtype())) {
    KILN_CHECK(shapes_equal(target.sym_sizes(), input.sym_sizes()), ShapeError,
               "cross_entropy: target of class probabilities must have the input's shape {}, got "
               "shape {}",
               shape_str(input.sym_sizes()), shape_str(target.sym_sizes()));
  } else {
    check_index_target("cross_entropy", target, l, input);
  }
  if (red == cpu::Reduction::None) {
    call.set_output(0, input.dtype(), l.sample_shape);
  } else {
    call.set_output(0, input.dtype(), SymIntArrayRef{});
  }
}

void cpu_cross_entropy(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& target = call.tensor(1);
  const ClassLayout l = class_layout("cross_entropy", input);
  const cpu::Reduction red = parse_reduction("cross_entropy", call.arg(3).string());
  if (is_floating(target.dtype())) {
    cpu::cross_entropy_probs(input, target, call.optional_tensor(2), red, call.double_arg(5),
                             l.outer.expect_int(), l.C.expect_int(), l.inner.expect_int(),
                             call.output(0));
  } else {
    cpu::nll_loss(input, target, call.optional_tensor(2), red, call.int_arg(4), call.double_arg(5),
                  true, l.outer.expect_int(), l.C.expect_int(), l.inner.expect_int(),
                  call.output(0));
  }
}

// nll_loss(input, target, weight?, reduction, ignore_index)
void meta_nll_loss(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const ClassLayout l = class_layout("nll_loss", input);
  const cpu::Reduction red = parse_reduction("nll_loss", call.arg(3).string());
  check_class_weight("nll_loss", call.optional_tensor(2), l.C, input);
  check_index_target("nll_loss", call.tensor(1), l, input);
  if (red == cpu::Reduction::None) {
    call.set_output(0, input.dtype(), l.sample_shape);
  } else {
    call.set_output(0, input.dtype(), SymIntArrayRef{});
  }
}

void cpu_nll_loss(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const ClassLayout l = class_layout("nll_loss", input);
  cpu::nll_loss(input, call.tensor(1), call.optional_tensor(2),
                parse_reduction("nll_loss", call.arg(3).string()), call.int_arg(4), 0.0, false,
                l.outer.expect_int(), l.C.expect_int(), l.inner.expect_int(), call.output(0));
}

// The compute dtype of an elementwise loss: input and target promoted, floating.
ScalarType loss_dtype(std::string_view op, const Tensor& input, const Tensor& target) {
  const ScalarType dt = promote_types(input.dtype(), target.dtype());
  KILN_CHECK(is_floating(dt), DTypeError,
             "{}: input ({}) and target ({}) must promote to a floating dtype, got {}", op,
             dtype_name(input.dtype()), dtype_name(target.dtype()), dtype_name(dt));
  return dt;
}

void set_loss_output(OpCall& call, cpu::Reduction red, ScalarType dt, SymIntArrayRef shape) {
  if (red == cpu::Reduction::None) {
    call.set_output(0, dt, shape);
  } else {
    call.set_output(0, dt, SymIntArrayRef{});
  }
}

// mse_loss(input, target, reduction)
void meta_mse_loss(OpCall& call) {
  const Tensor &input = call.tensor(0), &target = call.tensor(1);
  const cpu::Reduction red = parse_reduction("mse_loss", call.arg(2).string());
  const ScalarType dt = loss_dtype("mse_loss", input, target);
  set_loss_output(call, red, dt,
                  sym_broadcast_shapes("mse_loss", input.sym_sizes(), target.sym_sizes()));
}

void cpu_mse_loss(OpCall& call) {
  const Tensor &input = call.tensor(0), &target = call.tensor(1);
  const ScalarType dt = loss_dtype("mse_loss", input, target);
  const DimVector shape = broadcast_shapes("mse_loss", input.sizes(), target.sizes());
  cpu::mse_loss(cast_to(input, dt).expand(shape), cast_to(target, dt).expand(shape),
                parse_reduction("mse_loss", call.arg(2).string()), call.output(0));
}

constexpr const char* kBce = "binary_cross_entropy_with_logits";

// binary_cross_entropy_with_logits(input, target, weight?, pos_weight?, reduction)
ScalarType check_bce(const OpCall& call) {
  const Tensor &input = call.tensor(0), &target = call.tensor(1);
  KILN_CHECK(shapes_equal(target.sym_sizes(), input.sym_sizes()), ValueError,
             "{}: target size {} must be the same as input size {}", kBce,
             shape_str(target.sym_sizes()), shape_str(input.sym_sizes()));
  const ScalarType dt = loss_dtype(kBce, input, target);
  const char* names[] = {"weight", "pos_weight"};
  for (size_t i = 0; i < 2; ++i) {
    const Tensor p = call.optional_tensor(2 + i);
    if (!p.defined()) continue;
    KILN_CHECK(is_floating(p.dtype()), DTypeError, "{}: {} must be floating, got {}", kBce,
               names[i], dtype_name(p.dtype()));
    const SymDimVector b = sym_broadcast_shapes(kBce, p.sym_sizes(), input.sym_sizes());
    KILN_CHECK(shapes_equal(b, input.sym_sizes()), ShapeError,
               "{}: {} of shape {} must broadcast to the input's shape {}", kBce, names[i],
               shape_str(p.sym_sizes()), shape_str(input.sym_sizes()));
  }
  return dt;
}

void meta_bce(OpCall& call) {
  const ScalarType dt = check_bce(call);
  set_loss_output(call, parse_reduction(kBce, call.arg(4).string()), dt,
                  call.tensor(0).sym_sizes());
}

void cpu_bce(OpCall& call) {
  const ScalarType dt = check_bce(call);
  const Tensor& input = call.tensor(0);
  const IntArrayRef shape = input.sizes();
  auto prep = [&](const Tensor& t) { return t.defined() ? cast_to(t, dt).expand(shape) : t; };
  cpu::binary_cross_entropy_with_logits(
      prep(input), prep(call.tensor(1)), prep(call.optional_tensor(2)),
      prep(call.optional_tensor(3)), parse_reduction(kBce, call.arg(4).string()), call.output(0));
}

}  // namespace

void register_nn_loss_ops(OpRegistry& r) {
  r.add({.name = "cross_entropy",
         .schema = "cross_entropy(Tensor input, Tensor target, Tensor? weight=None, "
                   "str reduction='mean', int ignore_index=-100, float label_smoothing=0.0) "
                   "-> Tensor",
         .family = "nn",
         .meta = meta_cross_entropy,
         .cpu = cpu_cross_entropy,
         .dtypes = dtypes::kFloating});
  r.add({.name = "nll_loss",
         .schema = "nll_loss(Tensor input, Tensor target, Tensor? weight=None, "
                   "str reduction='mean', int ignore_index=-100) -> Tensor",
         .family = "nn",
         .meta = meta_nll_loss,
         .cpu = cpu_nll_loss,
         .dtypes = dtypes::kFloating});
  r.add({.name = "mse_loss",
         .schema = "mse_loss(Tensor input, Tensor target, str reduction='mean') -> Tensor",
         .family = "nn",
         .meta = meta_mse_loss,
         .cpu = cpu_mse_loss,
         .dtypes = dtypes::kFloating});
  r.add({.name = "binary_cross_entropy_with_logits",
         .schema = "binary_cross_entropy_with_logits(Tensor input, Tensor target, "
                   "Tensor? weight=None, Tensor? pos_weight=None, str reduction='mean') -> Tensor",
         .family = "nn",
         .meta = meta_bce,
         .cpu = cpu_bce,
         .dtypes = dtypes::kFloating});
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     std::string_view reduction, int64_t ignore_index, double label_smoothing) {
  static const OpId id = op_id("cross_entropy");
  return dispatch::call_tensor(id, input, target, opt_tensor(weight), reduction, ignore_index,
                               label_smoothing);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                std::string_view reduction, int64_t ignore_index) {
  static const OpId id = op_id("nll_loss");
  return dispatch::call_tensor(id, input, target, opt_tensor(weight), reduction, ignore_index);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  static const OpId id = op_id("mse_loss");
  return dispatch::call_tensor(id, input, target, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        std::string_view reduction) {
  static const OpId id = op_id("binary_cross_entropy_with_logits");
  return dispatch::call_tensor(id, input, target, opt_tensor(weight), opt_tensor(pos_weight),
                               reduction);
}

}  // namespace kiln
