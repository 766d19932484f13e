// Ops whose output length is a count of the input's values: unique (how many distinct values)
// and repeat_interleave with tensor repeats (their sum). Under a trace the length is an unbacked
// symbol (Note [Data-dependent output sizes on Meta] in src/ops/index.cpp); the CPU kernels
// allocate the exact outputs (kTagDynamicOutput), and the generated code binds the symbol from
// them. repeat_interleave of a tensor is index_select by repeat_interleave(repeats): a composite,
// so it is differentiable and its length flows from the index.
#include "kiln/autograd.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/index.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "src/core/shape.h"
#include "src/ops/registry.h"
#include "src/sym/shape_env.h"

namespace kiln {

SymInt data_dependent_size(std::string_view op, std::string source, SymInt upper,
                           SymIntArrayRef input_shape);  // src/ops/index.cpp

namespace {

// ---- unique(self) -> (values [u], inverse [self's shape], counts [u]) ----

void meta_unique(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const SymInt u =
      data_dependent_size("unique", "unique output size", self.sym_numel(), self.sym_sizes());
  call.set_output(0, self.dtype(), SymDimVector{u});
  call.set_output(1, kInt64, self.sym_sizes());
  call.set_output(2, kInt64, SymDimVector{u});
}

// Sort (stable, NaN last), then a new value starts wherever a sorted element differs from the one
// before it (NaN differs from everything, itself included: each NaN is its own value, as in
// PyTorch). The running count of starts numbers each element's value.
void cpu_unique(OpCall& call) {
  const NoGradGuard no_grad;
  const Tensor& self = call.tensor(0);
  const int64_t n = self.numel();
  if (n == 0) {
    call.set_output(0, empty({0}, self.dtype()));
    call.set_output(1, empty(self.sizes(), kInt64));
    call.set_output(2, empty({0}, kInt64));
    return;
  }
  const auto [sorted, order] = sort(self.reshape({-1}), 0, /*descending=*/false, /*stable=*/true);
  const Tensor starts =
      cat({ones({1}, kBool), sorted.slice(0, 1, n, 1).ne(sorted.slice(0, 0, n - 1, 1))}, 0);
  const Tensor value_index = starts.cumsum(0, kInt64) - 1;
  const int64_t u = value_index.select(0, n - 1).item<int64_t>() + 1;
  call.set_output(0, sorted.masked_select(starts));
  call.set_output(1, zeros({n}, kInt64).scatter(0, order, value_index).reshape(self.sizes()));
  call.set_output(2, zeros({u}, kInt64).scatter_add(0, value_index, ones({n}, kInt64)));
}

// ---- repeat_interleave(repeats, output_size) -> [sum(repeats)] ----

void check_repeats(const Tensor& repeats) {
  KILN_CHECK(repeats.dim() == 1 && is_integral(repeats.dtype()), ValueError,
             "repeat_interleave: repeats must be a 1-D integer tensor, got {} {}",
             dtype_name(repeats.dtype()), shape_str(repeats.sym_sizes()));
}

void meta_repeat_interleave(OpCall& call) {
  const Tensor& repeats = call.tensor(0);
  check_repeats(repeats);
  SymInt length;
  if (const std::optional<SymInt> given = call.arg(1).optional_sym_int()) {
    KILN_CHECK(*given >= 0, ValueError, "repeat_interleave: output_size must be >= 0, got {}",
               *given);
    length = *given;
  } else {
    sym::ShapeEnv* env = sym::ShapeEnv::current();
    KILN_CHECK(env != nullptr, NotImplementedError,
               "repeat_interleave: the output length is the sum of the repeats' values, which "
               "Meta tensors lack; pass output_size, or trace it under a ShapeEnv");
    length =
        env->create_unbacked_symbol("repeat_interleave output size", sym::ValueRange::at_least(0));
  }
  call.set_output(0, repeats.dtype(), SymDimVector{length});
}

void cpu_repeat_interleave(OpCall& call) {
  const Tensor& repeats = call.tensor(0);
  check_repeats(repeats);
  const std::vector<int64_t> counts = repeats.to(kInt64).to_vector<int64_t>();
  std::vector<int64_t> index;
  for (size_t i = 0; i < counts.size(); ++i) {
    KILN_CHECK(counts[i] >= 0, ValueError,
               "repeat_interleave: repeats must be non-negative, got {} at index {}", counts[i], i);
    index.insert(index.end(), static_cast<size_t>(counts[i]), static_cast<int64_t>(i));
  }
  const int64_t total = static_cast<int64_t>(index.size());
  if (const std::optional<int64_t> given = call.arg(1).optional_int())
    KILN_CHECK(*given == total, ValueError,
               "repeat_interleave: output_size is {} but the repeats sum to {}", *given, total);
  call.set_output(0, from_vector(index).to(repeats.dtype()));
}

// ---- repeat_interleave(self, Tensor repeats, dim, output_size): index_select ----

void composite_repeat_interleave_tensor(OpCall& call) {
  const std::optional<int64_t> dim_arg = call.arg(2).optional_int();
  const Tensor self = dim_arg ? call.tensor(0) : call.tensor(0).reshape({-1});
  const int64_t dim = dim_arg ? wrap_dim("repeat_interleave", *dim_arg, self.dim()) : 0;
  KILN_CHECK(self.dim() > 0, ShapeError,
             "repeat_interleave: a 0-dim self has no dim {} to repeat along", dim);
  Tensor repeats = call.tensor(1);
  const SymInt slices = self.sym_sizes()[static_cast<size_t>(dim)];
  KILN_CHECK(repeats.dim() <= 1 &&
                 (sizes_equal(repeats.sym_numel(), 1) || sizes_equal(repeats.sym_numel(), slices)),
             ShapeError,
             "repeat_interleave: repeats must have one element or one per slice along dim {} "
             "({}), got shape {}",
             dim, slices, shape_str(repeats.sym_sizes()));
  repeats = repeats.reshape({-1});
  if (!sizes_equal(repeats.sym_numel(), slices)) repeats = repeats.expand(SymDimVector{slices});
  const std::optional<int64_t> output_size = call.arg(3).optional_int();
  call.set_output(0, self.index_select(dim, repeat_interleave(repeats, output_size)));
}

// ---- repeat_interleave(self, int repeats, dim): a broadcast, no data dependence ----

void composite_repeat_interleave_int(OpCall& call) {
  const std::optional<int64_t> dim_arg = call.arg(2).optional_int();
  const Tensor self = dim_arg ? call.tensor(0) : call.tensor(0).reshape({-1});
  const int64_t dim = dim_arg ? wrap_dim("repeat_interleave", *dim_arg, self.dim()) : 0;
  const int64_t repeats = call.int_arg(1);
  KILN_CHECK(repeats >= 0, ValueError, "repeat_interleave: repeats must be non-negative, got {}",
             repeats);
  KILN_CHECK(self.dim() > 0, ShapeError,
             "repeat_interleave: a 0-dim self has no dim {} to repeat along", dim);
  SymDimVector expanded(self.sym_sizes().begin(), self.sym_sizes().end());
  expanded.insert(static_cast<size_t>(dim + 1), SymInt(repeats));
  call.set_output(0, self.unsqueeze(dim + 1).expand(expanded).flatten(dim, dim + 1));
}

}  // namespace

void register_unique_ops(OpRegistry& r) {
  r.add({.name = "unique",
         .schema = "unique(Tensor self) -> (Tensor values, Tensor inverse, Tensor counts)",
         .family = "index",
         .meta = meta_unique,
         .cpu = cpu_unique,
         .dtypes = dtypes::kAll,
         .tags = kTagDynamicOutput | kTagNondifferentiable});
  r.add({.name = "repeat_interleave.Tensor",
         .schema = "repeat_interleave.Tensor(Tensor repeats, SymInt? output_size=None) -> Tensor",
         .family = "index",
         .meta = meta_repeat_interleave,
         .cpu = cpu_repeat_interleave,
         .dtypes = dtypes::kIntegral,
         .tags = kTagDynamicOutput | kTagNondifferentiable});
  r.add({.name = "repeat_interleave.self_Tensor",
         .schema = "repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, "
                   "SymInt? output_size=None) -> Tensor",
         .family = "index",
         .composite = composite_repeat_interleave_tensor,
         .tags = kTagDynamicOutput});
  r.add({.name = "repeat_interleave.self_int",
         .schema = "repeat_interleave.self_int(Tensor self, int repeats, int? dim=None) -> Tensor",
         .family = "index",
         .composite = composite_repeat_interleave_int});
}

UniqueResult unique(const Tensor& self) {
  static const OpId id = op_id("unique");
  Stack s = dispatch::call_boxed(id, self);
  return {std::move(s[0].tensor()), std::move(s[1].tensor()), std::move(s[2].tensor())};
}

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  static const OpId id = op_id("repeat_interleave.Tensor");
  return dispatch::call_tensor(id, repeats, output_size);
}

Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  static const OpId id = op_id("repeat_interleave.self_Tensor");
  return dispatch::call_tensor(id, self, repeats, dim, output_size);
}

Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim) {
  static const OpId id = op_id("repeat_interleave.self_int");
  return dispatch::call_tensor(id, self, repeats, dim);
}

}  // namespace kiln
