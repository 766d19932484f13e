// Helpers shared by the backward formulas.
#pragma once

// The op layer's API only: formulas are written in ops, never in modules or optimizers.
#include "kiln/autograd.h"
#include "kiln/generator.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/index.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "kiln/ops/ternary.h"
#include "kiln/ops/unary.h"
#include "kiln/tensor.h"
#include "src/autograd/derivatives.h"
#include "src/core/shape.h"

namespace kiln::autograd {

// The dims a reduction over `dims` (empty = all) of a `rank`-dim tensor reduced, sorted.
DimVector reduced_dims(IntArrayRef dims, int64_t rank);

// A reduction's gradient (shape of the output, keepdim or not) made broadcastable against the
// input again: the reduced dims are re-inserted with size 1.
Tensor unsqueeze_reduced(const Tensor& grad, IntArrayRef dims, int64_t rank, bool keepdim);

// `grad` expanded to the input's full shape after unsqueeze_reduced.
Tensor expand_reduced(const Tensor& grad, IntArrayRef dims, SymIntArrayRef input_sizes,
                      bool keepdim);

}  // namespace kiln::autograd
