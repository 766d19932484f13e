// Lowerings of max_pool2d (the values only; max_pool2d_with_indices stays an extern kernel) and of
// max_pool2d_backward over tiling windows (Note [Max pooling gradient as a pointwise value]).
//
// Note [Max pooling as a pointwise value]
// Each output element is the maximum of its window's taps, so max_pool2d is a pointwise value
// over the output whose body loads kernel_h * kernel_w input elements. As a pointwise value it
// fuses with its producer: the usual conv -> batch norm -> relu -> max_pool block computes the
// normalization and the relu inside the pooling loop, straight from the convolution's output,
// instead of writing the activation and reading it back (with 2x2, stride-2 windows every input
// element is still computed once). The maximum propagates NaN, as the eager kernel's "a larger
// value or a NaN replaces the maximum" does. A tap that can fall into the padding (or past the
// input in ceil_mode) is read at a clamped index and counts only where it is inside; windows that
// always lie inside the input need no such test. The pooled rows are short (14 or 7 wide in the
// demo CNN), which is why this pays only with Note [Masked vector tails] (codegen.cpp).
#include <limits>

#include "kiln/error.h"
#include "src/lower/lowerings/common.h"

namespace kiln::lower {
namespace {

struct Window {
  int64_t kernel, stride, padding, dilation;
};

// One spatial dim's window, as max_pool2d's schema gives it from argument `first` on (kernel,
// stride, padding, dilation; one value or two; the stride defaults to the kernel size).
Window window_of(const graph::Node& node, size_t dim, size_t first = 1) {
  auto pick = [&](size_t offset, int64_t fallback) {
    const size_t arg = first + offset;
    if (!has_arg(node, arg)) return fallback;
    const IntArrayRef v = arg_constant(node, arg).int_list();
    if (v.empty()) return fallback;
    return v.size() == 1 ? v[0] : v[dim];
  };
  Window w;
  w.kernel = pick(0, 1);
  w.stride = pick(1, w.kernel);
  w.padding = pick(2, 0);
  w.dilation = pick(3, 1);
  return w;
}

// Whether every tap of every window lies inside an input dim of size `in` (static sizes only).
bool always_inside(const Window& w, ExprPtr in, ExprPtr out) {
  if (w.padding != 0 || !in->is_integer() || !out->is_integer()) return false;
  return (out->value() - 1) * w.stride + w.dilation * (w.kernel - 1) < in->value();
}

// The identity of max: -inf, or the dtype's smallest value.
Val lowest(ScalarType dtype) {
  if (is_floating(dtype)) return constant(-std::numeric_limits<double>::infinity(), dtype);
  switch (dtype) {
    case kInt8:
      return constant(std::numeric_limits<int8_t>::min(), dtype);
    case kInt16:
      return constant(std::numeric_limits<int16_t>::min(), dtype);
    case kInt32:
      return constant(std::numeric_limits<int32_t>::min(), dtype);
    case kInt64:
      return constant(static_cast<double>(std::numeric_limits<int64_t>::min()), dtype);
    default:
      return constant(0, dtype);  // unsigned
  }
}

std::vector<TensorBox> lower_max_pool2d(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const std::vector<ExprPtr> sizes = to_exprs(out.sizes);
  const TensorBox& x = arg_box(l, node, 0);
  const size_t h = x.dim() - 2, w = x.dim() - 1;
  const Window wh = window_of(node, 0), ww = window_of(node, 1);
  const ExprPtr in_h = x.sizes()[h], in_w = x.sizes()[w];
  const bool inside = always_inside(wh, in_h, sizes[h]) && always_inside(ww, in_w, sizes[w]);
  const Loader input = x.make_loader();
  const ScalarType dtype = out.dtype, c = compute_type(dtype);
  auto position = [](ExprPtr o, const Window& win, int64_t k) {
    return sym::add(sym::mul(o, sym::integer(win.stride)),
                    sym::integer(k * win.dilation - win.padding));
  };
  auto clamp = [](ExprPtr p, ExprPtr size) {
    return sym::max(sym::min(p, sym::sub(size, sym::integer(1))), sym::integer(0));
  };
  auto within = [](ExprPtr p, ExprPtr size) {
    return sym::logical_and(sym::le(sym::integer(0), p), sym::lt(p, size));
  };
  return {make_pointwise(dtype, sizes, [=](const Index& i) {
    Val best = inside ? Val() : lowest(c);
    for (int64_t kh = 0; kh < wh.kernel; ++kh) {
      for (int64_t kw = 0; kw < ww.kernel; ++kw) {
        Index at = i;
        const ExprPtr ph = position(i[h], wh, kh), pw = position(i[w], ww, kw);
        at[h] = inside ? ph : clamp(ph, in_h);
        at[w] = inside ? pw : clamp(pw, in_w);
        const Val tap = cast(input(at), c);
        if (inside) {
          best = kh == 0 && kw == 0 ? tap : binary(BinaryOp::maximum, best, tap);
        } else {
          const Val in_window =
              ops().index_expr(sym::logical_and(within(ph, in_h), within(pw, in_w)), kBool);
          best = where(in_window, binary(BinaryOp::maximum, best, tap), best);
        }
      }
    }
    return cast(best, dtype);
  })};
}

// Note [Max pooling gradient as a pointwise value]
// When the windows tile the input (stride == kernel, no padding, no dilation), every input element
// lies in at most one window, so its gradient is a pointwise value over the input: the window's
// gradient where the element is that window's argmax, else 0. It is lowered in two values:
//   winner:   over the pooled shape, the number of each window's argmax tap (in the compute type:
//             a few small integers), found again from the input with the eager kernel's rule
//             (scan order, a larger value or a NaN takes over: the first largest, the last NaN);
//             realized, a quarter of the input's size for 2x2 windows;
//   gradient: over the input, the window's gradient where the element's own tap number is the
//             winner; realized too, so that consumers read it instead of recomputing it (inlined
//             into batch norm's backward reductions it made them 2-6x slower in the demo CNN),
//             though a pointwise consumer over the same loops still shares its kernel.
// The winner fuses with the producer it rescans (the demo CNN's recomputed batch norm and relu,
// each element computed once), where the extern kernel read a realized activation. A single value
// over the input would find each window's argmax once per element of the window. Rows and columns
// past the last window (floor mode) get 0; other windows (overlapping, padded, dilated, ceil_mode)
// and symbolic sizes stay extern kernels.
std::vector<TensorBox> lower_max_pool2d_backward(GraphLowering& l, const graph::Node& node) {
  if (has_arg(node, 6) && arg_constant(node, 6).to_bool()) return {};  // ceil_mode
  const Window wh = window_of(node, 0, 2), ww = window_of(node, 1, 2);
  for (const Window& win : {wh, ww})
    if (win.stride != win.kernel || win.padding != 0 || win.dilation != 1) return {};
  const TensorBox& grad = arg_box(l, node, 0);
  const TensorBox& x = arg_box(l, node, 1);
  const size_t h = x.dim() - 2, w = x.dim() - 1;
  const ExprPtr in_h = x.sizes()[h], in_w = x.sizes()[w];
  const ExprPtr out_h = grad.sizes()[h], out_w = grad.sizes()[w];
  for (const ExprPtr& e : {in_h, in_w, out_h, out_w})
    if (!e->is_integer()) return {};
  if (out_h->value() == 0 || out_w->value() == 0) return {};
  const bool covered =
      in_h->value() == out_h->value() * wh.kernel && in_w->value() == out_w->value() * ww.kernel;
  const graph::TensorMeta& out = out_meta(node);
  const ScalarType dtype = out.dtype, c = compute_type(dtype);

  const Loader input = x.make_loader();
  TensorBox winner = make_pointwise(c, grad.sizes(), [=](const Index& i) {
    Val best, number;
    for (int64_t kh = 0; kh < wh.kernel; ++kh) {
      for (int64_t kw = 0; kw < ww.kernel; ++kw) {
        Index at = i;
        at[h] = sym::add(sym::mul(i[h], sym::integer(wh.kernel)), sym::integer(kh));
        at[w] = sym::add(sym::mul(i[w], sym::integer(ww.kernel)), sym::integer(kw));
        const Val tap = cast(input(at), c);
        const Val tap_number = constant(static_cast<double>(kh * ww.kernel + kw), c);
        if (kh == 0 && kw == 0) {
          best = tap;
          number = tap_number;
          continue;
        }
        const Val takes = binary(BinaryOp::logical_or, binary(BinaryOp::gt, tap, best),
                                 unary(UnaryOp::isnan, tap));
        best = where(takes, tap, best);
        number = where(takes, tap_number, number);
      }
    }
    return number;
  });
  winner.storage()->realize(l);

  const Loader winner_of = winner.make_loader(), grad_of = grad.make_loader();
  TensorBox gradient = make_pointwise(dtype, to_exprs(out.sizes), [=](const Index& i) {
    // The window holding i; past the last window (floor mode) a clamped one, masked below.
    auto window = [&](ExprPtr p, const Window& win, ExprPtr count) {
      const ExprPtr o = sym::floordiv(p, sym::integer(win.kernel));
      return covered ? o : sym::min(o, sym::sub(count, sym::integer(1)));
    };
    Index at = i;
    at[h] = window(i[h], wh, out_h);
    at[w] = window(i[w], ww, out_w);
    const ExprPtr own_number =
        sym::add(sym::mul(sym::mod(i[h], sym::integer(wh.kernel)), sym::integer(ww.kernel)),
                 sym::mod(i[w], sym::integer(ww.kernel)));
    Val takes_gradient = binary(BinaryOp::eq, winner_of(at), ops().index_expr(own_number, c));
    if (!covered) {
      const ExprPtr inside =
          sym::logical_and(sym::lt(i[h], sym::integer(out_h->value() * wh.kernel)),
                           sym::lt(i[w], sym::integer(out_w->value() * ww.kernel)));
      takes_gradient =
          binary(BinaryOp::logical_and, takes_gradient, ops().index_expr(inside, kBool));
    }
    return cast(where(takes_gradient, cast(grad_of(at), c), constant(0, c)), dtype);
  });
  gradient.storage()->realize(l);
  return {gradient};
}

}  // namespace

void register_pooling_lowerings() {
  register_lowering("max_pool2d", lower_max_pool2d);
  register_lowering("max_pool2d_backward", lower_max_pool2d_backward);
}

}  // namespace kiln::lower
