// Sorting: sort (values, indices) and topk; argsort is sort's indices. Kernels:
// src/kernels/cpu/sort.cpp (stable; NaN sorts as the largest value, as PyTorch).
#include "kiln/ops/reduce.h"
#include "src/kernels/cpu/reduce.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

// ---- sort: (self, int dim, bool descending, bool stable) -> (values, indices) ----

void meta_sort(OpCall& call) {
  const Tensor& x = call.tensor(0);
  wrap_dim("sort", call.int_arg(1), x.dim());
  call.set_output(0, x.dtype(), x.sym_sizes());
  call.set_output(1, kInt64, x.sym_sizes());
}
void cpu_sort(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::sort(call.output(0), call.output(1), x, wrap_dim("sort", call.int_arg(1), x.dim()),
            call.bool_arg(2));
}

// ---- topk: (self, int k, int dim, bool largest, bool sorted) -> (values, indices) ----

void meta_topk(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const int64_t k = call.int_arg(1);
  const int64_t dim = wrap_dim("topk", call.int_arg(2), x.dim());
  // With a symbolic dim size, k <= n guards (k itself is a plain int).
  const SymInt n = x.dim() == 0 ? SymInt(1) : x.sym_sizes()[dim];
  KILN_CHECK(k >= 0 && k <= n, IndexError,
             "topk: k = {} is out of range for dim {} of size {} (input of shape {}); k must be in "
             "[0, {}]",
             k, dim, n, shape_str(x.sym_sizes()), n);
  KILN_CHECK(
      x.dim() > 0 || k == 1, IndexError,
      "topk: k = {} on a 0-dim tensor: a 0-dim result always holds one value, so k must be 1", k);
  SymDimVector shape(x.sym_sizes().begin(), x.sym_sizes().end());
  if (x.dim() > 0) shape[dim] = k;
  call.set_output(0, x.dtype(), shape);
  call.set_output(1, kInt64, shape);
}
void cpu_topk(OpCall& call) {
  const Tensor& x = call.tensor(0);
  cpu::topk(call.output(0), call.output(1), x, call.int_arg(1),
            wrap_dim("topk", call.int_arg(2), x.dim()), call.bool_arg(3));
}

}  // namespace

void register_sort_ops(OpRegistry& r) {
  r.add({.name = "sort",
         .schema = "sort(Tensor self, int dim, bool descending, bool stable) -> (Tensor values, "
                   "Tensor indices)",
         .family = "sort",
         .meta = meta_sort,
         .cpu = cpu_sort,
         .dtypes = dtypes::kAll});
  r.add({.name = "topk",
         .schema = "topk(Tensor self, int k, int dim, bool largest, bool sorted) -> (Tensor "
                   "values, Tensor indices)",
         .family = "sort",
         .meta = meta_topk,
         .cpu = cpu_topk,
         .dtypes = dtypes::kAll});
}

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  static const OpId id = op_id("sort");
  Stack s = dispatch::call_boxed(id, x, dim, descending, stable);
  return {std::move(s[0].tensor()), std::move(s[1].tensor())};
}
Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return kiln::sort(x, dim, descending, stable).second;
}
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  static const OpId id = op_id("topk");
  Stack s = dispatch::call_boxed(id, x, k, dim, largest, sorted);
  return {std::move(s[0].tensor()), std::move(s[1].tensor())};
}

std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return kiln::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return kiln::argsort(*this, dim, descending, stable);
}
std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return kiln::topk(*this, k, dim, largest, sorted);
}

}  // namespace kiln
