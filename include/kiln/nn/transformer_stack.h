// Stacks of transformer layers, as torch.nn.TransformerEncoder, TransformerDecoder and
// Transformer (the encoder-decoder model of "Attention Is All You Need").
//
//   nn::TransformerEncoderLayer layer(64, 4, {.dim_feedforward = 128, .batch_first = true});
//   nn::TransformerEncoder encoder(layer, 3);   // three layers, each starting as a copy of `layer`
//   Tensor memory = encoder.forward(src, {}, src_key_padding_mask);
//
//   nn::Transformer model({.d_model = 64, .nhead = 4, .num_encoder_layers = 2});
//   Tensor mask = nn::generate_square_subsequent_mask(tgt.size(0));
//   Tensor out = model.forward(src, tgt, {}, mask);
//
// Note [Copies of a layer]
// PyTorch's stacks hold copy.deepcopy()s of the layer they are given, so every layer of a stack
// starts with the same weights as that layer (and as each other), and the given layer itself is
// not part of the stack. Kiln's modules cannot be copied (each owns the slots its parameters live
// in, Note [Parameter slots] in kiln/nn/module.h), so a stack builds each copy anew from the
// layer's d_model, nhead and options, converts it to the layer's dtype, loads the layer's state
// dict into it and copies its training mode and which parameters require grad.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kiln/nn/container.h"
#include "kiln/nn/module.h"
#include "kiln/nn/transformer.h"

namespace kiln::nn {

// Submodules: layers (a ModuleList "0", "1", ...) and, when given, norm: state dict keys are
// PyTorch's ("layers.0.self_attn.in_proj_weight", "norm.weight").
class TransformerEncoder : public Module {
 public:
  // Clones its layers and its norm.
  std::shared_ptr<Module> clone() const override;
  // num_layers copies of `layer` (Note [Copies of a layer]); `norm` (LayerNorm in PyTorch's
  // models, or any module) runs after the last layer; nullptr for none.
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                     std::shared_ptr<Module> norm = nullptr);

  Tensor forward(const Tensor& src) override;
  // mask and src_key_padding_mask go to every layer (TransformerEncoderLayer::forward).
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {});

  const int64_t num_layers;
  std::shared_ptr<ModuleList> layers;  // of TransformerEncoderLayer
  std::shared_ptr<Module> norm;        // null when there is none

 protected:
  // For front ends whose layer type derives from TransformerEncoderLayer: `make_layer` builds
  // one fresh layer of that type, which the constructor makes a copy of `layer`.
  using LayerFactory = std::function<std::shared_ptr<TransformerEncoderLayer>()>;
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                     std::shared_ptr<Module> norm, const LayerFactory& make_layer);
};

class TransformerDecoder : public Module {
 public:
  // Clones its layers and its norm.
  std::shared_ptr<Module> clone() const override;
  // As TransformerEncoder's.
  TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                     std::shared_ptr<Module> norm = nullptr);

  // The arguments go to every layer (TransformerDecoderLayer::forward).
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false);
  // The one-tensor forward raises NotImplementedError: a decoder needs memory.
  using Module::forward;

  const int64_t num_layers;
  std::shared_ptr<ModuleList> layers;  // of TransformerDecoderLayer
  std::shared_ptr<Module> norm;        // null when there is none

 protected:
  using LayerFactory = std::function<std::shared_ptr<TransformerDecoderLayer>()>;
  TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                     std::shared_ptr<Module> norm, const LayerFactory& make_layer);
};

// torch.nn.Transformer's arguments and defaults.
struct TransformerOptions {
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // "relu" or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
};

// Submodules encoder (TransformerEncoder with a final LayerNorm) and decoder (TransformerDecoder
// with a final LayerNorm). As PyTorch's, the constructor re-initializes every parameter of more
// than one dimension with xavier_uniform_ (reset_parameters) after the layers were copied, so
// the layers' weight matrices differ while their biases and norms start equal.
class Transformer : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Transformer>(options));
  }
  explicit Transformer(TransformerOptions options = {});

  // src (S, N, E) and tgt (T, N, E) ((N, S, E), (N, T, E) with batch_first; unbatched (S, E),
  // (T, E)); returns the decoder's output, shaped like tgt. src_mask goes to the encoder,
  // memory_mask and memory_key_padding_mask to the decoder's cross-attention.
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {},
                 const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& src_key_padding_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false);
  // The one-tensor forward raises NotImplementedError: a transformer needs src and tgt.
  using Module::forward;

  // xavier_uniform_ on every parameter with more than one dimension.
  void reset_parameters();
  static Tensor generate_square_subsequent_mask(const SymInt& size, ScalarType dtype = kFloat32) {
    return nn::generate_square_subsequent_mask(size, dtype);
  }

  const TransformerOptions options;
  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace kiln::nn
