// In-place ops on views of tensors autograd tracks.
//
// Note [In-place on a view]
// `y = x * 2; v = y.slice(0, 0, 2); v.mul_(3)` changes y too, so y's history must change: PyTorch
// rebases it. Kiln does the same. After the in-place op recorded node N for the view, the base
// gets a CopySlices node as its new grad_fn: given the gradient of the new base, the part under
// the view goes through N (giving the gradient of the view's old value and of N's other inputs),
// the rest passes through unchanged, to the base's old history. The view itself then becomes
// `as_strided(base)` of the new base history (an AsStridedBackward node).
// Limitations: views that were made while autograd was not recording (no input required grad)
// are not known to be views, and other views of the same base keep their old history.
#pragma once

#include "src/autograd/autograd_meta.h"

namespace kiln::autograd {

// Rebases `base` and `view` after the in-place op recorded as `node` ran on `view`.
// node_has_view_edge: node's first next edge is the view's old history (the view required grad).
void rebase_view_history(const Tensor& view, const Tensor& base, const std::shared_ptr<Node>& node,
                         bool node_has_view_edge);

}  // namespace kiln::autograd
