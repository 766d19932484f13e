// Random ops: rand, randn, randint, dropout. Each op takes the Philox (seed, offset) pair as plain
// int arguments, reserved from a Generator by the wrapper: the op itself is a pure function of
// its arguments, so tracing and replay see exactly which random stream was used.
// See Note [Counter-based random numbers] in kiln/generator.h.
#include <limits>

#include "kiln/ops/random.h"
#include "src/kernels/cpu/random.h"
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
  register_range_factory_ops(r);
}

// ---- wrappers ----

Tensor rand(IntArrayRef sizes, TensorOptions options) {
  return rand(sizes, default_generator(), options);
}
Tensor rand(IntArrayRef sizes, Generator& gen, TensorOptions options) {
  static const OpId id = op_id("rand");
  auto [seed, offset] = gen.reserve(count(sizes));
  return dispatch::call_tensor(id, sizes, options.dtype_, options.device_, as_arg(seed),
                               as_arg(offset));
}
Tensor randn(IntArrayRef sizes, TensorOptions options) {
  return randn(sizes, default_generator(), options);
}
Tensor randn(IntArrayRef sizes, Generator& gen, TensorOptions options) {
  static const OpId id = op_id("randn");
  auto [seed, offset] = gen.reserve(count(sizes));
  return dispatch::call_tensor(id, sizes, options.dtype_, options.device_, as_arg(seed),
                               as_arg(offset));
}
Tensor randint(const Scalar& low, const Scalar& high, IntArrayRef sizes, TensorOptions options) {
  return randint(low, high, sizes, default_generator(), options);
}
Tensor randint(const Scalar& low, const Scalar& high, IntArrayRef sizes, Generator& gen,
               TensorOptions options) {
  static const OpId id = op_id("randint");
  auto [seed, offset] = gen.reserve(count(sizes));
  return dispatch::call_tensor(id, low, high, sizes, options.dtype_, options.device_, as_arg(seed),
                               as_arg(offset));
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

Tensor dropout(const Tensor& input, double p, bool train) {
  return dropout(input, p, train, default_generator());
}
Tensor dropout(const Tensor& input, double p, bool train, Generator& gen) {
  check_dropout_p(p);
  if (!train) return input;
  static const OpId id = op_id("dropout");
  auto [seed, offset] = gen.reserve(static_cast<uint64_t>(input.numel()));
  return dispatch::call_tensor(id, input, p, as_arg(seed), as_arg(offset));
}

}  // namespace kiln
