// Floating-point matrix products through OpenBLAS (its OpenMP build, so one thread pool).
//
// Note [Strided operands to BLAS]
// Row-major BLAS reads a matrix either as stored row by row (NoTrans, leading dimension = row
// stride) or, for a transposed operand, column by column (Trans, leading dimension = column
// stride). So any operand whose elements are unit-stride along one of its two dims is passed
// as is, with the matching transpose flag: `a.t()`, a slice of columns, an expanded batch. Only
// an operand with no unit stride (e.g. every other column) is copied, once, to contiguous.
// Strides of size-1 dims carry no information and are ignored.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/blas_typed.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/gemm.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// A [rows, cols] matrix (or a batch of them) in the terms BLAS wants.
struct BlasOperand {
  const char* data = nullptr;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;
  int64_t batch_stride = 0;  // in elements
};

int64_t batch_of(const Tensor& t) { return t.dim() == 3 ? int64_t{t.size(0)} : 1; }

// See Note [Strided operands to BLAS].
std::optional<std::pair<CBLAS_TRANSPOSE, int64_t>> blas_layout(int64_t rows, int64_t cols,
                                                               int64_t rs, int64_t cs) {
  const int64_t min_row_ld = std::max<int64_t>(cols, 1);
  const int64_t min_col_ld = std::max<int64_t>(rows, 1);
  if (cs == 1 || cols <= 1) {
    const int64_t ld = rows <= 1 ? min_row_ld : rs;
    if (ld >= min_row_ld && ld <= INT_MAX) return std::pair{CblasNoTrans, ld};
  }
  if (rs == 1 || rows <= 1) {
    const int64_t ld = cols <= 1 ? min_col_ld : cs;
    if (ld >= min_col_ld && ld <= INT_MAX) return std::pair{CblasTrans, ld};
  }
  return std::nullopt;
}

// Describes `t` for BLAS, replacing it with a contiguous copy when its layout does not fit.
BlasOperand make_operand(Tensor& t) {
  const int64_t d = t.dim();
  auto layout = blas_layout(t.size(d - 2), t.size(d - 1), t.stride(d - 2), t.stride(d - 1));
  if (!layout) {
    Tensor copy = empty_tensor(t.sizes(), t.dtype());
    copy_into(copy, t);
    t = copy;
    layout = blas_layout(t.size(d - 2), t.size(d - 1), t.stride(d - 2), t.stride(d - 1));
  }
  BlasOperand op;
  op.data = static_cast<const char*>(t.data_ptr());
  op.trans = layout->first;
  op.ld = layout->second;
  op.batch_stride = d == 3 ? int64_t{t.stride(0)} : 0;
  return op;
}

void call_gemv(CBLAS_TRANSPOSE t, int rows, int cols, float alpha, const float* a, int lda,
               const float* x, int incx, float beta, float* y) {
  cblas_sgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, 1);
}
void call_gemv(CBLAS_TRANSPOSE t, int rows, int cols, double alpha, const double* a, int lda,
               const double* x, int incx, double beta, double* y) {
  cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, 1);
}

// Note [Matrix-vector products]
// A product with one row (m == 1: a batch-1 linear layer) or one column (n == 1) is a
// matrix-vector product. gemm would pack the whole matrix into its blocked layout first, which
// for [1, 784] x [784, 512] costs more than the product; gemv streams the matrix once. The
// vector operand's elements are `inc` apart: its unit stride when stored NoTrans, its leading
// dimension when Trans (a one-row matrix read column by column).
template <typename T>
bool try_gemv(const BlasOperand& oa, const BlasOperand& ob, int64_t m, int64_t n, int64_t k,
              T alpha, T beta, T* c) {
  const auto flip = [](CBLAS_TRANSPOSE t) { return t == CblasNoTrans ? CblasTrans : CblasNoTrans; };
  const auto inc = [](const BlasOperand& v) { return v.trans == CblasNoTrans ? 1 : v.ld; };
  if (m == 1) {
    // out[j] = sum_i a[i] b[i, j]: b read as [k, n] (NoTrans) is used transposed.
    call_gemv(flip(ob.trans), static_cast<int>(ob.trans == CblasNoTrans ? k : n),
              static_cast<int>(ob.trans == CblasNoTrans ? n : k), alpha,
              reinterpret_cast<const T*>(ob.data), static_cast<int>(ob.ld),
              reinterpret_cast<const T*>(oa.data), static_cast<int>(inc(oa)), beta, c);
    return true;
  }
  if (n == 1) {
    // out[i] = sum_j a[i, j] b[j]: the column b's elements are ld apart when NoTrans.
    const int64_t incb = ob.trans == CblasNoTrans ? ob.ld : 1;
    call_gemv(oa.trans, static_cast<int>(oa.trans == CblasNoTrans ? m : k),
              static_cast<int>(oa.trans == CblasNoTrans ? k : m), alpha,
              reinterpret_cast<const T*>(oa.data), static_cast<int>(oa.ld),
              reinterpret_cast<const T*>(ob.data), static_cast<int>(incb), beta, c);
    return true;
  }
  return false;
}

// Note [Products on Kiln's threads]
// OpenBLAS and oneDNN thread with libgomp, whose parallel regions end in a barrier that waits for
// every team thread: on a loaded machine a descheduled one stalls the product for a scheduler
// slice (Note [The intra-op pool] in src/util/parallel.h), and with the default wait policy the
// team spins between regions against Kiln's own threads. So every product runs with one OpenMP
// thread (SerialRegion sets omp_get_max_threads(), which both libraries size their teams by), and
// products of 2^20 multiply-adds or more are split into bands over Kiln's pool (Note [Splitting a
// product over the threads]). Below that size one thread is as fast: a [1, 784] x [784, 512]
// product took 18 us on the calling thread, 54 us on 2 sleeping OpenMP threads.
class SerialRegion {
 public:
  explicit SerialRegion(bool on) : saved_(on ? omp_get_max_threads() : 0) {
    if (on) omp_set_num_threads(1);
  }
  ~SerialRegion() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  SerialRegion(const SerialRegion&) = delete;
  SerialRegion& operator=(const SerialRegion&) = delete;

 private:
  int saved_;
};

// Note [Splitting a product over the threads]
// For OpenBLAS's and oneDNN's products alike (Note [Products on Kiln's threads]); measured first
// for OpenBLAS's. OpenBLAS threads one product itself, but on the few-core machines Kiln runs
// on its own partition loses to a plain split of the output: each thread computing a band of rows
// (or of columns) of C with single-threaded BLAS. Measured on 2 cores (an AMD EPYC with AVX-512,
// OpenBLAS 0.3.21 OpenMP), median ms of OpenBLAS's threading vs the split: [4096, 256] x [256, 8]
// (a router's logits) 0.54 vs 0.13; [512, 256] x [256, 256] 0.43 vs 0.34; [4096, 256] x [256,
// 256] 3.23 vs 2.84; [8, 256] x [256, 4096] 0.39 vs 0.18 (by columns); [1024]^3 11.5 vs 11.1;
// [64]^3 0.006 vs 0.007, so products below 2^20 multiply-adds run whole, on one thread. The split
// is along the larger of M and N, in bands that are multiples of 16 (whole register blocks of the
// kernel); inside a chunk of the intra-op pool OpenBLAS runs single-threaded, so each band is
// one thread's call.
struct Band {
  int64_t begin, end;
};

Band band_of(int64_t extent, int64_t part, int64_t parts) {
  const int64_t blocks = (extent + 15) / 16;
  const int64_t b0 = blocks * part / parts, b1 = blocks * (part + 1) / parts;
  return {std::min(extent, b0 * 16), std::min(extent, b1 * 16)};
}

// Bands to cut a product into: two per thread, so that the threads that are running can take a
// missing one's share (Note [The intra-op pool]).
int64_t split_bands(int64_t m, int64_t n, int64_t k) {
  if (m * n * k < (int64_t{1} << 20) || parallel::in_parallel_region()) return 1;
  const int64_t blocks = (std::max(m, n) + 15) / 16;
  return std::min<int64_t>(2 * int64_t{parallel::num_threads()}, blocks);
}

// One product c[m, n] = alpha * a b + beta * c (See Note [Splitting a product over the threads]).
template <typename T>
void split_gemm(const BlasOperand& oa, const BlasOperand& ob, int64_t m, int64_t n, int64_t k,
                T alpha, T beta, const T* a, const T* b, T* c) {
  const auto call = [&](const T* pa, const T* pb, T* pc, int64_t rows, int64_t cols) {
    blas_gemm(oa.trans, ob.trans, static_cast<int>(rows), static_cast<int>(cols),
              static_cast<int>(k), alpha, pa, static_cast<int>(oa.ld), pb, static_cast<int>(ob.ld),
              beta, pc, static_cast<int>(n));
  };
  const int64_t bands = split_bands(m, n, k);
  if (bands <= 1) {
    call(a, b, c, m, n);
    return;
  }
  const bool by_rows = m >= n;
  parallel::parallel_for(0, bands, 1, [&](int64_t first, int64_t last) {
    for (int64_t part = first; part < last; ++part) {
      const Band band = band_of(by_rows ? m : n, part, bands);
      const int64_t size = band.end - band.begin;
      if (size > 0 && by_rows) {
        // Row i of op(a) starts at a + i * lda stored as is, at a + i stored transposed.
        const int64_t step = oa.trans == CblasNoTrans ? oa.ld : 1;
        call(a + band.begin * step, b, c + band.begin * n, size, n);
      } else if (size > 0) {
        // Column j of op(b) starts at b + j stored as is, at b + j * ldb stored transposed.
        const int64_t step = ob.trans == CblasNoTrans ? 1 : ob.ld;
        call(a, b + band.begin * step, c + band.begin, m, size);
      }
    }
  });
}

// out *= beta over a contiguous tensor (the k == 0 case, where BLAS would not be called).
template <typename T>
void scale_output(const Tensor& out, T beta) {
  T* p = out.data_ptr<T>();
  const int64_t n = out.numel();
  if (beta == T(0)) {
    for (int64_t i = 0; i < n; ++i) p[i] = T(0);
  } else {
    for (int64_t i = 0; i < n; ++i) p[i] *= beta;
  }
}

template <typename T>
void gemm_blas(Tensor a, Tensor b, const Tensor& out, T alpha, T beta) {
  const int64_t d = a.dim();
  const int64_t batch = batch_of(out);
  const int64_t m = a.size(d - 2), k = a.size(d - 1), n = b.size(d - 1);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    scale_output(out, beta);
    return;
  }
  KILN_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, NotImplementedError,
             "matrix product: dims [{}, {}] x [{}, {}] exceed the 32-bit sizes BLAS takes", m, k, k,
             n);
  const BlasOperand oa = make_operand(a);
  const BlasOperand ob = make_operand(b);
  T* c = out.data_ptr<T>();
  // Note [Products on Kiln's threads]
  const SerialRegion serial(true);
  if (batch == 1 && try_gemv(oa, ob, m, n, k, alpha, beta, c)) return;
  const int64_t c_batch = m * n;
  // OpenBLAS threads one large product itself; many small ones are better spread over the
  // batch (inside a parallel region OpenBLAS runs single-threaded).
  const bool small = m * n * k <= 64 * 64 * 64;
  const bool parallel_batch = batch > 1 && small && batch * m * n * k > 32768;
  auto product = [&](int64_t i) {
    split_gemm(oa, ob, m, n, k, alpha, beta,
               reinterpret_cast<const T*>(oa.data) + i * oa.batch_stride,
               reinterpret_cast<const T*>(ob.data) + i * ob.batch_stride, c + i * c_batch);
  };
  parallel::parallel_for_if(parallel_batch, 0, batch, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) product(i);
  });
}

Tensor to_float32(const Tensor& t) {
  Tensor f = empty_tensor(t.sizes(), kFloat32);
  copy_into(f, t);
  return f;
}

}  // namespace

void gemm_floating(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
                   const Scalar& beta) {
  switch (out.dtype()) {
    case kFloat32:
      gemm_blas<float>(a, b, out, alpha.to<float>(), beta.to<float>());
      return;
    case kFloat64:
      gemm_blas<double>(a, b, out, alpha.to<double>(), beta.to<double>());
      return;
    case kFloat16:
    case kBFloat16: {
      // Reduced floats compute in float32 (opmath), rounded once at the end.
      const float fbeta = beta.to<float>();
      Tensor out32 = fbeta == 0.0f ? empty_tensor(out.sizes(), kFloat32) : to_float32(out);
      gemm_blas<float>(to_float32(a), to_float32(b), out32, alpha.to<float>(), fbeta);
      copy_into(out, out32);
      return;
    }
    default:
      throw DTypeError(
          fmt::format("gemm_floating: dtype {} is not floating", dtype_name(out.dtype())));
  }
}

}  // namespace kiln::cpu
