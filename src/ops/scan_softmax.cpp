// Scans (cumsum, cumprod) and softmax / log_softmax: ops along one dim whose output has the
// input's shape. Kernels: src/kernels/cpu/reduce_stats.cpp (scans), softmax.cpp.
#include "kiln/ops/reduce.h"
#include "src/kernels/cpu/reduce.h"
#include "src/ops/reduce_utils.h"

namespace kiln {
namespace {

using namespace reduce_utils;

// ---- cumsum, cumprod: (self, int dim, ScalarType? dtype) ----

void meta_cumsum(OpCall& call) {
  const Tensor& x = call.tensor(0);
  wrap_dim(call.name(), call.int_arg(1), x.dim());
  call.set_output(0, sum_dtype(x.dtype(), call.arg(2).optional_dtype()), x.sym_sizes());
}
void cpu_cumsum(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const Tensor& out = call.output(0);
  cpu::cumulative(call.name() == "cumprod", out, x.to(out.dtype()),
                  wrap_dim(call.name(), call.int_arg(1), x.dim()));
}

// ---- softmax, log_softmax: (self, int dim, ScalarType? dtype) ----

void meta_softmax(OpCall& call) {
  const Tensor& x = call.tensor(0);
  wrap_dim(call.name(), call.int_arg(1), x.dim());
  const std::optional<ScalarType> dtype = call.arg(2).optional_dtype();
  const ScalarType out = dtype.value_or(x.dtype());
  KILN_CHECK(is_floating(out), DTypeError,
             "{}: not implemented for {} (input of shape {}{}); softmax needs a floating input or "
             "a floating dtype= (e.g. dtype=float32)",
             call.name(), dtype_name(out), shape_str(x.sym_sizes()),
             dtype ? fmt::format(", dtype={}", dtype_name(*dtype)) : std::string());
  call.set_output(0, out, x.sym_sizes());
}
void cpu_softmax(OpCall& call) {
  const Tensor& x = call.tensor(0);
  const Tensor& out = call.output(0);
  cpu::softmax(out, x.to(out.dtype()), wrap_dim(call.name(), call.int_arg(1), x.dim()),
               call.name() == "log_softmax");
}

OpDef along_dim(std::string name, std::string schema, MetaFn meta, KernelFn cpu) {
  return {.name = std::move(name),
          .schema = std::move(schema),
          .family = "reduce",
          .meta = meta,
          .cpu = cpu,
          .dtypes = dtypes::kAll};
}

}  // namespace

void register_scan_softmax_ops(OpRegistry& r) {
  r.add(along_dim("cumsum", "cumsum(Tensor self, int dim, ScalarType? dtype) -> Tensor",
                  meta_cumsum, cpu_cumsum));
  r.add(along_dim("cumprod", "cumprod(Tensor self, int dim, ScalarType? dtype) -> Tensor",
                  meta_cumsum, cpu_cumsum));
  r.add(along_dim("softmax", "softmax(Tensor self, int dim, ScalarType? dtype) -> Tensor",
                  meta_softmax, cpu_softmax));
  r.add(along_dim("log_softmax", "log_softmax(Tensor self, int dim, ScalarType? dtype) -> Tensor",
                  meta_softmax, cpu_softmax));
}

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpId id = op_id("cumsum");
  return dispatch::call_tensor(id, x, dim, dtype);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpId id = op_id("cumprod");
  return dispatch::call_tensor(id, x, dim, dtype);
}
Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpId id = op_id("softmax");
  return dispatch::call_tensor(id, x, dim, dtype);
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpId id = op_id("log_softmax");
  return dispatch::call_tensor(id, x, dim, dtype);
}

Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::cumsum(*this, dim, dtype);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::cumprod(*this, dim, dtype);
}
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::softmax(*this, dim, dtype);
}
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::log_softmax(*this, dim, dtype);
}

}  // namespace kiln
