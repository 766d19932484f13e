// Kiln: the PyTorch 2 stack in C++. One include for the whole public API.
#pragma once

#include "kiln/autograd.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
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
#include "kiln/scalar.h"
#include "kiln/tensor.h"
