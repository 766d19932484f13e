// Values a scan's forward saves per step so that its backward does not compute them again.
//
// Note [Residuals of a scan]
// The backward of a scan (Note [A scan's backward] in higher_order_autograd.cpp) runs the vjp
// graph of combine_fn at every step, and that graph recomputes the step's forward from the
// step's carries (the history) and slices: for an LSTM, the gates' product h W_hh^T, a
// [b, h] x [h, 4h] mm per step, the most expensive op of the backward step. A residual is such a
// value saved by the forward instead: the forward scan also returns it as a step output (stacked
// [n, ...]), and the backward scan reads its slice where the vjp graph computed it.
//
// Residuals are the products (mm, addmm, bmm, convolutions) of the vjp graph that depend on the
// forward inputs only and read a carry or a slice: a product of additional inputs alone is the
// same at every step, and stacking it would cost n copies. Cheap ops (the gates' activations) are
// still recomputed: fused into the backward step's kernels they cost less than a load of their
// saved values, the min-cut partitioner's reasoning (Note [Min-cut partitioner]).
//
// The forward computes a residual with its own ops: its step body is traced from combine_fn and
// from the residuals' part of the vjp graph, then CSE merges the two copies of each product
// (they are the same ops on the same values), so the forward does no extra work. Were CSE not to
// merge one, the forward would compute it twice: slower, never wrong.
#pragma once

#include <cstddef>
#include <vector>

#include "src/graph/graph.h"

namespace kiln::aot {

// The residuals of `vjp`, a combine_fn's vjp graph whose placeholders are combine_fn's inputs
// (the first `forward_inputs`; of those, the first `per_step_inputs` are the carries and the
// slices) and then the tangents. In program order.
std::vector<graph::Value*> choose_scan_residuals(const graph::Graph& vjp, size_t forward_inputs,
                                                 size_t per_step_inputs);

// A copy of `vjp` (same placeholders) that returns the residuals instead of the gradients.
graph::Graph residuals_graph(const graph::Graph& vjp, const std::vector<graph::Value*>& residuals);

// Makes `vjp` read each residual (given by value id) from a new placeholder, added after the
// existing ones in the order given, and removes what computed them.
void read_residuals_from_placeholders(graph::Graph& vjp, const std::vector<int>& residual_ids);

}  // namespace kiln::aot
