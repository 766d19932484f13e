// Control flow as ops, with PyTorch 2's higher-order operators' names and semantics: cond,
// while_loop, map, scan, associative_scan (issue 21).
//
// Eagerly each one is the C++ control flow it names: cond runs the branch the predicate picks,
// while_loop runs its body while the condition holds, map and scan loop over a dim, and autograd
// records the ops the bodies run, so gradients are those of the unrolled program. What the ops
// add is the contract a compiler needs to keep control flow inside one graph, checked eagerly
// too: a body returns the same number of values with the same dtypes (and, for loop carries and
// per-step outputs, the same sizes) every time, does not mutate its inputs, and returns no alias
// of them. A violation raises a kiln::Error naming the op, the body and the value.
//
// Under kiln::compile, cond with a tensor predicate, while_loop, scan and map trace each body once
// into a subgraph of one graph node, so a predicate or trip count that depends on data is decided
// when the graph runs (no graph break, no recompile when the data changes), and a scan is one
// node whatever its length. A body there may not do
// what would split a graph (item(), a random op, an op that runs only eagerly), and may not write
// to or return (a view of) anything it receives or closes over; both branches of a cond return
// the same dtypes and sizes. Such a body raises a kiln::Error naming the op and the body.
// associative_scan runs its combine inline under kiln::compile: its O(log n) calls on whole
// slices are a graph of O(log n) ops, which fuse like any others. Compiled cond, while_loop, scan
// and map are differentiable through AOT autograd (their backward is a node of the same kind).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// A body: the values it receives (operands or carries) -> the values it returns.
using BodyFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Runs true_fn(operands) when pred holds, else false_fn(operands). `pred` is a bool, or a bool
// tensor with one element (read with item(), so it synchronizes, as in PyTorch).
std::vector<Tensor> cond(bool pred, const BodyFn& true_fn, const BodyFn& false_fn,
                         const std::vector<Tensor>& operands);
std::vector<Tensor> cond(const Tensor& pred, const BodyFn& true_fn, const BodyFn& false_fn,
                         const std::vector<Tensor>& operands);
// A predicate on sizes (`x.size(0) > 4`): under kiln::compile with symbolic sizes it is computed
// when the graph runs, so one graph serves both branches (no guard, no recompile).
std::vector<Tensor> cond(const SymBool& pred, const BodyFn& true_fn, const BodyFn& false_fn,
                         const std::vector<Tensor>& operands);

// carried = body_fn(carried) while cond_fn(carried) holds; returns the final carries. cond_fn
// returns a one-element bool tensor; body_fn returns as many tensors as it receives, each with
// the dtype and sizes of the one it replaces.
using LoopConditionFn = std::function<Tensor(const std::vector<Tensor>&)>;
std::vector<Tensor> while_loop(const LoopConditionFn& cond_fn, const BodyFn& body_fn,
                               const std::vector<Tensor>& carried);

// fn(slices of xs at i, args) for each i along dim 0 of xs (all the same nonzero length), the
// results stacked along a new dim 0.
using MapFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& x,
                                                const std::vector<Tensor>& args)>;
std::vector<Tensor> map(const MapFn& fn, const std::vector<Tensor>& xs,
                        const std::vector<Tensor>& args = {});

// (carry, ys): carry = init, then for each i along `dim` of xs (from the end when `reverse`),
// (carry, y_i) = combine_fn(carry, slices of xs at i); ys are the y_i stacked along `dim` in the
// order of xs. Each next carry has the dtype and sizes of the one it replaces.
struct ScanResult {
  std::vector<Tensor> carry;
  std::vector<Tensor> ys;
};
using ScanFn = std::function<std::pair<std::vector<Tensor>, std::vector<Tensor>>(
    const std::vector<Tensor>& carry, const std::vector<Tensor>& x)>;
ScanResult scan(const ScanFn& combine_fn, const std::vector<Tensor>& init,
                const std::vector<Tensor>& xs, int64_t dim = 0, bool reverse = false);

// The inclusive prefix of an associative combine along `dim`: out[i] = x[0] + ... + x[i] for the
// combine `+`, computed as a tree of depth O(log n) whose combines each take many elements at once.
// combine_fn(a, b) is applied to slices of xs (same sizes, dim kept), so it must act elementwise
// along dim; it returns one tensor per tensor of xs, shaped as its arguments. Order matters
// (combine_fn need not commute): the left argument holds the earlier elements, or with `reverse`
// the later ones (as PyTorch: the reverse scan is flip, scan, flip).
using AssociativeFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& a, const std::vector<Tensor>& b)>;
std::vector<Tensor> associative_scan(const AssociativeFn& combine_fn, const std::vector<Tensor>& xs,
                                     int64_t dim = 0, bool reverse = false);

}  // namespace kiln
