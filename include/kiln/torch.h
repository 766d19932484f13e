// Kiln's torch:: front end: LibTorch's C++ API over Kiln, so a LibTorch program builds against
// Kiln with no change but the include (or the kiln::torch CMake target, which makes
// `#include <torch/torch.h>` this header).
//
// Note [The torch:: front end]
// A thin layer, not a second implementation: every torch:: name is Kiln's own type or function,
// or a wrapper that only translates LibTorch's spelling of the arguments.
//  - torch::Tensor is kiln::Tensor, and namespace torch sees all of namespace kiln (a
//    using-directive), so torch::cat, torch::relu, torch::manual_seed, torch::set_num_threads are
//    Kiln's. A name torch:: declares itself hides Kiln's: the factories (LibTorch's options and
//    devices), torch::nn, torch::optim, torch::data, torch::autograd.
//  - Modules: torch::nn::XImpl derives from kiln::nn::X and is built from LibTorch's options
//    builders; torch::nn::X is its holder (TORCH_MODULE). So parameters, state_dict and
//    kiln::compile's module guards work on them as on Kiln's modules.
//  - Devices: LibTorch programs name CUDA; torch::Device can, and using it raises
//    NotImplementedError (kiln::Device has no CUDA, so no Kiln tensor can claim to live there).
//  - Files: torch::save/load write Kiln checkpoints (safetensors), not LibTorch's zip archives.
//  - torch::compile is kiln::compile (PyTorch 2's torch.compile): a LibTorch program compiles a
//    function of its model with one added line.
// What differs from LibTorch, and what is not there yet, is listed in README.md ("Coming from
// LibTorch").
#pragma once

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/autograd.h"
#include "kiln/torch/data.h"
#include "kiln/torch/ivalue.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn.h"
#include "kiln/torch/optim.h"
#include "kiln/torch/serialize.h"
#include "kiln/torch/tensor_ops.h"
#include "kiln/torch/types.h"
