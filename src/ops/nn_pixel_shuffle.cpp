// pixel_shuffle and pixel_unshuffle, as ATen's: composites of reshape, permute and a copy, so the
// sizes (batch dims, channels, height, width) may all stay symbolic.
//   pixel_shuffle:   (*, C r^2, H, W) -> (*, C, H r, W r), out[c, h r + i, w r + j] = in[c r^2 + i
//   r + j, h, w] pixel_unshuffle: (*, C, H r, W r) -> (*, C r^2, H, W), its inverse.
// Both return a new tensor, never a view of the input (as PyTorch: the permuted result is
// cloned, so even r = 1 copies).
#include "kiln/ops/nn.h"
#include "src/ops/nn_common.h"

namespace kiln {
namespace {

void check_shuffle_input(const OpCall& call, const Tensor& input, int64_t factor,
                         const char* factor_name) {
  KILN_CHECK(input.dim() >= 3, ShapeError,
             "{}: expected an input (*, C, H, W) of at least 3 dims, got shape {}", call.name(),
             shape_str(input.sym_sizes()));
  KILN_CHECK(factor > 0, ValueError, "{}: {} must be positive, got {}", call.name(), factor_name,
             factor);
}

// The leading (batch) dims of (*, C, H, W).
SymDimVector batch_dims(const Tensor& input) {
  const SymIntArrayRef s = input.sym_sizes();
  return SymDimVector(s.begin(), s.end() - 3);
}

// The permutation that keeps the batch dims and then takes `tail` (negative dims of the
// reshaped input).
std::vector<int64_t> permutation(int64_t batch, int64_t rank, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> p;
  for (int64_t d = 0; d < batch; ++d) p.push_back(d);
  for (int64_t t : tail) p.push_back(rank + t);
  return p;
}

void composite_pixel_shuffle(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const int64_t r = call.int_arg(1);
  check_shuffle_input(call, input, r, "upscale_factor");
  const SymInt c = input.size(-3), h = input.size(-2), w = input.size(-1);
  KILN_CHECK(c % (r * r) == 0, ShapeError,
             "{}: the input's channel dim (size {} of shape {}) must be divisible by "
             "upscale_factor^2 = {}",
             call.name(), c, shape_str(input.sym_sizes()), r * r);
  const SymDimVector batch = batch_dims(input);
  SymDimVector split = batch, out = batch;
  for (SymInt s : {c / (r * r), SymInt(r), SymInt(r), h, w}) split.push_back(s);
  for (SymInt s : {c / (r * r), h * r, w * r}) out.push_back(s);
  const auto nb = static_cast<int64_t>(batch.size());
  // (*, oc, r_h, r_w, h, w) -> (*, oc, h, r_h, w, r_w)
  call.set_output(0, input.reshape(split)
                         .permute(permutation(nb, nb + 5, {-5, -2, -4, -1, -3}))
                         .clone()
                         .view(out));
}

void composite_pixel_unshuffle(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const int64_t r = call.int_arg(1);
  check_shuffle_input(call, input, r, "downscale_factor");
  const SymInt c = input.size(-3), h = input.size(-2), w = input.size(-1);
  KILN_CHECK(h % r == 0 && w % r == 0, ShapeError,
             "{}: the input's height and width (shape {}) must be divisible by "
             "downscale_factor {}",
             call.name(), shape_str(input.sym_sizes()), r);
  const SymDimVector batch = batch_dims(input);
  SymDimVector split = batch, out = batch;
  for (SymInt s : {c, h / r, SymInt(r), w / r, SymInt(r)}) split.push_back(s);
  for (SymInt s : {c * (r * r), h / r, w / r}) out.push_back(s);
  const auto nb = static_cast<int64_t>(batch.size());
  // (*, c, oh, r_h, ow, r_w) -> (*, c, r_h, r_w, oh, ow)
  call.set_output(0, input.reshape(split)
                         .permute(permutation(nb, nb + 5, {-5, -3, -1, -4, -2}))
                         .clone()
                         .view(out));
}

}  // namespace

void register_nn_pixel_shuffle_ops(OpRegistry& r) {
  r.add({.name = "pixel_shuffle",
         .schema = "pixel_shuffle(Tensor self, int upscale_factor) -> Tensor",
         .family = "nn",
         .composite = composite_pixel_shuffle});
  r.add({.name = "pixel_unshuffle",
         .schema = "pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor",
         .family = "nn",
         .composite = composite_pixel_unshuffle});
}

Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor) {
  static const OpId id = op_id("pixel_shuffle");
  return dispatch::call_tensor(id, input, upscale_factor);
}

Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor) {
  static const OpId id = op_id("pixel_unshuffle");
  return dispatch::call_tensor(id, input, downscale_factor);
}

}  // namespace kiln
