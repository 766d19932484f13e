// Inner loops for pointwise kernels over a TensorIter.
//
// cpu_kernel<Out, In...>(iter, f) applies `Out f(In...)` elementwise. The contiguous case is a
// plain indexed loop the compiler vectorizes (-O3, AVX2 where built for it); a 0-stride
// (broadcast scalar) second or first operand of a binary op gets its own loop for the same
// reason; everything else takes the generic strided loop.
#pragma once

#include <tuple>
#include <utility>

#include "kiln/dtype.h"
#include "src/kernels/cpu/tensor_iter.h"

namespace kiln::cpu {

namespace detail {
template <typename Out, typename... In, typename F, size_t... I>
inline void contiguous_loop(char** data, int64_t n, const F& f, std::index_sequence<I...>) {
  Out* out = reinterpret_cast<Out*>(data[0]);
  std::tuple<const In*...> in{reinterpret_cast<const In*>(data[I + 1])...};
  for (int64_t i = 0; i < n; ++i) out[i] = f(std::get<I>(in)[i]...);
}

template <typename Out, typename... In, typename F, size_t... I>
inline void strided_loop(char** data, const int64_t* strides, int64_t n, const F& f,
                         std::index_sequence<I...>) {
  for (int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<Out*>(data[0] + i * strides[0]) =
        f(*reinterpret_cast<const In*>(data[I + 1] + i * strides[I + 1])...);
  }
}
}  // namespace detail

template <typename Out, typename... In, typename F>
void cpu_kernel(const TensorIter& iter, const F& f) {
  constexpr size_t kArity = sizeof...(In);
  using Indices = std::make_index_sequence<kArity>;
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    bool contiguous = strides[0] == static_cast<int64_t>(sizeof(Out));
    {
      size_t k = 1;
      ((contiguous = contiguous && strides[k++] == static_cast<int64_t>(sizeof(In))), ...);
    }
    if (contiguous) {
      detail::contiguous_loop<Out, In...>(data, n, f, Indices{});
      return;
    }
    if constexpr (kArity == 2) {
      using A = std::tuple_element_t<0, std::tuple<In...>>;
      using B = std::tuple_element_t<1, std::tuple<In...>>;
      Out* out = reinterpret_cast<Out*>(data[0]);
      if (strides[0] == static_cast<int64_t>(sizeof(Out))) {
        if (strides[1] == static_cast<int64_t>(sizeof(A)) && strides[2] == 0) {
          const A* a = reinterpret_cast<const A*>(data[1]);
          const B b = *reinterpret_cast<const B*>(data[2]);
          for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b);
          return;
        }
        if (strides[1] == 0 && strides[2] == static_cast<int64_t>(sizeof(B))) {
          const A a = *reinterpret_cast<const A*>(data[1]);
          const B* b = reinterpret_cast<const B*>(data[2]);
          for (int64_t i = 0; i < n; ++i) out[i] = f(a, b[i]);
          return;
        }
      }
    }
    detail::strided_loop<Out, In...>(data, strides, n, f, Indices{});
  });
}

// Restricts a dtype switch to `Allowed` at compile time: f.template operator()<T>() is only
// instantiated for T in Allowed; other dtypes raise DTypeError naming `op`.
template <DTypeSet Allowed, typename F>
void visit_dtype_in(ScalarType t, std::string_view op, F&& f) {
  KILN_CHECK(Allowed.contains(t), DTypeError, "{}: dtype {} is not supported", op, dtype_name(t));
  visit_dtype(t, [&]<typename T>() {
    if constexpr (Allowed.contains(scalar_type_of<T>)) f.template operator()<T>();
  });
}

}  // namespace kiln::cpu
