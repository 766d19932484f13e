// The nn op family: normalizations (nn_norm.cpp), embedding (nn_embedding.cpp), attention
// (nn_attention.cpp), losses (nn_loss.cpp), the backward ops of their derivatives
// (nn_backward.cpp), and the composites upsample_* (nn_upsample.cpp) and pixel_(un)shuffle
// (nn_pixel_shuffle.cpp). Kernels: src/kernels/cpu/{norm,norm_backward,embedding,attention,loss,
// loss_backward}.cpp. Public API: include/kiln/ops/nn.h (the backward ops: src/ops/nn_backward.h).
#include "src/ops/nn_common.h"

namespace kiln {

void register_nn_ops(OpRegistry& r) {
  register_nn_norm_ops(r);
  register_nn_embedding_ops(r);
  register_nn_attention_ops(r);
  register_nn_loss_ops(r);
  register_nn_backward_ops(r);
  register_nn_upsample_ops(r);
  register_nn_pixel_shuffle_ops(r);
}

}  // namespace kiln
