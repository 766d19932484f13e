#include "src/codegen/cpp/prelude.h"

#include <fmt/format.h>

#include "src/lower/primitives.h"
#include "src/numerics/scalar_ops_text.h"

namespace kiln::codegen {
namespace {

// Header-free: nothing here includes a system header, so a graph's translation unit compiles in
// a fraction of a second (DESIGN.md section 5, codegen/cpp).
constexpr const char* kScalarPrelude = R"PRELUDE(
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;

#define KILN_INLINE static inline __attribute__((always_inline))

// float16 and bfloat16 live in memory as their 16-bit patterns and are computed as float. The
// conversions are bit manipulation (clang 14 has no _Float16 on x86), rounding to nearest even.
KILN_INLINE uint32_t kiln_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
KILN_INLINE float kiln_from_bits(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
KILN_INLINE float kiln_h2f(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  if (exponent == 0x1F) return kiln_from_bits(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float v = (float)mantissa * 5.9604644775390625e-08f;
    return kiln_from_bits(sign | kiln_bits(v));
  }
  return kiln_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}
KILN_INLINE uint16_t kiln_f2h(float f) {
  uint32_t x = kiln_bits(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint32_t h;
  if (x >= 0x47800000u) {
    // Too large for float16 (>= 2^16), infinity or NaN.
    h = x > 0x7F800000u ? 0x7E00 : 0x7C00;
  } else if (x < 0x38800000u) {
    // Below float16's smallest normal (2^-14): let float addition round the subnormal, adding a
    // magic number whose ulp is float16's subnormal step (2^-24).
    const uint32_t magic = 0x3F000000u;  // 0.5f
    h = kiln_bits(kiln_from_bits(x) + kiln_from_bits(magic)) - magic;
  } else {
    // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
    const uint32_t odd = (x >> 13) & 1;
    x += 0xC8000FFFu + odd;  // (15 - 127) << 23, plus the rounding bias
    h = x >> 13;
  }
  return (uint16_t)(h | (sign >> 16));
}
KILN_INLINE float kiln_bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
KILN_INLINE uint16_t kiln_f2bf(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if (f != f) return (uint16_t)((u >> 16) | 0x40);  // quiet NaN
  u += 0x7FFF + ((u >> 16) & 1);                      // round to nearest even
  return (uint16_t)(u >> 16);
}
// Rounding a float to float16/bfloat16 precision (to_dtype to a reduced float).
KILN_INLINE float kiln_round_h(float f) { return kiln_h2f(kiln_f2h(f)); }
KILN_INLINE float kiln_round_bf(float f) { return kiln_bf2f(kiln_f2bf(f)); }

// float -> integer with Kiln's total semantics (Note [Casting to integers] in src/core/cast.h).
template <class T>
KILN_INLINE T kiln_f2i(double v) {
  if (v != v) return (T)0;
  const double t = __builtin_trunc(v);
  const double two63 = 9223372036854775808.0, two64 = 18446744073709551616.0;
  if (t >= -two63 && t < two63) return (T)(int64_t)t;
  if (t >= two63 && t < two64) return (T)(uint64_t)t;
  return (T)(t < 0 ? (int64_t)(-9223372036854775807LL - 1) : (int64_t)9223372036854775807LL);
}
template <>
inline __attribute__((always_inline)) uint64_t kiln_f2i<uint64_t>(double v) {
  if (v != v) return 0;
  const double t = __builtin_trunc(v);
  const double two63 = 9223372036854775808.0, two64 = 18446744073709551616.0;
  if (t >= -two63 && t < two63) return (uint64_t)(int64_t)t;
  if (t >= two63 && t < two64) return (uint64_t)t;
  return t < 0 ? 0 : ~(uint64_t)0;
}

// Minimum and maximum of index expressions (sizes, loop bounds).
template <class T> KILN_INLINE T kiln_min(T a, T b) { return a < b ? a : b; }
template <class T> KILN_INLINE T kiln_max(T a, T b) { return a < b ? b : a; }

// Note [Runtime errors in generated code]
// Some inputs make an eager op raise where a compiled kernel has no way to throw: an integer
// division by zero. The trace cannot guard against them (they depend on data), so the kernel
// records the error in kiln_runtime_errors, a word every generated library exports (bit 1:
// integer division by zero), and goes on with a placeholder value; the executor reads the word
// after each kernel and raises the eager op's error (runtime/executor.cpp), so the placeholder
// never reaches the user. The word is per library; two threads running one library at once can
// see each other's error, which is then still an error of that program on some call.
extern "C" __attribute__((visibility("default"))) int kiln_runtime_errors;
int kiln_runtime_errors = 0;
KILN_INLINE void kiln_runtime_error(int bit) {
  __atomic_fetch_or(&kiln_runtime_errors, bit, __ATOMIC_RELAXED);
}
#define KILN_ERROR_INTEGER_DIVISION_BY_ZERO 1
// Floor division and modulo of index expressions (sizes and loop variables): no error bit.
KILN_INLINE int64_t kiln_index_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  const int64_t q = a / b;
  return (a % b != 0) && ((a < 0) != (b < 0)) ? q - 1 : q;
}
KILN_INLINE int64_t kiln_index_remainder(int64_t a, int64_t b) {
  if (b == 0) return 0;
  const int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
// Reductions. Welford's update for mean and m2 (sum of squared deviations).
struct kiln_welford_f { float mean, m2, n; };
struct kiln_welford_d { double mean, m2, n; };
template <class W, class T> KILN_INLINE void kiln_welford_add(W& w, T x) {
  w.n += 1;
  const T delta = x - w.mean;
  w.mean += delta / w.n;
  w.m2 += delta * (x - w.mean);
}
template <class W> KILN_INLINE W kiln_welford_merge(W a, W b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  W r;
  r.n = a.n + b.n;
  const auto delta = b.mean - a.mean;
  r.mean = a.mean + delta * (b.n / r.n);
  r.m2 = a.m2 + b.m2 + delta * delta * (a.n * b.n / r.n);
  return r;
}
// argmax/argmin: the first index of the extreme; NaN counts as the extreme.
template <class T> KILN_INLINE void kiln_argmax_add(T& best, int64_t& at, T x, int64_t i) {
  if (at < 0 || (!(best != best) && (x != x || x > best))) { best = x; at = i; }
}
template <class T> KILN_INLINE void kiln_argmin_add(T& best, int64_t& at, T x, int64_t i) {
  if (at < 0 || (!(best != best) && (x != x || x < best))) { best = x; at = i; }
}
)PRELUDE";

// Note [Generated vector math]
// The vector path is 8 float32 lanes (AVX2) as a GCC/clang vector type, so arithmetic and
// comparisons are plain operators and the code needs no <immintrin.h>. exp and erf, the
// functions of softmax, gelu, sigmoid and silu, are inline polynomials within 1.1 ULP (below:
// inline, they leave the loop's live vector registers alone), sqrt is vsqrtps (correctly
// rounded). The other transcendental functions call SLEEF's AVX2 entry points (libsleef, linked
// into every kernel library) with its documented error bounds: log, log2, log10, log1p, expm1,
// exp2, sin, cos, tan, tanh, pow, atan2 and the inverse trigonometric functions within 1.0 ULP
// (the _u10 variants), hypot within 0.5 ULP. The scalar tail uses libm, which is within 1 ULP for
// the same functions, so a value may differ in its last bit between a vector lane and the tail (and
// from the eager kernels, which use Highway's polynomials): float32 results are compared with a
// relative tolerance of 1e-5 (Note [Compiled tolerances] in tests/capture/compare.h).
constexpr const char* kVectorPrelude = R"PRELUDE(
typedef float kf8 __attribute__((vector_size(32)));
typedef int32_t ki8 __attribute__((vector_size(32)));
typedef float kf8u __attribute__((vector_size(32), aligned(4)));
KILN_INLINE kf8 kiln_loadu(const float* p) { return *(const kf8u*)p; }
KILN_INLINE void kiln_storeu(float* p, kf8 v) { *(kf8u*)p = v; }
// A non-temporal store where the address is 32-byte aligned, a normal one elsewhere (Note
// [Streaming stores in generated code] in codegen.cpp); kiln_sfence orders them before the
// kernel's end.
KILN_INLINE void kiln_stream_if(bool stream, float* p, kf8 v) {
  if (stream && ((uint64_t)p & 31) == 0) {
#if defined(__clang__)
    __builtin_nontemporal_store(v, (kf8*)p);
#else
    __builtin_ia32_movntps256(p, v);
#endif
  } else {
    kiln_storeu(p, v);
  }
}
KILN_INLINE void kiln_sfence() { __builtin_ia32_sfence(); }
KILN_INLINE kf8 kiln_splat(float x) { return (kf8){x, x, x, x, x, x, x, x}; }
KILN_INLINE float kiln_lane0(kf8 v) { return v[0]; }
KILN_INLINE kf8 kiln_gather(const float* p, int64_t stride) {
  return (kf8){p[0], p[stride], p[2 * stride], p[3 * stride], p[4 * stride], p[5 * stride],
               p[6 * stride], p[7 * stride]};
}
// p[0], p[2], ..., p[14] (a stride-2 read: pooling windows, every other column): two loads that
// stay within p[0..14] and one shuffle, instead of eight scalar loads.
KILN_INLINE kf8 kiln_load_even(const float* p) {
  return __builtin_shufflevector(kiln_loadu(p), kiln_loadu(p + 7), 0, 2, 4, 6, 9, 11, 13, 15);
}
// Note [Masked vector tails] in codegen.cpp: the first n lanes (1 <= n < 8) of a load or a
// store; the other lanes of a load are 0, and memory past the n elements is not touched
// (vmaskmovps does not fault on masked-off lanes).
KILN_INLINE ki8 kiln_first_lanes(int64_t n) {
  const ki8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  return lane < (int32_t)n;
}
KILN_INLINE kf8 kiln_loadu_n(const float* p, int64_t n) {
  return __builtin_ia32_maskloadps256((const kf8*)p, kiln_first_lanes(n));
}
KILN_INLINE void kiln_storeu_n(float* p, kf8 v, int64_t n) {
  __builtin_ia32_maskstoreps256((kf8*)p, kiln_first_lanes(n), v);
}
KILN_INLINE kf8 kiln_gather_n(const float* p, int64_t stride, int64_t n) {
  kf8 r = kiln_splat(0.0f);
  for (int k = 0; k < n; ++k) r[k] = p[k * stride];
  return r;
}
KILN_INLINE kf8 kiln_gather_h_n(const uint16_t* p, int64_t stride, int64_t n) {
  kf8 r = kiln_splat(0.0f);
  for (int k = 0; k < n; ++k) r[k] = kiln_h2f(p[k * stride]);
  return r;
}
KILN_INLINE kf8 kiln_gather_bf_n(const uint16_t* p, int64_t stride, int64_t n) {
  kf8 r = kiln_splat(0.0f);
  for (int k = 0; k < n; ++k) r[k] = kiln_bf2f(p[k * stride]);
  return r;
}
// Note [Lane offsets] (printer.cpp): loads whose lanes sit at constant offsets from lane 0.
// p[0], p[0], p[1], p[1], p[2], p[2], p[3], p[3]: one 4-float load.
KILN_INLINE kf8 kiln_load_pairs(const float* p) {
  typedef float kf4u __attribute__((vector_size(16), aligned(4)));
  const kf4u a = *(const kf4u*)p;
  return __builtin_shufflevector(a, a, 0, 0, 1, 1, 2, 2, 3, 3);
}
// p[0], p[0], p[2], p[2], p[4], p[4], p[6], p[6]: two 4-float loads within p[0..6].
KILN_INLINE kf8 kiln_load_even_pairs(const float* p) {
  typedef float kf4u __attribute__((vector_size(16), aligned(4)));
  const kf4u a = *(const kf4u*)p, b = *(const kf4u*)(p + 3);
  return __builtin_shufflevector(a, b, 0, 0, 2, 2, 5, 5, 7, 7);
}
KILN_INLINE kf8 kiln_gather_offsets(const float* p, ki8 offsets) {
  kf8 r;
  for (int k = 0; k < 8; ++k) r[k] = p[offsets[k]];
  return r;
}
KILN_INLINE kf8 kiln_gather_offsets_n(const float* p, ki8 offsets, int64_t n) {
  kf8 r = kiln_splat(0.0f);
  for (int k = 0; k < n; ++k) r[k] = p[offsets[k]];
  return r;
}
KILN_INLINE kf8 kiln_gather_h(const uint16_t* p, int64_t stride) {
  kf8 r;
  for (int k = 0; k < 8; ++k) r[k] = kiln_h2f(p[k * stride]);
  return r;
}
KILN_INLINE kf8 kiln_gather_bf(const uint16_t* p, int64_t stride) {
  kf8 r;
  for (int k = 0; k < 8; ++k) r[k] = kiln_bf2f(p[k * stride]);
  return r;
}
KILN_INLINE kf8 kiln_select(ki8 m, kf8 a, kf8 b) {
  return (kf8)(((ki8)a & m) | ((ki8)b & ~m));
}
KILN_INLINE ki8 kiln_isnan(kf8 x) { return x != x; }
KILN_INLINE kf8 kiln_maximum(kf8 a, kf8 b) {
  kf8 r = kiln_select(a < b, b, a);
  r = kiln_select(b != b, b, r);
  return kiln_select(a != a, a, r);
}
KILN_INLINE kf8 kiln_minimum(kf8 a, kf8 b) {
  kf8 r = kiln_select(b < a, b, a);
  r = kiln_select(b != b, b, r);
  return kiln_select(a != a, a, r);
}
// Note [Blocked vector sums] in printer.cpp: every 256 updates the partial sums move into the
// running total.
KILN_INLINE void kiln_sum_block(kf8& partial, kf8& total, int32_t& count) {
  if (++count == 256) {
    total = total + partial;
    partial = kiln_splat(0.0f);
    count = 0;
  }
}
KILN_INLINE kf8 kiln_mask_to_float(ki8 m) { return kiln_select(m, kiln_splat(1.0f), kiln_splat(0.0f)); }
KILN_INLINE float kiln_hsum(kf8 v) {
  float s = 0;
  for (int k = 0; k < 8; ++k) s += v[k];
  return s;
}
KILN_INLINE float kiln_hprod(kf8 v) {
  float s = 1;
  for (int k = 0; k < 8; ++k) s *= v[k];
  return s;
}
KILN_INLINE float kiln_hmax(kf8 v) {
  float s = v[0];
  for (int k = 1; k < 8; ++k) s = kiln::prim::maximum(s, v[k]);
  return s;
}
KILN_INLINE float kiln_hmin(kf8 v) {
  float s = v[0];
  for (int k = 1; k < 8; ++k) s = kiln::prim::minimum(s, v[k]);
  return s;
}
// Note [Blocked vector Welford]
// Each lane keeps a running (mean, m2, n). Welford's own update divides by n at every step, and
// that division sits on the loop-carried chain: a row of 1024 floats then takes ~128 divisions'
// latency. Instead a block of up to 16 steps adds plain sums of d = x - shift (and d*d), where
// shift is the lane's mean when the block began (its first value in the first block), and the
// block is merged into (mean, m2, n) with Chan's formula: the chain per step is an add and a
// multiply-add, one division per 16 steps. Shifting by a value near the mean keeps the block's
// m2 = sum(d*d) - sum(d)^2 / count free of cancellation, as Welford's update is.
struct kiln_welford_f8 { kf8 mean, m2, n, shift, sum, sq; int32_t count; };
KILN_INLINE void kiln_welford_flush(kiln_welford_f8& w) {
  if (w.count == 0) return;
  const float c = (float)w.count;
  const kf8 block_mean = w.shift + w.sum / c;
  const kf8 block_m2 = w.sq - w.sum * (w.sum / c);
  const kf8 n = w.n + c;
  const kf8 delta = block_mean - w.mean;
  w.mean = w.mean + delta * (c / n);
  w.m2 = w.m2 + block_m2 + delta * delta * (w.n * c / n);
  w.n = n;
  w.shift = w.mean;
  w.sum = kiln_splat(0.0f);
  w.sq = kiln_splat(0.0f);
  w.count = 0;
}
KILN_INLINE void kiln_welford_add(kiln_welford_f8& w, kf8 x) {
  if (w.count == 0 && w.n[0] == 0.0f) w.shift = x;
  const kf8 d = x - w.shift;
  w.sum += d;
  w.sq += d * d;
  if (++w.count == 16) kiln_welford_flush(w);
}
KILN_INLINE kiln_welford_f kiln_welford_hmerge(kiln_welford_f8 w) {
  kiln_welford_flush(w);
  kiln_welford_f r = {0, 0, 0};
  for (int k = 0; k < 8; ++k) r = kiln_welford_merge(r, kiln_welford_f{w.mean[k], w.m2[k], w.n[k]});
  return r;
}
extern "C" {
kf8 Sleef_expf8_u10avx2(kf8);
kf8 Sleef_exp2f8_u10avx2(kf8);
kf8 Sleef_expm1f8_u10avx2(kf8);
kf8 Sleef_logf8_u10avx2(kf8);
kf8 Sleef_log2f8_u10avx2(kf8);
kf8 Sleef_log10f8_u10avx2(kf8);
kf8 Sleef_log1pf8_u10avx2(kf8);
kf8 Sleef_sinf8_u10avx2(kf8);
kf8 Sleef_cosf8_u10avx2(kf8);
kf8 Sleef_tanf8_u10avx2(kf8);
kf8 Sleef_asinf8_u10avx2(kf8);
kf8 Sleef_acosf8_u10avx2(kf8);
kf8 Sleef_atanf8_u10avx2(kf8);
kf8 Sleef_sinhf8_u10avx2(kf8);
kf8 Sleef_coshf8_u10avx2(kf8);
kf8 Sleef_tanhf8_u10avx2(kf8);
kf8 Sleef_erff8_u10avx2(kf8);
kf8 Sleef_sqrtf8_u05avx2(kf8);
kf8 Sleef_powf8_u10avx2(kf8, kf8);
kf8 Sleef_atan2f8_u10avx2(kf8, kf8);
kf8 Sleef_hypotf8_u05avx2(kf8, kf8);
kf8 Sleef_fmodf8_avx2(kf8, kf8);
}
KILN_INLINE kf8 kiln_abs(kf8 x) { return (kf8)((ki8)x & 0x7FFFFFFF); }
// exp inline (a SLEEF call would spill every live vector register around it, which costs more
// than the function in a reduction loop): exp(x) = 2^n e^r with n = round(x log2(e)) and
// r = x - n ln(2) in [-ln(2)/2, ln(2)/2] (ln(2) split in two parts so n ln(2) is exact for the n
// that occur), e^r by a degree-6 polynomial with 1 + r fixed and the rest a least-squares fit
// (relative error 7.6e-9 there). 2^n is applied as two factors 2^(n>>1) 2^(n-(n>>1)), so a result
// that underflows into the subnormals is rounded once and one that overflows is inf. NaN passes
// through (vmaxps/vminps return their second operand for NaN, and NaN stays NaN after). Within
// 1 ULP of the exact value (0.943 ULP worst over every 7th float32 against double-precision exp;
// CodegenMath.ExpWithinOneUlp tests dense samples).
// e^r for x = n ln(2) + r: returns e^r and sets n (a whole number, as a float).
KILN_INLINE kf8 kiln_exp_reduced(kf8 x, kf8& n) {
  const kf8 shifter = kiln_splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  n = (x * 1.44269504088896341f + shifter) - shifter;
  const kf8 r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  kf8 p = kiln_splat(0.001381455222144723f);
  p = p * r + 0.008362819440662861f;
  p = p * r + 0.041667889803647995f;
  p = p * r + 0.16666580736637115f;
  p = p * r + 0.4999999701976776f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}
KILN_INLINE kf8 kiln_exp(kf8 x) {
  const kf8 xc = __builtin_ia32_minps256(kiln_splat(89.0f), __builtin_ia32_maxps256(kiln_splat(-104.0f), x));
  kf8 n;
  const kf8 p = kiln_exp_reduced(xc, n);
  const ki8 ni = __builtin_convertvector(n, ki8);
  const ki8 n1 = ni >> 1, n2 = ni - n1;
  const kf8 s1 = (kf8)((n1 + 127) << 23), s2 = (kf8)((n2 + 127) << 23);
  return p * s1 * s2;
}
// sinh and cosh: SLEEF's float versions overflow to inf from |x| ~ 88.7, where the true values
// (and the eager kernels' sinhf/coshf) stay finite up to ~89.4. Beyond |x| = 88, e^-|x| is below
// float precision against e^|x|, so sinh(x) = sign(x) e^(|x| - ln 2) and cosh(x) = e^(|x| - ln 2),
// which overflow only where the true value does.
KILN_INLINE kf8 kiln_exp_half_abs(kf8 x) { return kiln_exp(kiln_abs(x) - 0.693147180559945f); }
KILN_INLINE kf8 kiln_sinh(kf8 x) {
  const kf8 big = (kf8)((ki8)kiln_exp_half_abs(x) | ((ki8)x & (-2147483647 - 1)));
  return kiln_select(kiln_abs(x) > 88.0f, big, Sleef_sinhf8_u10avx2(x));
}
KILN_INLINE kf8 kiln_cosh(kf8 x) {
  return kiln_select(kiln_abs(x) > 88.0f, kiln_exp_half_abs(x), Sleef_coshf8_u10avx2(x));
}
// erf inline, within 1.1 ULP (1.088 ULP worst over every float32 in +-[1e-30, 6] against
// double-precision erf; CodegenMath.ErfWithinOneUlp tests dense samples). Below |x| = 1,
// erf(x) = x + x P(x^2), P a degree-6 least-squares fit of erf(x)/x - 1 in x^2 (relative error
// 1.2e-9); from 1 on, erf(|x|) = 1 - exp(-x^2) Q(1/|x|), Q a degree-6 fit of erfc(x) exp(x^2) in
// 1/x on [1, 4] weighted by exp(-x^2), so that it bounds the absolute error of erfc (3.9e-9),
// which is what erf's last place sees. |x| is clamped to 4, past which erf rounds to 1, and
// exp(-x^2) is kiln_exp_reduced without kiln_exp's clamps and split scale: the argument lies in
// [-16, -1]. Both branches are computed and one is selected: there is no branch per lane. A NaN
// takes the second branch and stays NaN (vminps returns its second operand for NaN). ~15 cycles
// per 8 lanes, against ~22 for the first version (an unweighted degree-9 Q, the whole kiln_exp,
// bitwise selects); gelu's cost is mostly this.
KILN_INLINE kf8 kiln_blend(ki8 m, kf8 a, kf8 b) { return __builtin_ia32_blendvps256(b, a, (kf8)m); }
KILN_INLINE kf8 kiln_erf(kf8 x) {
  const kf8 a = kiln_abs(x);
  const kf8 z = x * x;
  kf8 s = kiln_splat(7.847262168070301e-05f);
  s = s * z + -0.0008008193108253181f;
  s = s * z + 0.0051880995742976665f;
  s = s * z + -0.026853691786527634f;
  s = s * z + 0.1128358244895935f;
  s = s * z + -0.3761262595653534f;
  s = s * z + 0.12837916709551257f;
  const kf8 small = x + x * s;
  const kf8 ac = __builtin_ia32_minps256(kiln_splat(4.0f), a);
  const kf8 t = 1.0f / ac;
  kf8 q = kiln_splat(0.025381460951457047f);
  q = q * t + -0.13876575557404333f;
  q = q * t + 0.30868170487656266f;
  q = q * t + -0.30999530709883444f;
  q = q * t + -0.03392891911571161f;
  q = q * t + 0.577871277045454f;
  q = q * t + -0.0016608744279853086f;
  kf8 n;
  const kf8 p = kiln_exp_reduced(-(ac * ac), n);
  const kf8 two_to_n = (kf8)((__builtin_convertvector(n, ki8) + 127) << 23);
  const kf8 large = 1.0f - (p * two_to_n) * q;
  const kf8 signed_large = (kf8)((ki8)large | ((ki8)x & (int32_t)0x80000000));
  return kiln_blend(a < 1.0f, small, signed_large);
}
// The largest/smallest of an accumulator and x, ignoring a NaN x (vmaxps/vminps return their
// second operand when either is NaN); max/min reductions track NaN in a separate mask.
KILN_INLINE kf8 kiln_max_ignore_nan(kf8 acc, kf8 x) { return __builtin_ia32_maxps256(x, acc); }
KILN_INLINE kf8 kiln_min_ignore_nan(kf8 acc, kf8 x) { return __builtin_ia32_minps256(x, acc); }
KILN_INLINE kf8 kiln_sqrt(kf8 x) { return __builtin_ia32_sqrtps256(x); }
KILN_INLINE kf8 kiln_sigmoid(kf8 x) { return 1.0f / (1.0f + kiln_exp(-x)); }
)PRELUDE";

// Note [One value per expression]
// Generated code must give an expression the same bits wherever it is computed: in a vector
// lane, in the scalar tail of a reduction, in a kernel that could not be vectorized, or once in
// the forward and again in the backward (the partitioner recomputes cheap ops). Code that
// compares a value with a reduction of itself depends on it: `y == y.amax(d, true)` (a one-hot
// of the max, amax's and max.dim's backward) is all false in a row where the maximum was computed
// by libm's cosf and the compared value by SLEEF's, which differ in the last place. So in a
// vectorized build every float primitive with a vector form (the expensive rows of the primitive
// table: exp, cos, tanh, erf, pow, ...) computes its scalar value as lane 0 of that vector form,
// and the cheap rows are IEEE operations, exact in both. A division is always a division (a
// multiplication by a reciprocal computed once per loop gave other bits than the scalar tail's
// division); softmax normalizes by its sum's reciprocal in the graph (src/lower/decomp/reduce.cpp),
// so every kernel multiplies by the same reciprocal. The scalar-only build calls libm throughout,
// which agrees with itself.
std::string scalar_forms_from_lanes() {
  std::string s = "namespace kiln { namespace prim {\n";
  auto add = [&s](const lower::Primitive& p) {
    if (p.cost != lower::Cost::expensive || p.vector.empty() ||
        (p.operands & lower::kFloatOperands) == 0)
      return;
    const bool binary = p.arity == 2;
    const std::string lanes =
        binary ? fmt::format(fmt::runtime(p.vector), "kiln_splat(x)", "kiln_splat(y)")
               : fmt::format(fmt::runtime(p.vector), "kiln_splat(x)");
    s += fmt::format(
        "template <> inline __attribute__((always_inline)) float {}<float>(float x{}) {{ return "
        "kiln_lane0({}); }}\n",
        p.name, binary ? ", float y" : "", lanes);
  };
  for (const lower::Primitive& p : lower::primitive_rows::kUnary) add(p);
  for (const lower::Primitive& p : lower::primitive_rows::kBinary) add(p);
  return s + "}}  // namespace kiln::prim\n";
}

}  // namespace

std::string prelude(bool vectorize) {
  // The primitives' scalar semantics, the same text Kiln compiles (Note [One definition of a
  // primitive's semantics] in src/numerics/scalar_ops.h); a zero integer divisor sets the error
  // bit.
  std::string s = kScalarPrelude;
  s += "namespace kiln { namespace prim {\n"
       "KILN_INLINE void on_division_by_zero() {\n"
       "  kiln_runtime_error(KILN_ERROR_INTEGER_DIVISION_BY_ZERO);\n"
       "}\n";
  s += prim::kScalarOpsText;
  s += "}}  // namespace kiln::prim\n";
  if (vectorize) s += kVectorPrelude + scalar_forms_from_lanes();
  return s;
}

}  // namespace kiln::codegen
