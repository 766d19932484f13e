// Recurrent layers and cells, as torch.nn.RNN / LSTM / GRU and RNNCell / LSTMCell / GRUCell:
// multi-layer, bidirectional, batch_first, dropout between layers, LSTM's proj_size. Packed
// sequences (torch.nn.utils.rnn.PackedSequence) are not supported yet: pad the batch instead.
//
// Parameters have PyTorch's names and shapes, so state dicts load either way: per layer k (and
// `_reverse` for the backward direction) weight_ih_l{k} (G * hidden, input), weight_hh_l{k}
// (G * hidden, hidden or proj_size), bias_ih_l{k} and bias_hh_l{k} (G * hidden), and with
// proj_size weight_hr_l{k} (proj_size, hidden); G is 1 (RNN), 4 (LSTM: gates i, f, g, o) or
// 3 (GRU: gates r, z, n). All are initialized U(-1/sqrt(hidden), 1/sqrt(hidden)), as PyTorch.
//
// Each layer's time loop is a kiln::scan (See Note [A recurrent layer as a scan] in
// src/nn/rnn.cpp), so under kiln::compile a layer is one loop node whatever the sequence length.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

struct RNNOptions {
  int64_t num_layers = 1;
  bool bias = true;          // false: no bias_ih / bias_hh
  bool batch_first = false;  // input and output (N, L, H_in) instead of (L, N, H_in)
  double dropout = 0.0;      // dropout on every layer's output but the last, in training
  bool bidirectional = false;
  std::string nonlinearity = "tanh";  // RNN only: "tanh" or "relu"
  int64_t proj_size = 0;              // LSTM only: project h to this size (0: no projection)
};

// What a recurrent layer computes per step: See Note [Recurrent cells] in src/nn/rnn.cpp.
enum class RecurrentMode { RnnTanh, RnnRelu, Lstm, Gru };

// The shared machinery of RNN, LSTM and GRU: parameters, checks and the layer loop.
class RNNBase : public Module {
 public:
  const RecurrentMode mode;
  const int64_t input_size;
  const int64_t hidden_size;
  const RNNOptions options;

  // The parameters of layer `layer` and direction `direction` (0 forward, 1 backward) in
  // PyTorch's order: w_ih, w_hh, then b_ih, b_hh (with bias), then w_hr (with proj_size).
  std::vector<Tensor> layer_parameters(int64_t layer, int64_t direction) const;
  // Every parameter, layer by layer (PyTorch's all_weights, flattened).
  std::vector<Tensor> flat_weights() const;
  void reset_parameters();
  std::string extra_repr() const override;

 protected:
  RNNBase(std::string name, RecurrentMode mode, int64_t input_size, int64_t hidden_size,
          RNNOptions options);

  // input (L, N, H_in), (N, L, H_in) with batch_first, or unbatched (L, H_in); states each
  // (layers * directions, N, size) or unbatched (layers * directions, size), undefined for
  // zeros. Returns the output and the final states (h, and c for an LSTM).
  std::pair<Tensor, std::vector<Tensor>> run(const Tensor& input,
                                             const std::vector<Tensor>& states) const;

 private:
  int64_t directions() const { return options.bidirectional ? 2 : 1; }
  int64_t output_size() const { return options.proj_size > 0 ? options.proj_size : hidden_size; }
  std::vector<std::vector<Tensor*>> slots_;  // [layer * directions + direction] -> parameters
};

// Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (relu with nonlinearity "relu").
class RNN : public RNNBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<RNN>(input_size, hidden_size, options));
  }
  RNN(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  // The output alone (so an RNN can sit in a Sequential).
  Tensor forward(const Tensor& input) override;
  // (output, h_n); hx undefined means zeros.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx);
};

class LSTM : public RNNBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<LSTM>(input_size, hidden_size, options));
  }
  LSTM(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  Tensor forward(const Tensor& input) override;
  // (output, (h_n, c_n)); h0 and c0 undefined mean zeros.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         const std::tuple<Tensor, Tensor>& hx);
};

class GRU : public RNNBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<GRU>(input_size, hidden_size, options));
  }
  GRU(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx);
};

// ---- cells: one step, input (N, H_in) or unbatched (H_in) ----

class RNNCellBase : public Module {
 public:
  const RecurrentMode mode;
  const int64_t input_size;
  const int64_t hidden_size;
  const bool bias;
  Tensor& weight_ih;
  Tensor& weight_hh;
  Tensor& bias_ih;  // undefined without bias
  Tensor& bias_hh;
  void reset_parameters();
  std::string extra_repr() const override;

 protected:
  RNNCellBase(std::string name, RecurrentMode mode, int64_t input_size, int64_t hidden_size,
              bool bias);
  // The next states from input and states (undefined: zeros), batched or not.
  std::vector<Tensor> step(const Tensor& input, const std::vector<Tensor>& states) const;
};

class RNNCell : public RNNCellBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<RNNCell>(
        input_size, hidden_size, bias, mode == RecurrentMode::RnnRelu ? "relu" : "tanh"));
  }
  RNNCell(int64_t input_size, int64_t hidden_size, bool bias = true,
          std::string nonlinearity = "tanh");
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  Tensor forward(const Tensor& input, const Tensor& hx);
};

class LSTMCell : public RNNCellBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<LSTMCell>(input_size, hidden_size, bias));
  }
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  // (h', c'); h and c undefined mean zeros.
  std::tuple<Tensor, Tensor> forward(const Tensor& input,
                                     const std::tuple<Tensor, Tensor>& hx = {});
};

class GRUCell : public RNNCellBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<GRUCell>(input_size, hidden_size, bias));
  }
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  Tensor forward(const Tensor& input, const Tensor& hx);
};

}  // namespace kiln::nn
