// embedding: rows of a table picked by integer indices.
#include "kiln/ops/nn.h"
#include "src/ops/nn_common.h"

namespace kiln {
namespace {

// embedding(weight, indices, padding_idx?)
void meta_embedding(OpCall& call) {
  const Tensor& weight = call.tensor(0);
  const Tensor& indices = call.tensor(1);
  KILN_CHECK(weight.dim() == 2, ShapeError,
             "embedding: weight must be a 2-D table (num_embeddings, embedding_dim), got shape {}",
             shape_str(weight.sym_sizes()));
  KILN_CHECK(is_integral(indices.dtype()), DTypeError,
             "embedding: indices must have an integer dtype, got {} (shape {}); convert them with "
             ".to(kInt64)",
             dtype_name(indices.dtype()), shape_str(indices.sym_sizes()));
  const std::optional<int64_t> padding_idx = call.arg(2).optional_int();
  // The table is a parameter (concrete sizes in practice); the indices' shape may be symbolic.
  const SymInt rows = weight.sym_sizes()[0];
  if (padding_idx) {
    KILN_CHECK(*padding_idx >= -rows && *padding_idx < rows, IndexError,
               "embedding: padding_idx {} is out of range for a table of {} rows (weight of shape "
               "{})",
               *padding_idx, rows, shape_str(weight.sym_sizes()));
  }
  SymDimVector shape(indices.sym_sizes().begin(), indices.sym_sizes().end());
  shape.push_back(weight.sym_sizes()[1]);
  call.set_output(0, weight.dtype(), shape);
}

void cpu_embedding(OpCall& call) { cpu::embedding(call.tensor(0), call.tensor(1), call.output(0)); }

}  // namespace

void register_nn_embedding_ops(OpRegistry& r) {
  r.add({.name = "embedding",
         .schema = "embedding(Tensor weight, Tensor indices, int? padding_idx=None) -> Tensor",
         .family = "nn",
         .meta = meta_embedding,
         .cpu = cpu_embedding,
         .dtypes = dtypes::kAll});
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  static const OpId id = op_id("embedding");
  return dispatch::call_tensor(id, weight, indices, padding_idx);
}

}  // namespace kiln
