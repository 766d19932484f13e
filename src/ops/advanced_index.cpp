// Advanced indexing: the `index` and `index_put_` ops (what `t[idx_tensor]` and
// `t[idx_tensor] = v` become; see src/ops/indexing.cpp for the translation of index lists).
//
// Note [Advanced indexing shape]
// The op takes one optional index tensor per leading dim of self (None = the whole dim). Bool
// masks stand for as many dims as they have and become their nonzero() coordinates. The integer
// index tensors broadcast together to a shape S. If the indexed dims are adjacent, the result is
// self's dims before them + S + self's dims after them; if they are not adjacent, S comes first,
// followed by all non-indexed dims in order (PyTorch/NumPy rules).
#include "kiln/ops/index.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/index.h"
#include "src/kernels/cpu/shape.h"
#include "src/ops/registry.h"

namespace kiln {

// src/ops/index.cpp: Note [Data-dependent output sizes on Meta].
SymInt data_dependent_size(std::string_view op, std::string source, SymInt upper,
                           SymIntArrayRef input_shape);

namespace {

// The sizes of the result and of the broadcast index are SymInt (symbolic index lengths stay
// symbolic while tracing); kernels only see concrete ones.
struct IndexPlan {
  SymDimVector out_sizes;
  DimVector before_dims, after_dims;  // dims of self outside the index, in result order
  std::vector<int64_t> indexed_dims;  // dims of self the index tensors address
  std::vector<Tensor> indices;        // one per indexed dim, broadcast to `broadcast`
  SymDimVector broadcast;
};

// Expands masks, broadcasts the index tensors and computes the result shape. Reads mask values
// (CPU only), never index values.
IndexPlan plan_index(std::string_view op, const Tensor& self, const std::vector<Tensor>& list) {
  const int64_t nd = self.dim();
  const SymIntArrayRef self_sizes = self.sym_sizes();
  std::vector<Tensor> per_dim(static_cast<size_t>(nd));
  int64_t pos = 0;
  for (size_t e = 0; e < list.size(); ++e) {
    const Tensor& t = list[e];
    const int64_t span = t.defined() && t.dtype() == kBool ? t.dim() : 1;
    KILN_CHECK(pos + span <= nd, IndexError,
               "{}: too many indices for a tensor of dimension {} (shape {})", op, nd,
               shape_str(self_sizes));
    if (!t.defined()) {
      ++pos;
      continue;
    }
    KILN_CHECK(is_integral_or_bool(t.dtype()), IndexError,
               "{}: tensors used as indices must be integer or bool tensors, got {} (entry {})", op,
               dtype_name(t.dtype()), e);
    if (t.dtype() == kBool) {
      KILN_CHECK(t.dim() > 0, NotImplementedError,
                 "{}: a 0-dim bool index tensor is not supported by this op; index with a bool "
                 "value (t.index({{true}})) instead",
                 op);
      for (int64_t k = 0; k < t.dim(); ++k) {
        KILN_CHECK(t.sym_sizes()[k] == self_sizes[pos + k], IndexError,
                   "{}: the shape of the mask {} at index {} does not match the shape of the "
                   "indexed tensor {} at dim {}",
                   op, shape_str(t.sym_sizes()), k, shape_str(self_sizes), pos + k);
      }
      if (t.is_meta()) {
        // The mask's true count is data-dependent: an unbacked symbol while tracing,
        // NotImplementedError otherwise (Note [Data-dependent output sizes on Meta]).
        const SymInt n =
            data_dependent_size(op, "bool mask true count", t.sym_numel(), t.sym_sizes());
        const Tensor coords = empty_tensor(SymDimVector{n}, kInt64, Device::Meta);
        for (int64_t k = 0; k < t.dim(); ++k) per_dim[static_cast<size_t>(pos + k)] = coords;
      } else {
        const Tensor nz = cpu::nonzero(t);
        for (int64_t k = 0; k < t.dim(); ++k)
          per_dim[static_cast<size_t>(pos + k)] = nz.select(1, k);
      }
    } else {
      per_dim[static_cast<size_t>(pos)] = t;
    }
    pos += span;
  }
  IndexPlan plan;
  bool first = true;
  for (int64_t d = 0; d < nd; ++d) {
    const Tensor& t = per_dim[static_cast<size_t>(d)];
    if (!t.defined()) continue;
    if (first) {
      plan.broadcast = SymDimVector(t.sym_sizes().begin(), t.sym_sizes().end());
    } else {
      try {
        plan.broadcast = sym_broadcast_shapes(op, plan.broadcast, t.sym_sizes());
      } catch (const ShapeError&) {
        throw IndexError(
            fmt::format("{}: shape mismatch: the index tensors cannot be broadcast "
                        "together ({} with {} at dim {})",
                        op, shape_str(plan.broadcast), shape_str(t.sym_sizes()), d));
      }
    }
    first = false;
    plan.indexed_dims.push_back(d);
  }
  for (int64_t d : plan.indexed_dims)
    plan.indices.push_back(per_dim[static_cast<size_t>(d)].expand(plan.broadcast));
  const bool adjacent =
      plan.indexed_dims.empty() || plan.indexed_dims.back() - plan.indexed_dims.front() + 1 ==
                                       static_cast<int64_t>(plan.indexed_dims.size());
  const int64_t lo = plan.indexed_dims.empty() ? nd : plan.indexed_dims.front();
  for (int64_t d = 0; d < nd; ++d) {
    const bool indexed = per_dim[static_cast<size_t>(d)].defined();
    if (indexed) continue;
    if (adjacent && d < lo)
      plan.before_dims.push_back(d);
    else
      plan.after_dims.push_back(d);
  }
  for (int64_t d : plan.before_dims) plan.out_sizes.push_back(self_sizes[d]);
  for (SymInt s : plan.broadcast) plan.out_sizes.push_back(s);
  for (int64_t d : plan.after_dims) plan.out_sizes.push_back(self_sizes[d]);
  return plan;
}

// Element offsets into self for every result position (Note [Index checks before writes]:
// every index value is range-checked here).
cpu::AdvancedOffsets plan_offsets(std::string_view op, const Tensor& self, const IndexPlan& plan) {
  cpu::AdvancedOffsets off;
  auto table = [&](const DimVector& dims) {
    DimVector sizes, strides;
    for (int64_t d : dims) {
      sizes.push_back(self.size(d));
      strides.push_back(self.stride(d));
    }
    return cpu::offset_table(sizes, strides);
  };
  off.before = table(plan.before_dims);
  off.after = table(plan.after_dims);
  int64_t k = 1;
  for (SymInt s : plan.broadcast) k *= s.expect_int();
  off.index.assign(static_cast<size_t>(k), 0);
  for (size_t j = 0; j < plan.indexed_dims.size(); ++j) {
    const int64_t d = plan.indexed_dims[j];
    std::vector<int64_t> v = [&] {
      // Negative indices wrap, as in Python; unsigned values compare as unsigned.
      std::vector<int64_t> out(static_cast<size_t>(k));
      const Tensor& t = plan.indices[j];
      const int64_t size = self.size(d);
      visit_dtype(t.dtype(), [&]<typename T>() {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          const std::vector<T> values = t.to_vector<T>();
          for (size_t p = 0; p < values.size(); ++p) {
            const T x = values[p];
            int64_t w = static_cast<int64_t>(x);
            bool ok;
            if constexpr (std::is_unsigned_v<T>)
              ok = static_cast<uint64_t>(x) < static_cast<uint64_t>(size);
            else
              ok = w >= -size && w < size;
            KILN_CHECK(ok, IndexError,
                       "{}: index {} is out of bounds for dimension {} with size {}", op, x, d,
                       size);
            out[p] = w < 0 ? w + size : w;
          }
        }
      });
      return out;
    }();
    for (int64_t p = 0; p < k; ++p)
      off.index[static_cast<size_t>(p)] += v[static_cast<size_t>(p)] * self.stride(d);
  }
  return off;
}

void meta_index(OpCall& call) {
  const Tensor& self = call.tensor(0);
  IndexPlan plan = plan_index("index", self, call.tensors(1));
  call.set_output(0, self.dtype(), plan.out_sizes);
}

void cpu_index(OpCall& call) {
  const Tensor& self = call.tensor(0);
  IndexPlan plan = plan_index("index", self, call.tensors(1));
  const cpu::AdvancedOffsets offsets = plan_offsets("index", self, plan);
  if (offsets.rows_are_contiguous())
    cpu::gather_rows(call.output(0), self, offsets);
  else
    cpu::gather_offsets(call.output(0), self, offsets.flatten());
}

void meta_index_put(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& values = call.tensor(2);
  IndexPlan plan = plan_index("index_put_", self, call.tensors(1));
  SymDimVector shape = sym_broadcast_shapes("index_put_", plan.out_sizes, values.sym_sizes());
  KILN_CHECK(shapes_equal(shape, plan.out_sizes), ShapeError,
             "index_put_: values of shape {} cannot be broadcast to the indexed shape {}",
             shape_str(values.sym_sizes()), shape_str(plan.out_sizes));
  call.set_output(0, self);
}

void cpu_index_put(OpCall& call) {
  const Tensor& self = call.tensor(0);
  IndexPlan plan = plan_index("index_put_", self, call.tensors(1));
  const cpu::AdvancedOffsets offsets = plan_offsets("index_put_", self, plan);
  // Values in self's dtype, contiguous in result order, and not sharing self's memory (so
  // writing self cannot change them midway): the argument itself when it is so, else a copy.
  const Tensor& given = call.tensor(2);
  Tensor values = given;
  if (given.dtype() != self.dtype() || !given.is_contiguous() || given.is_alias_of(self) ||
      !shapes_equal(given.sym_sizes(), plan.out_sizes)) {
    values = empty_tensor(plan.out_sizes, self.dtype());
    cpu::copy_into(values, given);
  }
  const bool accumulate = call.bool_arg(3);
  if (!accumulate && offsets.rows_are_contiguous())
    cpu::scatter_rows(self, offsets, values);
  else
    cpu::scatter_offsets(self, offsets.flatten(), values, accumulate);
}

// The elements of self where the (broadcast) bool mask is true, as a 1-D tensor: self[mask] on
// the broadcast shape. Its length is data dependent (an unbacked size while tracing).
void composite_masked_select(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& mask = call.tensor(1);
  KILN_CHECK(mask.dtype() == kBool, DTypeError,
             "masked_select: the mask must be a bool tensor, got {} (compare it first, e.g. "
             "mask.ne(0))",
             dtype_name(mask.dtype()));
  const SymDimVector shape =
      sym_broadcast_shapes("masked_select", self.sym_sizes(), mask.sym_sizes());
  call.set_output(0, index(self.expand(shape).reshape({-1}), {mask.expand(shape).reshape({-1})}));
}

}  // namespace

void register_advanced_index_ops(OpRegistry& r) {
  r.add({.name = "masked_select",
         .schema = "masked_select(Tensor self, Tensor mask) -> Tensor",
         .family = "index",
         .composite = composite_masked_select,
         .tags = kTagDynamicOutput});
  r.add({.name = "index",
         .schema = "index(Tensor self, Tensor?[] indices) -> Tensor",
         .family = "index",
         .meta = meta_index,
         .cpu = cpu_index});
  r.add({.name = "index_put_",
         .schema = "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
                   "accumulate=False) -> Tensor(a!)",
         .family = "index",
         .meta = meta_index_put,
         .cpu = cpu_index_put,
         .tags = kTagInplace});
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  static const OpId id = op_id("masked_select");
  return dispatch::call_tensor(id, self, mask);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return kiln::masked_select(*this, mask); }

}  // namespace kiln
