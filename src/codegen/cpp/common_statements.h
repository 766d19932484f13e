// Merging the repeated statements of a printed loop body.
//
// Note [Common statements of a fused body]
// A kernel's nodes are printed one after another into one loop body, each with every producer
// the scheduler inlined into it, so a value that several of the kernel's outputs read is printed
// once per output (and once per use inside one output): the LSTM's backward step printed
// sigmoid(gate) for each of the five gradients that read it, and tanh(c) twice inside one of them,
// about 30 transcendental calls per element where 8 are needed. The C++ compiler does not merge
// them (the SLEEF calls are opaque to it). So a printed body goes through a CSE over its
// statements: a `const T name = expr;` whose T and expr (after the earlier merges renamed its
// operands) equal an earlier statement's is dropped, and `name` is renamed to the earlier one in
// the statements that follow. A store to a buffer forgets the statements that read that buffer
// (the value there may have changed); any other statement (an accumulator's update) forgets
// everything. Statements of `known` (the hoisted loop invariants, which other bodies refer to by
// name) may be reused but are never dropped.
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

void merge_common_statements(std::vector<std::string>& body,
                             const std::vector<std::string>& known = {});

}  // namespace kiln::codegen
