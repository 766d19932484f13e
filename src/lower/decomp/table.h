// The decomposition table: op name -> the function that rewrites one call of it (see
// src/graph/decompose.h). One registration function per op family file.
#pragma once

#include <string_view>
#include <vector>

#include "src/graph/decompose.h"
#include "src/lower/decomp/builder.h"

namespace kiln::lower {

using graph::DecompositionFn;
using graph::DecompositionTable;

void register_activation_decompositions(DecompositionTable& t);     // decomp/activation.cpp
void register_reduce_decompositions(DecompositionTable& t);         // decomp/reduce.cpp
void register_norm_decompositions(DecompositionTable& t);           // decomp/norm.cpp
void register_loss_decompositions(DecompositionTable& t);           // decomp/loss.cpp
void register_linalg_decompositions(DecompositionTable& t);         // decomp/linalg.cpp
void register_inplace_decompositions(DecompositionTable& t);        // decomp/inplace.cpp
void register_norm_backward_decompositions(DecompositionTable& t);  // decomp/norm_backward.cpp
void register_shape_decompositions(DecompositionTable& t);          // decomp/shape.cpp

}  // namespace kiln::lower
