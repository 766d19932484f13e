// Integer matrix products: BLAS has none, so an own kernel.
//
// Note [Modular integer matmul]
// Every integer dtype multiplies and accumulates in an unsigned type at least as wide (uint32
// for <= 32-bit dtypes, uint64 for 64-bit), where overflow is defined to wrap. Because 2^bits of
// the dtype divides 2^bits of the accumulator, truncating the wrapped sum gives exactly the
// two's-complement result of doing the whole product in the dtype itself, as PyTorch's int
// matmul does (signed overflow in C++ would be undefined; this is not). uint16 is the reason
// the accumulator is never narrower than 32 bits: uint16 * uint16 promotes to int and can
// overflow it.

#include <type_traits>
#include <vector>

#include "src/kernels/cpu/gemm.h"
#include "src/kernels/cpu/loops.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// Columns of the accumulator row handled per pass, so the row and a slice of B stay in L1.
constexpr int64_t kColumnBlock = 512;

template <typename T>
void gemm_int(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
              const Scalar& beta) {
  using U = std::make_unsigned_t<T>;
  using Acc = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
  const int64_t d = a.dim();
  const int64_t batch = d == 3 ? int64_t{a.size(0)} : 1;
  const int64_t m = a.size(d - 2), k = a.size(d - 1), n = b.size(d - 1);
  if (batch == 0 || m == 0 || n == 0) return;
  const int64_t a_sb = d == 3 ? int64_t{a.stride(0)} : 0, a_sm = a.stride(d - 2),
                a_sk = a.stride(d - 1);
  const int64_t b_sb = d == 3 ? int64_t{b.stride(0)} : 0, b_sk = b.stride(d - 2),
                b_sn = b.stride(d - 1);
  const Acc al = static_cast<Acc>(static_cast<U>(alpha.to<T>()));
  const Acc be = static_cast<Acc>(static_cast<U>(beta.to<T>()));
  T* pc = static_cast<T*>(out.data_ptr());
  if (k == 0) {  // an empty sum: out = beta * out (a and b have no data to point into)
    for (int64_t i = 0; i < batch * m * n; ++i) {
      const Acc old = be == 0 ? 0 : static_cast<Acc>(static_cast<U>(pc[i]));
      pc[i] = static_cast<T>(static_cast<U>(be * old));
    }
    return;
  }
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());

  // B packed row-major in the accumulator type (the inner loop then vectorizes); each chunk of
  // rows has its own accumulator row.
  std::vector<Acc> packed(static_cast<size_t>(k * n));
  const bool parallel = m > 1 && m * n * k > 32768;

  for (int64_t bi = 0; bi < batch; ++bi) {
    const T* ab = pa + bi * a_sb;
    const T* bb = pb + bi * b_sb;
    T* cb = pc + bi * m * n;
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        packed[kk * n + j] = static_cast<Acc>(static_cast<U>(bb[kk * b_sk + j * b_sn]));
    parallel::parallel_for_if(parallel, 0, m, [&](int64_t i_begin, int64_t i_end) {
      std::vector<Acc> acc_row(static_cast<size_t>(n));
      Acc* acc = acc_row.data();
      for (int64_t i = i_begin; i < i_end; ++i) {
        for (int64_t j = 0; j < n; ++j) acc[j] = 0;
        for (int64_t j0 = 0; j0 < n; j0 += kColumnBlock) {
          const int64_t j1 = std::min(n, j0 + kColumnBlock);
          for (int64_t kk = 0; kk < k; ++kk) {
            const Acc av = static_cast<Acc>(static_cast<U>(ab[i * a_sm + kk * a_sk]));
            const Acc* brow = packed.data() + kk * n;
            for (int64_t j = j0; j < j1; ++j) acc[j] += av * brow[j];
          }
        }
        T* crow = cb + i * n;
        if (be == 0) {
          for (int64_t j = 0; j < n; ++j) crow[j] = static_cast<T>(static_cast<U>(al * acc[j]));
        } else {
          for (int64_t j = 0; j < n; ++j) {
            const Acc old = static_cast<Acc>(static_cast<U>(crow[j]));
            crow[j] = static_cast<T>(static_cast<U>(be * old + al * acc[j]));
          }
        }
      }
    });
  }
}

}  // namespace

void gemm_integral(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
                   const Scalar& beta) {
  visit_dtype_in<dtypes::kIntegral>(out.dtype(), "gemm_integral",
                                    [&]<typename T>() { gemm_int<T>(a, b, out, alpha, beta); });
}

}  // namespace kiln::cpu
