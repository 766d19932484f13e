// Random ops: rand, randn, randint, dropout. Each op takes the Philox (seed, offset) pair as plain
// int arguments, reserved from a Generator by the wrapper: the op itself is a pure function of
// its arguments, so tracing and replay see exactly which random stream was used.
// See Note [Counter-based random numbers] in kiln/generator.h.
#include <limits>

#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "src/core/tracing_hooks.h"
#include "src/kernels/cpu/random.h"
#include "src/ops/factory_options.h"
#include "src/ops/registry.h"

namespace kiln {

void register_range_factory_ops(OpRegistry& r);  // src/ops/factory_ranges.cpp

namespace {

int64_t as_arg(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t seed_arg(const OpCall& call, size_t i) { return static_cast<uint64_t>(call.int_arg(i)); }

void check_floating(std::string_view op, ScalarType dtype) {
  KILN_CHECK(is_floating(dtype), DTypeError,
             "{}: dtype {} is not supported; use a floating dtype (float32, float64, float16, "
             "bfloat16)",
             op, dtype_name(dtype));
}

void meta_rand(OpCall& call) {
  check_floating(call.name(), call.arg(1).dtype());
  sym_checked_numel(call.name(), call.sym_ints(0));
  call.set_output(0, call.arg(1).dtype(), call.sym_ints(0));
}
void cpu_rand(OpCall& call) {
  cpu::uniform_fill(call.output(0), seed_arg(call, 3), seed_arg(call, 4));
}
void cpu_randn(OpCall& call) {
  cpu::normal_fill(call.output(0), seed_arg(call, 3), seed_arg(call, 4));
}

__int128 scalar_to_int128(const Scalar& s) {
  KILN_CHECK(s.is_integral(), ValueError, "randint: bounds must be integers, got {}", s.str());
  return s.kind() == Scalar::Kind::UInt ? static_cast<__int128>(s.to_uint64())
                                        : static_cast<__int128>(s.to_int64());
}

// The bounds as [low, high), validated against the dtype's range.
std::pair<__int128, __int128> randint_bounds(const Scalar& lo, const Scalar& hi, ScalarType dtype) {
  const __int128 low = scalar_to_int128(lo), high = scalar_to_int128(hi);
  KILN_CHECK(low < high, ValueError, "randint: low ({}) must be less than high ({})", lo.str(),
             hi.str());
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const __int128 min = std::numeric_limits<T>::min(), max = std::numeric_limits<T>::max();
      KILN_CHECK(low >= min && high - 1 <= max, ValueError,
                 "randint: the range [{}, {}) does not fit dtype {}", lo.str(), hi.str(),
                 dtype_name(dtype));
    }
  });
  return {low, high};
}

void meta_randint(OpCall& call) {
  const ScalarType dtype = call.arg(3).dtype();
  KILN_CHECK(dtype != kBool, DTypeError,
             "randint: dtype bool is not supported; use an integer dtype");
  randint_bounds(call.scalar(0), call.scalar(1), dtype);
  sym_checked_numel("randint", call.sym_ints(2));
  call.set_output(0, dtype, call.sym_ints(2));
}
void cpu_randint(OpCall& call) {
  auto [low, high] = randint_bounds(call.scalar(0), call.scalar(1), call.arg(3).dtype());
  cpu::randint_fill(call.output(0), low, static_cast<unsigned __int128>(high - low),
                    seed_arg(call, 5), seed_arg(call, 6));
}

void check_dropout_p(double p) {
  KILN_CHECK(p >= 0 && p <= 1, ValueError, "dropout: probability has to be between 0 and 1, got {}",
             p);
}

void meta_dropout(OpCall& call) {
  const Tensor& x = call.tensor(0);
  check_dropout_p(call.double_arg(1));
  call.set_output(0, x.dtype(), x.sym_sizes());
}
void cpu_dropout(OpCall& call) {
  cpu::dropout(call.output(0), call.tensor(0), call.double_arg(1), seed_arg(call, 2),
               seed_arg(call, 3));
}

uint64_t count(IntArrayRef sizes) { return static_cast<uint64_t>(checked_numel("random", sizes)); }

// ---- the `.state` forms (Note [Random ops under a trace]) ----

void check_rng_state(std::string_view op, const Tensor& state) {
  KILN_CHECK(state.dtype() == kInt64 && state.dim() == 1 && state.sym_numel() == 2, ValueError,
             "{}: rng_state must be an int64 tensor of 2 elements (seed, first counter), got {} {}",
             op, dtype_name(state.dtype()), shape_str(state.sym_sizes()));
}
// The (seed, first counter) pair a `.state` op reads from its rng_state argument.
std::pair<uint64_t, uint64_t> rng_pair(const OpCall& call, size_t i) {
  const Tensor state = call.tensor(i).contiguous();
  const auto* p = static_cast<const int64_t*>(state.data_ptr());
  return {static_cast<uint64_t>(p[0]), static_cast<uint64_t>(p[1])};
}

void meta_rng_state_snapshot(OpCall& call) {
  check_rng_state("rng_state_snapshot", call.tensor(0));
  call.set_output(0, kInt64, call.tensor(0).sym_sizes());
}
void cpu_rng_state_snapshot(OpCall& call) { call.output(0).copy_(call.tensor(0)); }

void meta_rand_state(OpCall& call) {
  check_floating(call.name(), call.arg(1).dtype());
  check_rng_state(call.name(), call.tensor(2));
  sym_checked_numel(call.name(), call.sym_ints(0));
  call.set_output(0, call.arg(1).dtype(), call.sym_ints(0));
}
void cpu_rand_state(OpCall& call) {
  const auto [seed, first] = rng_pair(call, 2);
  cpu::uniform_fill(call.output(0), seed, first);
}
void cpu_randn_state(OpCall& call) {
  const auto [seed, first] = rng_pair(call, 2);
  cpu::normal_fill(call.output(0), seed, first);
}

void meta_randint_state(OpCall& call) {
  const ScalarType dtype = call.arg(3).dtype();
  KILN_CHECK(dtype != kBool, DTypeError,
             "randint: dtype bool is not supported; use an integer dtype");
  randint_bounds(call.scalar(0), call.scalar(1), dtype);
  check_rng_state(call.name(), call.tensor(4));
  sym_checked_numel("randint", call.sym_ints(2));
  call.set_output(0, dtype, call.sym_ints(2));
}
void cpu_randint_state(OpCall& call) {
  auto [low, high] = randint_bounds(call.scalar(0), call.scalar(1), call.arg(3).dtype());
  const auto [seed, first] = rng_pair(call, 4);
  cpu::randint_fill(call.output(0), low, static_cast<unsigned __int128>(high - low), seed, first);
}

void meta_dropout_state(OpCall& call) {
  const Tensor& x = call.tensor(0);
  check_dropout_p(call.double_arg(1));
  check_rng_state(call.name(), call.tensor(2));
  call.set_output(0, x.dtype(), x.sym_sizes());
}
void cpu_dropout_state(OpCall& call) {
  const auto [seed, first] = rng_pair(call, 2);
  cpu::dropout(call.output(0), call.tensor(0), call.double_arg(1), seed, first);
}

// Note [Random ops under a trace]
// Eagerly, a random op's wrapper reserves counters from the generator and passes the (seed, first
// counter) pair as int arguments. Traced, those ints would be frozen into the graph: every call
// would draw the same numbers, whatever manual_seed said, and the generator would never advance.
// So while a kiln::compile trace runs, the wrapper makes the reservation an effect (Note [Effects]
// in src/capture/segment.h): it fills a two-element int64 tensor with the generator's pair now,
// and again before the graph runs on every later call, in the order the code reserves. A compiled
// call therefore draws exactly the numbers the same code draws eagerly from the same generator
// state, honours manual_seed and advances the generator by what it consumed. The graph reads the
// tensor through rng_state_snapshot (tagged random, so the min-cut partitioner saves its copy
// for the backward instead of re-reading the tensor, which the next call refills) and calls the
// op's `.state` form: the same kernel, the pair taken from the tensor. A generator other than the
// default one must outlive the compiled function. Null when no trace runs.
std::optional<Tensor> traced_rng_state(Generator& gen, uint64_t n) {
  TracingHooks* hooks = current_tracing_hooks();
  if (hooks == nullptr) return std::nullopt;
  Tensor state;
  hooks->run_untraced([&] { state = empty({2}, kInt64); });
  Generator* g = &gen;
  hooks->effect(
      fmt::format("reserve {} random counters", n),
      [state, g, n] {
        const auto [seed, first] = g->reserve(n);
        auto* p = static_cast<int64_t*>(state.data_ptr());
        p[0] = static_cast<int64_t>(seed);
        p[1] = static_cast<int64_t>(first);
      },
      /*touches_traced_tensors=*/false);
  hooks->filled_by_effect(state);
  static const OpId snapshot = op_id("rng_state_snapshot");
  return dispatch::call_tensor(snapshot, state);
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  r.add({.name = "rand",
         .schema =
             "rand(SymInt[] size, ScalarType dtype, Device device, int seed, int offset) -> Tensor",
         .family = "random",
         .meta = meta_rand,
         .cpu = cpu_rand,
         .dtypes = dtypes::kFloating,
         .tags = kTagFactory | kTagRandom,
         .device_arg = 2});
  r.add(
      {.name = "randn",
       .schema =
           "randn(SymInt[] size, ScalarType dtype, Device device, int seed, int offset) -> Tensor",
       .family = "random",
       .meta = meta_rand,
       .cpu = cpu_randn,
       .dtypes = dtypes::kFloating,
       .tags = kTagFactory | kTagRandom,
       .device_arg = 2});
  r.add({.name = "randint",
         .schema =
             "randint(Scalar low, Scalar high, SymInt[] size, ScalarType dtype, Device device, "
             "int seed, int offset) -> Tensor",
         .family = "random",
         .meta = meta_randint,
         .cpu = cpu_randint,
         .dtypes = dtypes::kNumeric,
         .tags = kTagFactory | kTagRandom,
         .device_arg = 4});
  r.add({.name = "dropout",
         .schema = "dropout(Tensor input, float p, int seed, int offset) -> Tensor",
         .family = "random",
         .meta = meta_dropout,
         .cpu = cpu_dropout,
         .dtypes = dtypes::kFloating,
         .tags = kTagRandom});
  r.add({.name = "rng_state_snapshot",
         .schema = "rng_state_snapshot(Tensor rng_state) -> Tensor",
         .family = "random",
         .meta = meta_rng_state_snapshot,
         .cpu = cpu_rng_state_snapshot,
         .dtypes = {kInt64},
         .tags = kTagRandom | kTagNondifferentiable});
  r.add({.name = "rand.state",
         .schema = "rand.state(SymInt[] size, ScalarType dtype, Tensor rng_state) -> Tensor",
         .family = "random",
         .meta = meta_rand_state,
         .cpu = cpu_rand_state,
         .dtypes = dtypes::kFloating,
         .tags = kTagFactory | kTagRandom});
  r.add({.name = "randn.state",
         .schema = "randn.state(SymInt[] size, ScalarType dtype, Tensor rng_state) -> Tensor",
         .family = "random",
         .meta = meta_rand_state,
         .cpu = cpu_randn_state,
         .dtypes = dtypes::kFloating,
         .tags = kTagFactory | kTagRandom});
  r.add({.name = "randint.state",
         .schema = "randint.state(Scalar low, Scalar high, SymInt[] size, ScalarType dtype, Tensor "
                   "rng_state) -> Tensor",
         .family = "random",
         .meta = meta_randint_state,
         .cpu = cpu_randint_state,
         .dtypes = dtypes::kNumeric,
         .tags = kTagFactory | kTagRandom | kTagNondifferentiable});
  r.add({.name = "dropout.state",
         .schema = "dropout.state(Tensor input, float p, Tensor rng_state) -> Tensor",
         .family = "random",
         .meta = meta_dropout_state,
         .cpu = cpu_dropout_state,
         .dtypes = dtypes::kFloating,
         .tags = kTagRandom});
  register_range_factory_ops(r);
}

// ---- wrappers ----

Tensor rand(IntArrayRef sizes, TensorOptions options) {
  return rand(sizes, default_generator(), options);
}
Tensor rand(IntArrayRef sizes, Generator& gen, TensorOptions options) {
  if (std::optional<Tensor> state = traced_rng_state(gen, count(sizes))) {
    static const OpId traced = op_id("rand.state");
    return with_requires_grad(dispatch::call_tensor(traced, sizes, options.dtype_, *state),
                              options);
  }
  static const OpId id = op_id("rand");
  auto [seed, offset] = gen.reserve(count(sizes));
  return with_requires_grad(dispatch::call_tensor(id, sizes, options.dtype_, options.device_,
                                                  as_arg(seed), as_arg(offset)),
                            options);
}
Tensor randn(IntArrayRef sizes, TensorOptions options) {
  return randn(sizes, default_generator(), options);
}
Tensor randn(IntArrayRef sizes, Generator& gen, TensorOptions options) {
  if (std::optional<Tensor> state = traced_rng_state(gen, count(sizes))) {
    static const OpId traced = op_id("randn.state");
    return with_requires_grad(dispatch::call_tensor(traced, sizes, options.dtype_, *state),
                              options);
  }
  static const OpId id = op_id("randn");
  auto [seed, offset] = gen.reserve(count(sizes));
  return with_requires_grad(dispatch::call_tensor(id, sizes, options.dtype_, options.device_,
                                                  as_arg(seed), as_arg(offset)),
                            options);
}
Tensor randint(const Scalar& low, const Scalar& high, IntArrayRef sizes, TensorOptions options) {
  return randint(low, high, sizes, default_generator(), options);
}
Tensor randint(const Scalar& low, const Scalar& high, IntArrayRef sizes, Generator& gen,
               TensorOptions options) {
  if (std::optional<Tensor> state = traced_rng_state(gen, count(sizes))) {
    static const OpId traced = op_id("randint.state");
    return with_requires_grad(
        dispatch::call_tensor(traced, low, high, sizes, options.dtype_, *state), options);
  }
  static const OpId id = op_id("randint");
  auto [seed, offset] = gen.reserve(count(sizes));
  return with_requires_grad(dispatch::call_tensor(id, low, high, sizes, options.dtype_,
                                                  options.device_, as_arg(seed), as_arg(offset)),
                            options);
}
Tensor randint(const Scalar& high, IntArrayRef sizes, TensorOptions options) {
  return randint(0, high, sizes, options);
}

Tensor rand_like(const Tensor& t, std::optional<ScalarType> dtype) {
  return rand(t.sizes(), TensorOptions(dtype.value_or(t.dtype())).device(t.device()));
}
Tensor randn_like(const Tensor& t, std::optional<ScalarType> dtype) {
  return randn(t.sizes(), TensorOptions(dtype.value_or(t.dtype())).device(t.device()));
}
Tensor randint_like(const Tensor& t, const Scalar& low, const Scalar& high,
                    std::optional<ScalarType> dtype) {
  return randint(low, high, t.sizes(), TensorOptions(dtype.value_or(t.dtype())).device(t.device()));
}

const Tensor& Tensor::uniform_(double from, double to) const {
  KILN_CHECK(is_floating(dtype()), DTypeError,
             "uniform_: expected a floating tensor, got {}; draw integers with randint",
             dtype_name(dtype()));
  KILN_CHECK(from <= to, ValueError, "uniform_: expects from <= to, got from = {}, to = {}", from,
             to);
  return copy_(rand(sizes(), dtype()) * (to - from) + from);
}

const Tensor& Tensor::normal_(double mean, double std) const {
  KILN_CHECK(is_floating(dtype()), DTypeError, "normal_: expected a floating tensor, got {}",
             dtype_name(dtype()));
  KILN_CHECK(std >= 0, ValueError, "normal_: expects std >= 0, got std = {}", std);
  return copy_(randn(sizes(), dtype()) * std + mean);
}

Tensor dropout(const Tensor& input, double p, bool train) {
  return dropout(input, p, train, default_generator());
}
Tensor dropout(const Tensor& input, double p, bool train, Generator& gen) {
  check_dropout_p(p);
  if (!train) return input;
  if (std::optional<Tensor> state = traced_rng_state(gen, static_cast<uint64_t>(input.numel()))) {
    static const OpId traced = op_id("dropout.state");
    return dispatch::call_tensor(traced, input, p, *state);
  }
  static const OpId id = op_id("dropout");
  auto [seed, offset] = gen.reserve(static_cast<uint64_t>(input.numel()));
  return dispatch::call_tensor(id, input, p, as_arg(seed), as_arg(offset));
}

}  // namespace kiln
