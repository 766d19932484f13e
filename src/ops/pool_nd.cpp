#include "src/ops/pool_nd.h"

#include "src/ops/pool_common.h"

namespace kiln {
namespace {

constexpr const char* kDimNames[] = {"", "(l)", "(h, w)", "(d, h, w)"};

// A one- or `spatial`-element list as `spatial` values; an empty list gives `fallback` when it
// is set.
std::array<int64_t, 3> expand(std::string_view op, std::string_view what, IntArrayRef v,
                              int64_t spatial, std::optional<int64_t> fallback = std::nullopt) {
  std::array<int64_t, 3> out{};
  if (v.empty() && fallback) {
    out.fill(*fallback);
    return out;
  }
  const auto n = static_cast<size_t>(spatial);
  KILN_CHECK(v.size() == 1 || v.size() == n, ValueError,
             "{}: {} must be one int or {} ints {}, got {}", op, what, spatial, kDimNames[spatial],
             shape_str(v));
  for (size_t i = 0; i < n; ++i) out[i] = v.size() == 1 ? v[0] : v[i];
  return out;
}

bool all_positive(const std::array<int64_t, 3>& v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (v[static_cast<size_t>(i)] <= 0) return false;
  return true;
}

std::string list_str(const std::array<int64_t, 3>& v, int64_t n) {
  return shape_str(IntArrayRef(v.data(), static_cast<size_t>(n)));
}

}  // namespace

void check_pool_nd_input(std::string_view op, const Tensor& self, int64_t spatial) {
  const char* dims = kDimNames[spatial];
  KILN_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, ShapeError,
             "{}: expected a {}-D [C, {}] or {}-D [N, C, {}] input, got shape {}", op, spatial + 1,
             dims, spatial + 2, dims, shape_str(self.sym_sizes()));
  for (int64_t d = self.dim() - spatial - 1; d < self.dim(); ++d)
    KILN_CHECK(self.sym_sizes()[static_cast<size_t>(d)] > 0, ShapeError,
               "{}: input {} has a zero-size channel or spatial dim; only the batch may be empty",
               op, shape_str(self.sym_sizes()));
}

void check_pool_nd_dtype(const OpCall& call, const Tensor& self) {
  KILN_CHECK(call.op().dtypes.contains(self.dtype()), DTypeError,
             "{}: dtype {} is not supported (input of shape {}); convert with .to(dtype) first",
             call.name(), dtype_name(self.dtype()), shape_str(self.sym_sizes()));
}

PoolNdShape pool_nd_window_shape(std::string_view op, const Tensor& self, int64_t spatial,
                                 IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                 IntArrayRef dilation, bool ceil_mode) {
  check_pool_nd_input(op, self, spatial);
  PoolNdShape p;
  p.spatial = spatial;
  p.kernel = expand(op, "kernel_size", kernel_size, spatial);
  p.stride = stride.empty() ? p.kernel : expand(op, "stride", stride, spatial);
  p.padding = expand(op, "padding", padding, spatial);
  p.dilation = expand(op, "dilation", dilation, spatial, 1);
  KILN_CHECK(all_positive(p.kernel, spatial), ValueError,
             "{}: kernel_size must be positive, got {}", op, list_str(p.kernel, spatial));
  KILN_CHECK(all_positive(p.stride, spatial), ValueError, "{}: stride must be positive, got {}", op,
             list_str(p.stride, spatial));
  KILN_CHECK(all_positive(p.dilation, spatial), ValueError, "{}: dilation must be positive, got {}",
             op, list_str(p.dilation, spatial));
  for (size_t i = 0; i < static_cast<size_t>(spatial); ++i)
    KILN_CHECK(p.padding[i] >= 0 && p.padding[i] <= p.kernel[i] / 2, ValueError,
               "{}: padding {} must be non-negative and at most half the kernel size {}", op,
               list_str(p.padding, spatial), list_str(p.kernel, spatial));
  const SymIntArrayRef sizes = self.sym_sizes();
  bool fits = true;
  for (size_t i = 0; i < static_cast<size_t>(spatial); ++i) {
    const SymInt in = sizes[sizes.size() - static_cast<size_t>(spatial) + i];
    p.in.push_back(in);
    p.out.push_back(
        pooled_size(in, p.kernel[i], p.padding[i], p.stride[i], p.dilation[i], ceil_mode));
    // Guards with symbolic sizes: the graph is valid only for inputs at least one window large.
    fits = fits && p.out.back() > 0;
  }
  KILN_CHECK(fits, ShapeError,
             "{}: input {} is too small for kernel {} with padding {} and dilation {}: the "
             "output would be {}; use a smaller kernel or a larger input",
             op, shape_str(sizes), list_str(p.kernel, spatial), list_str(p.padding, spatial),
             list_str(p.dilation, spatial), shape_str(p.out));
  return p;
}

std::array<int64_t, 3> adaptive_nd_output_size(std::string_view op, const Tensor& self,
                                               int64_t spatial, IntArrayRef output_size) {
  check_pool_nd_input(op, self, spatial);
  const std::array<int64_t, 3> out = expand(op, "output_size", output_size, spatial);
  for (size_t i = 0; i < static_cast<size_t>(spatial); ++i)
    KILN_CHECK(out[i] >= 0, ValueError, "{}: output_size must be non-negative, got {}", op,
               list_str(out, spatial));
  return out;
}

SymDimVector pooled_nd_shape(const Tensor& self, SymIntArrayRef out) {
  SymDimVector shape(self.sym_sizes().begin(), self.sym_sizes().end());
  for (size_t i = 0; i < out.size(); ++i) shape[shape.size() - out.size() + i] = out[i];
  return shape;
}

void check_divisor(std::string_view op, std::optional<int64_t> divisor_override) {
  KILN_CHECK(!divisor_override || *divisor_override != 0, ValueError,
             "{}: divisor_override must not be 0", op);
}

}  // namespace kiln
