// Index ops: index_select, gather, scatter, scatter_add, index, index_put_, nonzero, one_hot.
//
// Note [Index checks before writes]
// Every index value is read and range-checked (IndexError naming the op, the index and the dim
// size) before a kernel touches memory, and turned into element offsets; the kernels in
// src/kernels/cpu/index.cpp only move data. So a bad index never leaves a partial write behind
// and never reads or writes out of bounds. Unsigned index tensors are first class: their values
// are compared as unsigned, so a huge uint64 index is out of range instead of wrapping to -1.
#include "kiln/ops/index.h"
#include "kiln/ops/creation.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/index.h"
#include "src/kernels/cpu/shape.h"
#include "src/ops/registry.h"
#include "src/sym/shape_env.h"

namespace kiln {

// See Note [Data-dependent output sizes on Meta] (defined below).
SymInt data_dependent_size(std::string_view op, std::string source, SymInt upper,
                           SymIntArrayRef input_shape);

namespace {

// Index values of `index` in row-major order, checked against the dim size and wrapped.
std::vector<int64_t> read_indices(std::string_view op, const Tensor& index, int64_t dim,
                                  int64_t size, bool allow_negative) {
  std::vector<int64_t> out(static_cast<size_t>(index.numel()));
  visit_dtype(index.dtype(), [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const std::vector<T> values = index.to_vector<T>();
      for (size_t p = 0; p < values.size(); ++p) {
        const T v = values[p];
        bool ok;
        int64_t w = 0;
        if constexpr (std::is_unsigned_v<T>) {
          ok = static_cast<uint64_t>(v) < static_cast<uint64_t>(size);
          w = static_cast<int64_t>(v);
        } else {
          w = static_cast<int64_t>(v);
          ok = w < size && (allow_negative ? w >= -size : w >= 0);
          if (w < 0) w += size;
        }
        KILN_CHECK(ok, IndexError, "{}: index {} is out of bounds for dimension {} with size {}",
                   op, v, dim, size);
        out[p] = w;
      }
    }
  });
  return out;
}

void check_integer_index(std::string_view op, const Tensor& index) {
  KILN_CHECK(is_integral(index.dtype()), DTypeError,
             "{}: the index tensor must have an integer dtype (int64, int32, uint8, ...), got {}",
             op, dtype_name(index.dtype()));
}

DimVector sizes_of(const Tensor& t) { return DimVector(t.sizes().begin(), t.sizes().end()); }
SymDimVector sym_sizes_of(const Tensor& t) {
  return SymDimVector(t.sym_sizes().begin(), t.sym_sizes().end());
}

// A 0-dim tensor as a 1-element 1-D view, so gather/scatter treat dims uniformly.
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.as_strided({1}, {1}) : t; }

// ---- index_select ----

void meta_index_select(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  check_integer_index("index_select", index);
  KILN_CHECK(index.dim() <= 1, IndexError,
             "index_select: the index must be a 0-dim or 1-D tensor, got shape {}",
             shape_str(index.sym_sizes()));
  const int64_t d = wrap_dim("index_select", call.int_arg(1), self.dim());
  // The index's length, symbolic when the index's size is (e.g. a batch of ids).
  SymDimVector sizes = sym_sizes_of(self);
  if (self.dim() > 0)
    sizes[d] = index.sym_numel();
  else if (index.dim() == 1)
    sizes.push_back(index.sym_numel());
  call.set_output(0, self.dtype(), sizes);
}

void cpu_index_select(OpCall& call) {
  const Tensor self = as_1d(call.tensor(0));
  const Tensor& index = call.tensor(2);
  const Tensor& out = call.output(0);
  const int64_t d = wrap_dim("index_select", call.int_arg(1), self.dim());
  std::vector<int64_t> idx = read_indices("index_select", index, d, self.size(d), false);
  // Selected rows of a row-major block (x.index_select(0, rows) on a contiguous x): whole rows.
  bool rows = d == 0 && self.dim() > 1;
  int64_t row = 1;
  for (int64_t k = self.dim() - 1; k > 0 && rows; --k) {
    rows = self.size(k) == 1 || self.stride(k) == row;
    row *= self.size(k);
  }
  if (rows && row > 1) {
    cpu::AdvancedOffsets offsets;
    offsets.before = {0};
    for (int64_t i : idx) offsets.index.push_back(i * self.stride(0));
    for (int64_t a = 0; a < row; ++a) offsets.after.push_back(a);
    cpu::gather_rows(out, self, offsets);
    return;
  }
  std::vector<std::vector<int64_t>> tables;
  for (int64_t k = 0; k < self.dim(); ++k) {
    std::vector<int64_t> t;
    if (k == d) {
      for (int64_t i : idx) t.push_back(i * self.stride(k));
    } else {
      for (int64_t i = 0; i < self.size(k); ++i) t.push_back(i * self.stride(k));
    }
    tables.push_back(std::move(t));
  }
  DimVector shape = sizes_of(self);
  shape[d] = index.numel();
  cpu::separable_gather(out.as_strided(shape, contiguous_strides(shape)), self, tables, 0);
}

// ---- gather / scatter ----

// Shape rules shared by gather and scatter (PyTorch's): same rank, index no larger than self
// outside `dim` (and no larger than src anywhere, for scatter).
int64_t check_gather_scatter(std::string_view op, const Tensor& self, int64_t dim,
                             const Tensor& index, const Tensor* src) {
  check_integer_index(op, index);
  const int64_t d = wrap_dim(op, dim, self.dim());
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  KILN_CHECK(std::max<int64_t>(index.dim(), 1) == nd, ShapeError,
             "{}: the index (shape {}) must have as many dims as the input (shape {})", op,
             shape_str(index.sym_sizes()), shape_str(self.sym_sizes()));
  // Sizes as 1-D for 0-dim tensors (like as_1d, without making a view).
  auto sizes_1d = [](const Tensor& t) { return t.dim() == 0 ? SymDimVector{1} : sym_sizes_of(t); };
  const SymDimVector s = sizes_1d(self), i = sizes_1d(index);
  // With symbolic sizes these comparisons guard (the index is no larger than the input).
  for (int64_t k = 0; k < nd; ++k) {
    KILN_CHECK(k == d || i[k] <= s[k], ShapeError,
               "{}: the index of shape {} is larger than the input of shape {} in dim {}", op,
               shape_str(index.sym_sizes()), shape_str(self.sym_sizes()), k);
  }
  if (src != nullptr) {
    KILN_CHECK(std::max<int64_t>(src->dim(), 1) == nd, ShapeError,
               "{}: src (shape {}) must have as many dims as the index (shape {})", op,
               shape_str(src->sym_sizes()), shape_str(index.sym_sizes()));
    const SymDimVector sr = sizes_1d(*src);
    for (int64_t k = 0; k < nd; ++k) {
      KILN_CHECK(i[k] <= sr[k], ShapeError,
                 "{}: the index of shape {} is larger than src of shape {} in dim {}", op,
                 shape_str(index.sym_sizes()), shape_str(src->sym_sizes()), k);
    }
  }
  return d;
}

// Offsets into `t` (strides of t) of every index position, with dim `d` taken from the index.
std::vector<int64_t> gather_scatter_offsets(std::string_view op, const Tensor& t, int64_t d,
                                            const Tensor& index) {
  const Tensor t1 = as_1d(t), i1 = as_1d(index);
  std::vector<int64_t> idx = read_indices(op, i1, d, t1.size(d), false);
  DimVector strides(t1.strides().begin(), t1.strides().end());
  const int64_t dim_stride = strides[d];
  strides[d] = 0;
  std::vector<int64_t> offsets = cpu::offset_table(i1.sizes(), strides);
  for (size_t p = 0; p < offsets.size(); ++p) offsets[p] += idx[p] * dim_stride;
  return offsets;
}

void meta_gather(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  check_gather_scatter("gather", self, call.int_arg(1), index, nullptr);
  call.set_output(0, self.dtype(), index.sym_sizes());
}

void cpu_gather(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t d = wrap_dim("gather", call.int_arg(1), self.dim());
  cpu::gather_offsets(call.output(0), self,
                      gather_scatter_offsets("gather", self, d, call.tensor(2)));
}

void meta_scatter(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  const IValue& src = call.arg(3);
  if (src.is_tensor()) {
    KILN_CHECK(src.tensor().dtype() == self.dtype(), DTypeError,
               "{}: src dtype {} must match the input dtype {}; convert src with .to({})",
               call.name(), dtype_name(src.tensor().dtype()), dtype_name(self.dtype()),
               dtype_name(self.dtype()));
    check_gather_scatter(call.name(), self, call.int_arg(1), index, &src.tensor());
  } else {
    check_gather_scatter(call.name(), self, call.int_arg(1), index, nullptr);
  }
  call.set_output(0, self.dtype(), self.sym_sizes());
}

void cpu_scatter(OpCall& call, bool accumulate) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  const Tensor& out = call.output(0);
  const int64_t d = wrap_dim(call.name(), call.int_arg(1), self.dim());
  // Offsets first (Note [Index checks before writes]), then the copy of self, then the writes.
  std::vector<int64_t> offsets = gather_scatter_offsets(call.name(), out, d, index);
  Tensor values;
  if (call.arg(3).is_tensor()) {
    const Tensor src = as_1d(call.tensor(3));
    const Tensor i1 = as_1d(index);
    // The part of src the index covers, in the index's row-major order.
    values = empty_tensor(i1.sizes(), self.dtype());
    cpu::gather_offsets(values, src, cpu::offset_table(i1.sizes(), src.strides()));
  } else {
    values = full(as_1d(index).sizes(), call.scalar(3), self.dtype());
  }
  cpu::copy_into(out, self);
  cpu::scatter_offsets(out, offsets, values, accumulate);
}
void cpu_scatter_set(OpCall& call) { cpu_scatter(call, false); }
void cpu_scatter_add(OpCall& call) { cpu_scatter(call, true); }

// ---- nonzero ----

void meta_nonzero(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const SymInt rows =
      data_dependent_size("nonzero", "nonzero output size", self.sym_numel(), self.sym_sizes());
  call.set_output(0, kInt64, SymDimVector{rows, self.dim()});
}
void cpu_nonzero(OpCall& call) { call.set_output(0, cpu::nonzero(call.tensor(0))); }

// ---- one_hot ----

SymInt one_hot_classes(OpCall& call) {
  const Tensor& self = call.tensor(0);
  int64_t classes = call.int_arg(1);
  KILN_CHECK(classes >= -1, ValueError, "one_hot: num_classes must be -1 (infer) or >= 0, got {}",
             classes);
  if (classes != -1) return classes;
  // The largest value + 1: data-dependent, an unbacked symbol while tracing (Note [Data-dependent
  // output sizes on Meta]).
  if (sym::ShapeEnv* env = sym::ShapeEnv::current(); env != nullptr && self.is_meta())
    return env->create_unbacked_symbol("one_hot num_classes", sym::ValueRange::at_least(1));
  KILN_CHECK(!self.is_meta(), NotImplementedError,
             "one_hot: num_classes=-1 infers the count from the values, which Meta tensors lack; "
             "pass num_classes");
  KILN_CHECK(self.numel() > 0, ValueError,
             "one_hot: cannot infer num_classes from an empty tensor (shape {}); pass num_classes",
             shape_str(self.sizes()));
  int64_t max = 0;
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      for (T v : self.to_vector<T>()) {
        // Values beyond int64 are reported by the range check in the kernel.
        const bool huge = std::is_unsigned_v<T> && static_cast<uint64_t>(v) > uint64_t{INT64_MAX};
        max = std::max(max, huge ? INT64_MAX - 1 : static_cast<int64_t>(v));
      }
    }
  });
  return max + 1;
}

void meta_one_hot(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SymDimVector sizes = sym_sizes_of(self);
  sizes.push_back(one_hot_classes(call));
  call.set_output(0, kInt64, sizes);
}

void cpu_one_hot(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& out = call.output(0);
  const int64_t classes = out.size(-1);
  std::vector<int64_t> idx = read_indices("one_hot", self, self.dim(), classes, false);
  int64_t* o = out.data_ptr<int64_t>();
  std::fill(o, o + out.numel(), 0);
  for (size_t p = 0; p < idx.size(); ++p) o[static_cast<int64_t>(p) * classes + idx[p]] = 1;
}

}  // namespace

// Note [Data-dependent output sizes on Meta]
// nonzero's row count depends on the input's values, which Meta tensors lack. While tracing (a
// ShapeEnv is current) it becomes a fresh unbacked symbol u0 with range [0, numel]: later ops
// compute with it symbolically, and code that must branch on it graph-breaks (DataDependentError).
// Outside a trace Meta cannot answer, so it raises NotImplementedError as before. The CPU kernel
// allocates the exact output (kTagDynamicOutput). Advanced indexing with a bool mask
// (src/ops/advanced_index.cpp) and one_hot's inferred class count do the same.
SymInt data_dependent_size(std::string_view op, std::string source, SymInt upper,
                           SymIntArrayRef input_shape) {
  sym::ShapeEnv* env = sym::ShapeEnv::current();
  KILN_CHECK(env != nullptr, NotImplementedError,
             "{}: the output shape depends on the input's values (input shape {}); run it on CPU "
             "tensors, or trace it under a ShapeEnv to get a data-dependent size",
             op, shape_str(input_shape));
  if (upper.is_concrete())
    return env->create_unbacked_symbol(std::move(source),
                                       sym::ValueRange::between(0, upper.expect_int()));
  // A symbolic bound is no value range: record it as a runtime assert instead.
  const SymInt size = env->create_unbacked_symbol(std::move(source), sym::ValueRange::at_least(0));
  check(size <= upper);
  return size;
}

void register_advanced_index_ops(OpRegistry& r);  // src/ops/advanced_index.cpp
void register_unique_ops(OpRegistry& r);          // src/ops/unique.cpp

void register_index_ops(OpRegistry& r) {
  r.add({.name = "index_select",
         .schema = "index_select(Tensor self, int dim, Tensor index) -> Tensor",
         .family = "index",
         .meta = meta_index_select,
         .cpu = cpu_index_select});
  r.add({.name = "gather",
         .schema = "gather(Tensor self, int dim, Tensor index) -> Tensor",
         .family = "index",
         .meta = meta_gather,
         .cpu = cpu_gather});
  r.add({.name = "scatter.src",
         .schema = "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
         .family = "index",
         .meta = meta_scatter,
         .cpu = cpu_scatter_set});
  r.add({.name = "scatter.value",
         .schema = "scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
         .family = "index",
         .meta = meta_scatter,
         .cpu = cpu_scatter_set});
  r.add({.name = "scatter_add",
         .schema = "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
         .family = "index",
         .meta = meta_scatter,
         .cpu = cpu_scatter_add});
  r.add({.name = "nonzero",
         .schema = "nonzero(Tensor self) -> Tensor",
         .family = "index",
         .meta = meta_nonzero,
         .cpu = cpu_nonzero,
         .tags = kTagDynamicOutput | kTagNondifferentiable});
  r.add({.name = "one_hot",
         .schema = "one_hot(Tensor self, int num_classes=-1) -> Tensor",
         .family = "index",
         .meta = meta_one_hot,
         .cpu = cpu_one_hot,
         .dtypes = dtypes::kIntegral,
         .tags = kTagNondifferentiable});
  register_advanced_index_ops(r);
  register_unique_ops(r);
}

// ---- wrappers ----

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  static const OpId id = op_id("index_select");
  return dispatch::call_tensor(id, *this, dim, index);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  static const OpId id = op_id("gather");
  return dispatch::call_tensor(id, *this, dim, index);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  static const OpId id = op_id("scatter.src");
  return dispatch::call_tensor(id, *this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  static const OpId id = op_id("scatter.value");
  return dispatch::call_tensor(id, *this, dim, index, value);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  static const OpId id = op_id("scatter_add");
  return dispatch::call_tensor(id, *this, dim, index, src);
}
Tensor Tensor::nonzero() const {
  static const OpId id = op_id("nonzero");
  return dispatch::call_tensor(id, *this);
}
Tensor one_hot(const Tensor& self, int64_t num_classes) {
  static const OpId id = op_id("one_hot");
  return dispatch::call_tensor(id, self, num_classes);
}

}  // namespace kiln
