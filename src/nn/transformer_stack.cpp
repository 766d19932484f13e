#include "kiln/nn/transformer_stack.h"

#include "kiln/autograd.h"
#include "kiln/nn/init.h"
#include "kiln/nn/norm.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {

namespace {

// Makes `copy`, a freshly built module of the same structure as `original`, a copy of it: dtype,
// values, training mode, requires_grad. See Note [Copies of a layer].
void become_copy_of(Module& copy, const Module& original) {
  const auto params = original.named_parameters();
  if (!params.empty() && params.front().second.dtype() != copy.parameters().front().dtype())
    copy.to(params.front().second.dtype());
  copy.load_state_dict(original.state_dict());
  copy.train(original.is_training());
  const auto copied = copy.named_parameters();
  NoGradGuard no_grad;
  for (size_t i = 0; i < params.size() && i < copied.size(); ++i)
    copied[i].second.requires_grad_(params[i].second.requires_grad());
}

template <typename Layer, typename Factory>
std::shared_ptr<ModuleList> copies_of(const Layer& layer, int64_t count,
                                      const Factory& make_layer) {
  auto list = std::make_shared<ModuleList>();
  for (int64_t i = 0; i < count; ++i) {
    std::shared_ptr<Layer> copy = make_layer();
    become_copy_of(*copy, layer);
    list->push_back(std::move(copy));
  }
  return list;
}

}  // namespace

// ---- TransformerEncoder ----

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                                       std::shared_ptr<Module> norm)
    : TransformerEncoder(layer, num_layers, std::move(norm), [&layer] {
        return std::make_shared<TransformerEncoderLayer>(layer.d_model, layer.nhead, layer.options);
      }) {}

std::shared_ptr<Module> TransformerEncoder::clone() const {
  // Each copy of the layer is a clone of the first one (of its own type, a torch:: layer
  // included); finish_clone then copies every layer's own weights.
  const auto& first = layers->at<TransformerEncoderLayer>(0);
  auto copy = std::shared_ptr<TransformerEncoder>(new TransformerEncoder(
      *first, num_layers, norm ? norm->clone() : nullptr,
      [&first] { return std::dynamic_pointer_cast<TransformerEncoderLayer>(first->clone()); }));
  return finish_clone(std::move(copy));
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                                       std::shared_ptr<Module> norm, const LayerFactory& make_layer)
    : Module("TransformerEncoder"),
      num_layers(check_positive("TransformerEncoder", "num_layers", num_layers)) {
  // Registered in PyTorch's order: layers, then norm.
  layers = register_module("layers", copies_of(layer, num_layers, make_layer));
  if (norm) this->norm = register_module("norm", std::move(norm));
}

Tensor TransformerEncoder::forward(const Tensor& src) { return forward(src, {}, {}); }

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask,
                                   const Tensor& src_key_padding_mask) {
  check_input_defined(src, "src");
  Tensor x = src;
  for (const std::shared_ptr<Module>& m : *layers)
    x = static_cast<TransformerEncoderLayer&>(*m).forward(x, mask, src_key_padding_mask);
  return norm ? norm->forward(x) : x;
}

// ---- TransformerDecoder ----

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                                       std::shared_ptr<Module> norm)
    : TransformerDecoder(layer, num_layers, std::move(norm), [&layer] {
        return std::make_shared<TransformerDecoderLayer>(layer.d_model, layer.nhead, layer.options);
      }) {}

std::shared_ptr<Module> TransformerDecoder::clone() const {
  // Each copy of the layer is a clone of the first one (of its own type, a torch:: layer
  // included); finish_clone then copies every layer's own weights.
  const auto& first = layers->at<TransformerDecoderLayer>(0);
  auto copy = std::shared_ptr<TransformerDecoder>(new TransformerDecoder(
      *first, num_layers, norm ? norm->clone() : nullptr,
      [&first] { return std::dynamic_pointer_cast<TransformerDecoderLayer>(first->clone()); }));
  return finish_clone(std::move(copy));
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                                       std::shared_ptr<Module> norm, const LayerFactory& make_layer)
    : Module("TransformerDecoder"),
      num_layers(check_positive("TransformerDecoder", "num_layers", num_layers)) {
  layers = register_module("layers", copies_of(layer, num_layers, make_layer));
  if (norm) this->norm = register_module("norm", std::move(norm));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                   const Tensor& memory_key_padding_mask, bool tgt_is_causal) {
  check_input_defined(tgt, "tgt");
  check_input_defined(memory, "memory");
  Tensor x = tgt;
  for (const std::shared_ptr<Module>& m : *layers)
    x = static_cast<TransformerDecoderLayer&>(*m).forward(x, memory, tgt_mask, memory_mask,
                                                          tgt_key_padding_mask,
                                                          memory_key_padding_mask, tgt_is_causal);
  return norm ? norm->forward(x) : x;
}

// ---- Transformer ----

Transformer::Transformer(TransformerOptions options) : Module("Transformer"), options(options) {
  check_positive("Transformer", "num_encoder_layers", options.num_encoder_layers);
  check_positive("Transformer", "num_decoder_layers", options.num_decoder_layers);
  const TransformerEncoderLayerOptions layer_options{.dim_feedforward = options.dim_feedforward,
                                                     .dropout = options.dropout,
                                                     .activation = options.activation,
                                                     .layer_norm_eps = options.layer_norm_eps,
                                                     .batch_first = options.batch_first,
                                                     .norm_first = options.norm_first};
  auto final_norm = [&] {
    return std::make_shared<LayerNorm>(std::vector<int64_t>{options.d_model},
                                       options.layer_norm_eps);
  };
  {
    const TransformerEncoderLayer layer(options.d_model, options.nhead, layer_options);
    encoder = register_module("encoder", std::make_shared<TransformerEncoder>(
                                             layer, options.num_encoder_layers, final_norm()));
  }
  {
    const TransformerDecoderLayer layer(options.d_model, options.nhead, layer_options);
    decoder = register_module("decoder", std::make_shared<TransformerDecoder>(
                                             layer, options.num_decoder_layers, final_norm()));
  }
  reset_parameters();
}

void Transformer::reset_parameters() {
  for (const Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask,
                            const Tensor& tgt_mask, const Tensor& memory_mask,
                            const Tensor& src_key_padding_mask, const Tensor& tgt_key_padding_mask,
                            const Tensor& memory_key_padding_mask, bool tgt_is_causal) {
  check_input_defined(src, "src");
  check_input_defined(tgt, "tgt");
  if (src.dim() == 3) {
    const int64_t batch_dim = options.batch_first ? 0 : 1;
    KILN_CHECK(tgt.dim() == 3 && sizes_equal(src.size(batch_dim), tgt.size(batch_dim)), ShapeError,
               "Transformer: the batch number of src and tgt must be equal (dim {} with "
               "batch_first={}), got shapes {} and {}",
               batch_dim, py_bool(options.batch_first), shape_str(src.sym_sizes()),
               shape_str(tgt.sym_sizes()));
  }
  KILN_CHECK(
      sizes_equal(src.size(-1), options.d_model) && sizes_equal(tgt.size(-1), options.d_model),
      ShapeError,
      "Transformer: the feature number of src and tgt must be equal to d_model ({}), got "
      "shapes {} and {}",
      options.d_model, shape_str(src.sym_sizes()), shape_str(tgt.sym_sizes()));
  const Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                          memory_key_padding_mask, tgt_is_causal);
}

}  // namespace kiln::nn
