// torch::nn::RNN, LSTM, GRU and RNNCell, LSTMCell, GRUCell over Kiln's (kiln/nn/rnn.h), with
// LibTorch's options and forward signatures:
//
//   torch::nn::LSTM lstm(torch::nn::LSTMOptions(64, 128).num_layers(2).batch_first(true));
//   auto [output, state] = lstm->forward(x);             // state: (h_n, c_n)
//   auto [h, c] = cell->forward(x_t, std::make_tuple(h, c));
//
// Packed sequences (forward_with_packed_input) are not there yet: pad the batch instead.
#pragma once

#include <cstdint>
#include <tuple>
#include <variant>

#include "kiln/nn/rnn.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_enum.h"
#include "kiln/torch/types.h"

namespace torch::nn {

namespace detail {
using rnn_nonlinearity_t = std::variant<enumtype::kTanh, enumtype::kReLU>;
}  // namespace detail

// The options RNN, LSTM and GRU share, declared in each (a builder's setters return the struct
// that declares them, so the options cannot come from a common base).
#define KILN_TORCH_RECURRENT_OPTIONS(Options)                 \
  Options(int64_t input_size, int64_t hidden_size)            \
      : input_size_(input_size), hidden_size_(hidden_size) {} \
  TORCH_ARG(int64_t, input_size);                             \
  TORCH_ARG(int64_t, hidden_size);                            \
  TORCH_ARG(int64_t, num_layers) = 1;                         \
  TORCH_ARG(bool, bias) = true;                               \
  TORCH_ARG(bool, batch_first) = false;                       \
  TORCH_ARG(double, dropout) = 0.0;                           \
  TORCH_ARG(bool, bidirectional) = false;                     \
                                                              \
 public:                                                      \
  kiln::nn::RNNOptions to_kiln() const {                      \
    return {.num_layers = num_layers_,                        \
            .bias = bias_,                                    \
            .batch_first = batch_first_,                      \
            .dropout = dropout_,                              \
            .bidirectional = bidirectional_};                 \
  }

struct RNNOptions {
  KILN_TORCH_RECURRENT_OPTIONS(RNNOptions)
  TORCH_ARG(detail::rnn_nonlinearity_t, nonlinearity) = torch::kTanh;
};

struct LSTMOptions {
  KILN_TORCH_RECURRENT_OPTIONS(LSTMOptions)
  TORCH_ARG(int64_t, proj_size) = 0;
};

struct GRUOptions {
  KILN_TORCH_RECURRENT_OPTIONS(GRUOptions)
};

#undef KILN_TORCH_RECURRENT_OPTIONS

class RNNImpl : public kiln::nn::RNN {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<RNNImpl>(options));
  }
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options)
      : kiln::nn::RNN(options.input_size(), options.hidden_size(), kiln_options(options)),
        options(options) {}

  // (output, h_n); hides Kiln's one-tensor forward, as LibTorch's RNN has none.
  std::tuple<kiln::Tensor, kiln::Tensor> forward(const kiln::Tensor& input, kiln::Tensor hx = {}) {
    return kiln::nn::RNN::forward(input, hx);
  }
  std::vector<kiln::Tensor> all_weights() const { return flat_weights(); }

  RNNOptions options;

 private:
  static kiln::nn::RNNOptions kiln_options(const RNNOptions& options) {
    kiln::nn::RNNOptions o = options.to_kiln();
    o.nonlinearity = enumtype::kiln_name(options.nonlinearity());
    return o;
  }
};
TORCH_MODULE(RNN);

class LSTMImpl : public kiln::nn::LSTM {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<LSTMImpl>(options));
  }
  LSTMImpl(int64_t input_size, int64_t hidden_size)
      : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options)
      : kiln::nn::LSTM(options.input_size(), options.hidden_size(), kiln_options(options)),
        options(options) {}

  // (output, (h_n, c_n)).
  std::tuple<kiln::Tensor, std::tuple<kiln::Tensor, kiln::Tensor>> forward(
      const kiln::Tensor& input, optional<std::tuple<kiln::Tensor, kiln::Tensor>> hx = {}) {
    return kiln::nn::LSTM::forward(input, hx.value_or(std::tuple<kiln::Tensor, kiln::Tensor>{}));
  }
  std::vector<kiln::Tensor> all_weights() const { return flat_weights(); }

  LSTMOptions options;

 private:
  static kiln::nn::RNNOptions kiln_options(const LSTMOptions& options) {
    kiln::nn::RNNOptions o = options.to_kiln();
    o.proj_size = options.proj_size();
    return o;
  }
};
TORCH_MODULE(LSTM);

class GRUImpl : public kiln::nn::GRU {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<GRUImpl>(options));
  }
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options)
      : kiln::nn::GRU(options.input_size(), options.hidden_size(), options.to_kiln()),
        options(options) {}

  std::tuple<kiln::Tensor, kiln::Tensor> forward(const kiln::Tensor& input, kiln::Tensor hx = {}) {
    return kiln::nn::GRU::forward(input, hx);
  }
  std::vector<kiln::Tensor> all_weights() const { return flat_weights(); }

  GRUOptions options;
};
TORCH_MODULE(GRU);

// ---- cells ----

#define KILN_TORCH_RECURRENT_CELL_OPTIONS(Options)            \
  Options(int64_t input_size, int64_t hidden_size)            \
      : input_size_(input_size), hidden_size_(hidden_size) {} \
  TORCH_ARG(int64_t, input_size);                             \
  TORCH_ARG(int64_t, hidden_size);                            \
  TORCH_ARG(bool, bias) = true;

struct RNNCellOptions {
  KILN_TORCH_RECURRENT_CELL_OPTIONS(RNNCellOptions)
  TORCH_ARG(detail::rnn_nonlinearity_t, nonlinearity) = torch::kTanh;
};
struct LSTMCellOptions {
  KILN_TORCH_RECURRENT_CELL_OPTIONS(LSTMCellOptions)
};
struct GRUCellOptions {
  KILN_TORCH_RECURRENT_CELL_OPTIONS(GRUCellOptions)
};

#undef KILN_TORCH_RECURRENT_CELL_OPTIONS

class RNNCellImpl : public kiln::nn::RNNCell {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<RNNCellImpl>(options));
  }
  RNNCellImpl(int64_t input_size, int64_t hidden_size)
      : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options)
      : kiln::nn::RNNCell(options.input_size(), options.hidden_size(), options.bias(),
                          enumtype::kiln_name(options.nonlinearity())),
        options(options) {}

  kiln::Tensor forward(const kiln::Tensor& input, kiln::Tensor hx = {}) {
    return kiln::nn::RNNCell::forward(input, hx);
  }

  RNNCellOptions options;
};
TORCH_MODULE(RNNCell);

class LSTMCellImpl : public kiln::nn::LSTMCell {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<LSTMCellImpl>(options));
  }
  LSTMCellImpl(int64_t input_size, int64_t hidden_size)
      : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options)
      : kiln::nn::LSTMCell(options.input_size(), options.hidden_size(), options.bias()),
        options(options) {}

  std::tuple<kiln::Tensor, kiln::Tensor> forward(
      const kiln::Tensor& input, optional<std::tuple<kiln::Tensor, kiln::Tensor>> hx = {}) {
    return kiln::nn::LSTMCell::forward(input,
                                       hx.value_or(std::tuple<kiln::Tensor, kiln::Tensor>{}));
  }

  LSTMCellOptions options;
};
TORCH_MODULE(LSTMCell);

class GRUCellImpl : public kiln::nn::GRUCell {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<GRUCellImpl>(options));
  }
  GRUCellImpl(int64_t input_size, int64_t hidden_size)
      : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options)
      : kiln::nn::GRUCell(options.input_size(), options.hidden_size(), options.bias()),
        options(options) {}

  kiln::Tensor forward(const kiln::Tensor& input, kiln::Tensor hx = {}) {
    return kiln::nn::GRUCell::forward(input, hx);
  }

  GRUCellOptions options;
};
TORCH_MODULE(GRUCell);

}  // namespace torch::nn
