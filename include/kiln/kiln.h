// Kiln: the PyTorch 2 stack in C++. One include for the whole public API.
#pragma once

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/nn.h"
#include "kiln/scalar.h"
#include "kiln/tensor.h"
