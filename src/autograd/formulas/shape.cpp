// Derivatives of the shape ops. Each is a copy that moves elements around, so its gradient moves
// them back: cat -> slices, flip -> flip, roll -> roll back, repeat -> sum of the copies, tril/triu
// -> the same mask, pad -> crop (constant) or a scatter-add of every copy (reflect, replicate,
// circular). stack, split and chunk are composites of these and of views.
#include <algorithm>

#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

// cat(tensors, dim): each input's gradient is its slice of the output's gradient. 1-D empty
// inputs are skipped by cat (as in PyTorch) and get no gradient.
void cat_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const int64_t d = wrap_dim("cat", ctx.int_arg(1), g.dim());
  SymInt offset = 0;
  const std::vector<ArgMeta>& inputs = ctx.list_meta(0);
  for (size_t j = 0; j < inputs.size(); ++j) {
    const SymIntArrayRef s = inputs[j].sizes;
    if (s.size() == 1 && s[0] == 0) continue;
    const SymInt n = s[static_cast<size_t>(d)];
    if (ctx.needs_grad(0, j)) ctx.set_grad(0, j, g.narrow(d, offset, n));
    offset += n;
  }
}

void flip_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad().flip(ctx.ints(1))); }

void roll_backward(GradContext& ctx) {
  DimVector back;
  for (int64_t s : ctx.ints(1)) back.push_back(-s);
  ctx.set_grad(0, ctx.grad().roll(back, ctx.ints(2)));
}

// repeat(self, repeats): output dim i is repeats[i] copies of input dim i (size 1 for the new
// leading dims). Viewing the gradient as [r0, n0, r1, n1, ...] and summing the r dims adds the
// copies up.
void repeat_backward(GradContext& ctx) {
  const IntArrayRef reps = ctx.ints(1);
  const DimVector in = ctx.int_sizes(0);
  const int64_t lead = static_cast<int64_t>(reps.size()) - static_cast<int64_t>(in.size());
  DimVector split, summed;
  for (int64_t i = 0; i < static_cast<int64_t>(reps.size()); ++i) {
    summed.push_back(static_cast<int64_t>(split.size()));
    split.push_back(reps[static_cast<size_t>(i)]);
    split.push_back(i < lead ? 1 : in[static_cast<size_t>(i - lead)]);
  }
  Tensor g = ctx.grad().reshape(split);
  if (!summed.empty()) g = g.sum(summed);
  ctx.set_grad(0, g.reshape(in));
}

void tril_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad().tril(ctx.int_arg(1))); }
void triu_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad().triu(ctx.int_arg(1))); }

// The input position output position i of a padded dim reads (as the pad kernel computes it);
// -1 for a constant-filled position.
int64_t pad_source(std::string_view mode, int64_t i, int64_t left, int64_t n) {
  int64_t s = i - left;
  if (mode == "reflect") {
    if (s < 0) s = -s;
    if (s >= n) s = 2 * (n - 1) - s;
  } else if (mode == "replicate") {
    s = std::clamp<int64_t>(s, 0, n - 1);
  } else if (mode == "circular") {
    s = ((s % n) + n) % n;
  }
  return s >= 0 && s < n ? s : -1;
}

// pad(self, pad, mode, value): constant padding's gradient crops (padding by the negated
// amounts, which crops, and pads back where the forward cropped). The other modes copy input
// positions several times; their gradient scatter-adds each padded dim back, one dim at a time
// (the copies along different dims are independent).
void pad_backward(GradContext& ctx) {
  const IntArrayRef pads = ctx.ints(1);
  const std::string& mode = ctx.string_arg(2);
  const Tensor g = ctx.grad();
  if (mode == "constant") {
    DimVector back;
    for (int64_t p : pads) back.push_back(-p);
    ctx.set_grad(0, pad(g, back));
    return;
  }
  const DimVector in = ctx.int_sizes(0);
  Tensor r = g;
  const int64_t rank = static_cast<int64_t>(in.size());
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const int64_t d = rank - 1 - static_cast<int64_t>(k);
    const int64_t n = in[static_cast<size_t>(d)], m = r.size(d);
    std::vector<int64_t> source(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i)
      source[static_cast<size_t>(i)] = pad_source(mode, i, pads[2 * k], n);
    DimVector index_shape(static_cast<size_t>(rank), 1);
    index_shape[static_cast<size_t>(d)] = m;
    const Tensor index =
        from_vector(source, std::vector<int64_t>(index_shape.begin(), index_shape.end()))
            .expand(r.sizes());
    DimVector shape(r.sizes().begin(), r.sizes().end());
    shape[static_cast<size_t>(d)] = n;
    r = zeros(shape, r.dtype()).scatter_add(d, index, r);
  }
  ctx.set_grad(0, r);
}

}  // namespace

void register_shape_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           {.op = "cat", .backward = cat_backward},
                           {.op = "flip", .backward = flip_backward},
                           {.op = "roll", .backward = roll_backward},
                           {.op = "repeat", .backward = repeat_backward},
                           {.op = "tril", .backward = tril_backward},
                           {.op = "triu", .backward = triu_backward},
                           {.op = "pad", .backward = pad_backward},
                       });
}

}  // namespace kiln::autograd
