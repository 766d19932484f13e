// LibTorch's header, for programs built against Kiln: the kiln::torch CMake target puts this
// folder on the include path, so `#include <torch/torch.h>` is Kiln's front end.
#pragma once

#include "kiln/torch.h"
