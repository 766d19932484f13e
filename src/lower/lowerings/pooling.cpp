// Lowering of max_pool2d (the values only; max_pool2d_with_indices stays an extern kernel).
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

// One spatial dim's window, as max_pool2d's schema gives it (one value or two; the stride
// defaults to the kernel size).
Window window_of(const graph::Node& node, size_t dim) {
  auto pick = [&](size_t arg, int64_t fallback) {
    if (!has_arg(node, arg)) return fallback;
    const IntArrayRef v = arg_constant(node, arg).int_list();
    if (v.empty()) return fallback;
    return v.size() == 1 ? v[0] : v[dim];
  };
  Window w;
  w.kernel = pick(1, 1);
  w.stride = pick(2, w.kernel);
  w.padding = pick(3, 0);
  w.dilation = pick(4, 1);
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

}  // namespace

void register_pooling_lowerings() { register_lowering("max_pool2d", lower_max_pool2d); }

}  // namespace kiln::lower
