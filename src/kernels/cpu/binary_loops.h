// The loop driver shared by the binary kernels (binary_arith.cpp, binary_bitwise.cpp,
// binary_compare.cpp). The common cases run as plain loops over raw pointers that the compiler
// vectorizes, without building a TensorIter:
//   - every operand contiguous with the output's element count, in the compute dtype;
//   - one operand a single value (Scalar, 0-dim, wrapped number), the other contiguous.
// Anything else (broadcasting, strides, mixed dtypes) goes through TensorIter.
#pragma once

#include <algorithm>

#include "src/core/cast.h"
#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/binary.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/streaming_store.h"
#include "src/util/parallel.h"

namespace kiln::cpu {

// Through Scalar (non-template conversions compiled once in scalar.cpp) rather than a dtype
// switch per T: same cast_value semantics, far fewer template instantiations per kernel.
template <typename T>
T Operand::value() const {
  if (tensor_ == nullptr) return scalar_.to<T>();
  if (tensor_->dtype() == scalar_type_of<T>) return *static_cast<const T*>(tensor_->data_ptr());
  return tensor_->item().to<T>();
}

// Runs body(begin, end) over [0, n), split across threads above kParallelGrain.
template <typename Body>
inline void parallel_range(int64_t n, const Body& body) {
  parallel::parallel_for(0, n, kParallelGrain, body);
}

namespace detail {
template <typename T>
inline bool is_flat(const Operand& x, int64_t n) {
  return !x.is_scalar() && x.tensor().dtype() == scalar_type_of<T> && x.tensor().numel() == n &&
         x.tensor().is_contiguous();
}
}  // namespace detail

// out[i] = f(a[i], b[i]) with a and b converted to T; out has dtype Out.
template <typename Out, typename T, typename F>
void binary_loop(std::string_view name, const Tensor& out, const Operand& a, const Operand& b,
                 const F& f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  Out* o = static_cast<Out*>(out.data_ptr());
  if (a.is_single() && b.is_single()) {  // the output has one element too
    *o = f(a.value<T>(), b.value<T>());
    return;
  }
  if (out.is_contiguous()) {
    const bool a_flat = detail::is_flat<T>(a, n), b_flat = detail::is_flat<T>(b, n);
    if (a_flat && b_flat) {
      const T* x = static_cast<const T*>(a.tensor().data_ptr());
      const T* y = static_cast<const T*>(b.tensor().data_ptr());
      if (n * static_cast<int64_t>(sizeof(Out)) >= kStreamingBytes) {  // Note [Streaming stores]
        parallel_range(n, [&](int64_t lo, int64_t hi) {
          stream_blocks(o, lo, hi, [&](int64_t b, int64_t e, Out* dst) {
            for (int64_t i = b; i < e; ++i) dst[i - b] = f(x[i], y[i]);
          });
        });
        return;
      }
      parallel_range(n, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) o[i] = f(x[i], y[i]);
      });
      return;
    }
    if (a_flat && b.is_single()) {
      const T* x = static_cast<const T*>(a.tensor().data_ptr());
      const T y = b.value<T>();
      parallel_range(n, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) o[i] = f(x[i], y);
      });
      return;
    }
    if (a.is_single() && b_flat) {
      const T x = a.value<T>();
      const T* y = static_cast<const T*>(b.tensor().data_ptr());
      parallel_range(n, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) o[i] = f(x, y[i]);
      });
      return;
    }
  }
  // The general case: one TensorIter loop (a single value broadcasts with stride 0, which
  // cpu_kernel handles with its own vectorizable loop), so each (op, dtype) pair instantiates
  // one generic kernel.
  auto as_tensor = [](const Operand& x) {
    const ScalarType t = scalar_type_of<T>;
    if (x.is_scalar()) return scalar_to_tensor(x.scalar(), t);
    return x.tensor().dtype() == t ? x.tensor() : x.tensor().to(t);
  };
  TensorIter iter(name, {out}, {as_tensor(a), as_tensor(b)});
  cpu_kernel<Out, T, T>(iter, f);
}

// Bitwise and shift ops (binary_bitwise.cpp); binary_kernel routes them there.
void binary_bitwise_kernel(std::string_view name, BinaryOp op, const Tensor& out, const Operand& a,
                           const Operand& b, ScalarType compute);

}  // namespace kiln::cpu
