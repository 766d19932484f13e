// torch::nn: LibTorch 1.13's module, options and functional API as a thin layer over Kiln's nn
// (See Note [The torch:: front end] in kiln/torch.h). Each torch::nn::XImpl derives from Kiln's
// layer of the same name and only translates LibTorch's options, so parameters, state_dict,
// train()/eval() and kiln::compile's module guards are Kiln's own; torch::nn::X is its holder
// (TORCH_MODULE). The options are LibTorch's builders (TORCH_ARG):
//
//   torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 8, 3).stride(2).padding(1).bias(false));
//   torch::nn::Sequential net(conv, torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions()
//                                                          .negative_slope(0.2)));
//   namespace F = torch::nn::functional;
//   auto loss = F::cross_entropy(net(x), y, F::CrossEntropyFuncOptions().reduction(torch::kSum));
//
// What Kiln has no layer for (BatchNorm3d, packed sequences, ...) is not declared,
// so a program that uses it fails to build, naming it.
#pragma once

#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_activation.h"
#include "kiln/torch/nn_any_module.h"
#include "kiln/torch/nn_aten.h"
#include "kiln/torch/nn_conv.h"
#include "kiln/torch/nn_conv_transpose.h"
#include "kiln/torch/nn_dropout.h"
#include "kiln/torch/nn_embedding.h"
#include "kiln/torch/nn_enum.h"
#include "kiln/torch/nn_expanding_array.h"
#include "kiln/torch/nn_functional.h"
#include "kiln/torch/nn_functional_module.h"
#include "kiln/torch/nn_init.h"
#include "kiln/torch/nn_linear.h"
#include "kiln/torch/nn_loss.h"
#include "kiln/torch/nn_module_list.h"
#include "kiln/torch/nn_norm.h"
#include "kiln/torch/nn_pooling.h"
#include "kiln/torch/nn_rnn.h"
#include "kiln/torch/nn_sequential.h"
#include "kiln/torch/nn_transformer.h"
#include "kiln/torch/nn_upsampling.h"
#include "kiln/torch/types.h"
