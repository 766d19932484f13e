// Partitioners: split a joint graph (Note [Joint graph]) into a forward graph and a backward graph,
// and choose what the forward saves for the backward (DESIGN.md section 5, "aot").
//
// Note [Partitioning the joint graph]
// A joint-graph value is a *tangent value* when it depends on a tangent: only the backward can
// compute it. Every other value is a *forward value*: computable from the primals alone. The
// backward graph's inputs are the saved forward values and the tangents; whatever other forward
// value it reads, it recomputes from the saved ones. Forward values that depend on no primal at
// all (a `zeros` a formula made) are recomputed wherever they are read, never saved; random draws
// are the exception: they count as forward values, computed once.
//
// - default: save every forward value a tangent value reads; recompute nothing.
// - min_cut: choose the saved set of least total size that still cuts every path from the
//   primals to the backward (Note [Min-cut partitioner] in partition.cpp); the backward
//   recomputes the cheap ops past the cut.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/aot/joint_graph.h"

namespace kiln::aot {

enum class Partitioner { Default, MinCut };
// "default" or "min_cut"; ValueError for anything else.
Partitioner parse_partitioner(const std::string& name);

struct SavedValue {
  std::string name;  // the joint graph's value, as printed (%12) with its op: "%12 = cos(%0)"
  graph::TensorMeta meta;
  int64_t bytes = 0;
};

struct Partition {
  // Inputs: the primals. Outputs: the forward outputs, then the saved values.
  graph::Graph forward;
  // Inputs: the saved values, then the tangents. Outputs: one gradient per joint.grad_primals.
  graph::Graph backward;
  std::vector<SavedValue> saved;
  int64_t saved_bytes = 0;
  int recomputed_ops = 0;  // forward ops the backward graph computes again
};

Partition partition(const JointGraph& joint, Partitioner partitioner);

// Bytes of a value's elements (sizes must be concrete).
int64_t value_bytes(const graph::TensorMeta& meta);

}  // namespace kiln::aot
