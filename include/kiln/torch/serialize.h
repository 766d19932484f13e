// torch::save / torch::load for modules, optimizers and tensors. The file is a Kiln checkpoint
// (kiln/io/checkpoint.h): one safetensors file with a part "module", "optimizer" or "tensor", so
// any safetensors reader opens it. It is not LibTorch's zip/pickle format: files written by
// LibTorch's torch::save do not load here (the load raises naming the file), nor the reverse.
#pragma once

#include <memory>
#include <string>

#include "kiln/nn/module.h"
#include "kiln/optim/optimizer.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/types.h"

namespace torch {

void save(const kiln::nn::Module& module, const std::string& path);
void save(const kiln::optim::Optimizer& optimizer, const std::string& path);
void save(const Tensor& tensor, const std::string& path);
// Loads into the module's parameters and buffers (shapes must match: ShapeError).
void load(kiln::nn::Module& module, const std::string& path);
void load(kiln::optim::Optimizer& optimizer, const std::string& path);
// Rebinds `tensor` to the loaded tensor.
void load(Tensor& tensor, const std::string& path);

template <typename Impl>
void save(const nn::ModuleHolder<Impl>& holder, const std::string& path) {
  save(static_cast<const kiln::nn::Module&>(*holder), path);
}
template <typename Impl>
void load(nn::ModuleHolder<Impl>& holder, const std::string& path) {
  load(static_cast<kiln::nn::Module&>(*holder), path);
}

}  // namespace torch
