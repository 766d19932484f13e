// torch::nn's recurrent layers (kiln/torch/nn_rnn.h) in LibTorch's idioms: options builders,
// holders, forward's tuples and optional states, the cells, all_weights.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "kiln/torch/nn.h"
#include "kiln/torch/tensor_ops.h"

namespace {

using kiln::Tensor;

TEST(TorchRecurrent, LstmOptionsReachTheLayer) {
  torch::nn::LSTM lstm(
      torch::nn::LSTMOptions(6, 8).num_layers(2).batch_first(true).bidirectional(true).dropout(
          0.25));
  EXPECT_EQ(lstm->options.num_layers(), 2);
  EXPECT_EQ(lstm->kiln::nn::LSTM::options.num_layers, 2);
  EXPECT_TRUE(lstm->kiln::nn::LSTM::options.batch_first);
  EXPECT_DOUBLE_EQ(lstm->kiln::nn::LSTM::options.dropout, 0.25);
  lstm->eval();
  const Tensor x = kiln::randn({3, 5, 6});  // (N, L, H_in): batch_first
  auto [out, state] = lstm->forward(x);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{3, 5, 16}));
  EXPECT_EQ(std::get<0>(state).sizes().vec(), (std::vector<int64_t>{4, 3, 8}));
  EXPECT_EQ(std::get<1>(state).sizes().vec(), (std::vector<int64_t>{4, 3, 8}));
  // The states carried into the next call, as LibTorch programs write it.
  auto [again, next] = lstm->forward(x, state);
  EXPECT_FALSE(torch::allclose(again, out, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(
      std::get<0>(lstm->forward(x, std::make_tuple(std::get<0>(state), std::get<1>(state)))), again,
      0, 0));
  EXPECT_EQ(lstm->all_weights().size(), 16u);
  EXPECT_EQ(lstm->named_parameters()[0].first, "weight_ih_l0");
}

TEST(TorchRecurrent, RnnNonlinearityAndGruHidden) {
  torch::nn::RNN rnn(torch::nn::RNNOptions(3, 4).nonlinearity(torch::kReLU).bias(false));
  auto [out, h] = rnn->forward(kiln::randn({5, 2, 3}));
  EXPECT_GE(out.min().item<double>(), 0.0);  // relu
  EXPECT_EQ(rnn->parameters().size(), 2u);   // no biases
  torch::nn::GRU gru(3, 4);
  auto [y, hn] = gru->forward(kiln::randn({5, 2, 3}), kiln::zeros({1, 2, 4}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{5, 2, 4}));
  EXPECT_TRUE(torch::allclose(y.select(0, 4), hn.select(0, 0), 0, 0));
  torch::nn::LSTM projected(torch::nn::LSTMOptions(3, 4).proj_size(2));
  EXPECT_EQ(std::get<0>(projected->forward(kiln::randn({5, 2, 3}))).size(2), 2);
}

TEST(TorchRecurrent, CellsStepByStep) {
  torch::nn::LSTMCell cell(torch::nn::LSTMCellOptions(3, 4).bias(true));
  Tensor h = kiln::zeros({2, 4}), c = kiln::zeros({2, 4});
  const Tensor xs = kiln::randn({6, 2, 3});
  for (int64_t t = 0; t < 6; ++t) std::tie(h, c) = cell->forward(xs[t], std::make_tuple(h, c));
  EXPECT_EQ(h.sizes().vec(), (std::vector<int64_t>{2, 4}));
  torch::nn::GRUCell gru(3, 4);
  EXPECT_EQ(gru->forward(xs[0]).sizes().vec(), (std::vector<int64_t>{2, 4}));
  torch::nn::RNNCell rnn(torch::nn::RNNCellOptions(3, 4).nonlinearity(torch::kTanh));
  EXPECT_LE(rnn->forward(xs[0], gru->forward(xs[0])).abs().max().item<double>(), 1.0);
}

TEST(TorchRecurrent, TheHolderCallReturnsLibTorchsTupleAndTheModuleCallTheOutput) {
  // lstm(x) is LibTorch's forward (a tuple); Kiln's Module::operator() is the one-tensor forward,
  // the output alone, so the layer also works where a one-tensor module is expected.
  torch::nn::LSTM lstm(3, 4);
  const Tensor x = kiln::randn({2, 1, 3});
  const Tensor out = std::get<0>(lstm(x));
  EXPECT_TRUE(torch::allclose((*lstm)(x), out, 0, 0));
}

}  // namespace
