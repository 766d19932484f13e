#include "src/kernels/cpu/random.h"

#include <cmath>
#include <numbers>

#include "kiln/generator.h"
#include "src/core/cast.h"
#include "src/kernels/cpu/loops.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// Uniform in [0, 1) with exactly as many random bits as T's significand, so rounding can never
// produce 1.0 (a float32 draw rounded to half could).
template <typename T>
double unit_uniform(const std::array<uint32_t, 4>& r) {
  constexpr int bits = std::is_same_v<T, double>     ? 53
                       : std::is_same_v<T, Half>     ? 11
                       : std::is_same_v<T, BFloat16> ? 8
                                                     : 24;
  const uint64_t x = (uint64_t{r[0]} << 32 | r[1]) >> (64 - bits);
  return std::ldexp(static_cast<double>(x), -bits);
}

template <typename T, typename F>
void fill_each(const Tensor& out, const F& f) {
  T* p = static_cast<T*>(out.data_ptr());
  const int64_t n = out.numel();
  parallel::parallel_for_if(n > kParallelGrain, 0, n, [&](int64_t i_begin, int64_t i_end) {
    for (int64_t i = i_begin; i < i_end; ++i) p[i] = f(i);
  });
}

}  // namespace

void uniform_fill(const Tensor& out, uint64_t seed, uint64_t offset) {
  visit_dtype_in<dtypes::kFloating>(out.dtype(), "rand", [&]<typename T>() {
    fill_each<T>(out, [&](int64_t i) {
      return cast_value<T>(unit_uniform<T>(philox4x32_10(seed, offset + static_cast<uint64_t>(i))));
    });
  });
}

void normal_fill(const Tensor& out, uint64_t seed, uint64_t offset) {
  visit_dtype_in<dtypes::kFloating>(out.dtype(), "randn", [&]<typename T>() {
    fill_each<T>(out, [&](int64_t i) {
      const auto r = philox4x32_10(seed, offset + static_cast<uint64_t>(i));
      // Box-Muller on two 53-bit uniforms; u1 in (0, 1] so the log is finite.
      const double u1 =
          std::ldexp(static_cast<double>(((uint64_t{r[0]} << 32 | r[1]) >> 11) + 1), -53);
      const double u2 = std::ldexp(static_cast<double>((uint64_t{r[2]} << 32 | r[3]) >> 11), -53);
      return cast_value<T>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
    });
  });
}

void randint_fill(const Tensor& out, __int128 low, unsigned __int128 range, uint64_t seed,
                  uint64_t offset) {
  if (range == 0) range = static_cast<unsigned __int128>(1) << 64;
  visit_dtype_in<dtypes::kNumeric>(out.dtype(), "randint", [&]<typename T>() {
    fill_each<T>(out, [&](int64_t i) {
      const auto r = philox4x32_10(seed, offset + static_cast<uint64_t>(i));
      const uint64_t x = uint64_t{r[0]} << 32 | r[1];
      // floor(x * range / 2^64): uniform up to a bias below range / 2^64 (Lemire).
      const unsigned __int128 k = (static_cast<unsigned __int128>(x) * range) >> 64;
      const __int128 v = low + static_cast<__int128>(k);
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<uint64_t>(v));  // in range: checked by the op
      } else {
        return cast_value<T>(static_cast<double>(v));
      }
    });
  });
}

void dropout(const Tensor& out, const Tensor& x, double p, uint64_t seed, uint64_t offset) {
  const Tensor xc = x.contiguous();
  visit_dtype_in<dtypes::kFloating>(out.dtype(), "dropout", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* in = static_cast<const T*>(xc.data_ptr());
    const M scale = p >= 1 ? M(0) : static_cast<M>(1.0 / (1.0 - p));
    fill_each<T>(out, [&](int64_t i) {
      const double u = unit_uniform<double>(philox4x32_10(seed, offset + static_cast<uint64_t>(i)));
      return u < p ? T(0) : T(static_cast<M>(in[i]) * scale);
    });
  });
}

}  // namespace kiln::cpu
