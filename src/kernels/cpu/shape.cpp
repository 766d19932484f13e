#include "src/kernels/cpu/shape.h"

#include <algorithm>
#include <cstring>

#include "src/core/cast.h"
#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/tensor_iter.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// Byte-level element types: the gather only moves elements, so it is instantiated per size.
template <size_t N>
struct Bits;
template <>
struct Bits<1> {
  using type = uint8_t;
};
template <>
struct Bits<2> {
  using type = uint16_t;
};
template <>
struct Bits<4> {
  using type = uint32_t;
};
template <>
struct Bits<8> {
  using type = uint64_t;
};

template <typename U>
void gather_loop(U* out, const U* src, IntArrayRef sizes,
                 const std::vector<std::vector<int64_t>>& tables, U fill, int64_t numel) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  if (nd == 0) {
    out[0] = src[0];
    return;
  }
  const int64_t inner = sizes[nd - 1];
  const int64_t rows = numel / inner;
  const int64_t* last = tables[nd - 1].data();
  parallel::parallel_for_if(numel > kParallelGrain, 0, rows, [&](int64_t r_begin, int64_t r_end) {
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t rem = r, base = 0;
      bool outside = false;
      for (int64_t d = nd - 2; d >= 0; --d) {
        const int64_t o = tables[d][rem % sizes[d]];
        rem /= sizes[d];
        if (o == kOutside)
          outside = true;
        else
          base += o;
      }
      U* row = out + r * inner;
      if (outside) {
        for (int64_t j = 0; j < inner; ++j) row[j] = fill;
        continue;
      }
      const U* s = src + base;
      for (int64_t j = 0; j < inner; ++j) row[j] = last[j] == kOutside ? fill : s[last[j]];
    }
  });
}

template <typename F>
void visit_element_size(int64_t size, F&& f) {
  switch (size) {
    case 1:
      f.template operator()<uint8_t>();
      return;
    case 2:
      f.template operator()<uint16_t>();
      return;
    case 4:
      f.template operator()<uint32_t>();
      return;
    default:
      f.template operator()<uint64_t>();
      return;
  }
}

}  // namespace

void separable_gather(const Tensor& out, const Tensor& src,
                      const std::vector<std::vector<int64_t>>& tables, const Scalar& fill) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  visit_element_size(out.element_size(), [&]<typename U>() {
    U fill_bits = 0;
    visit_dtype(out.dtype(), [&]<typename T>() {
      const T v = fill.to<T>();
      static_assert(sizeof(T) <= sizeof(uint64_t));
      if constexpr (sizeof(T) == sizeof(U)) std::memcpy(&fill_bits, &v, sizeof(U));
    });
    gather_loop<U>(static_cast<U*>(out.data_ptr()), static_cast<const U*>(src.data_ptr()),
                   out.sizes(), tables, fill_bits, numel);
  });
}

void triangle(const Tensor& out, const Tensor& src, int64_t k, bool lower) {
  copy_into(out, src);
  if (out.numel() == 0) return;
  const int64_t rows = out.size(-2), cols = out.size(-1);
  const int64_t mats = out.numel() / (rows * cols);
  const int64_t es = out.element_size();
  char* base = static_cast<char*>(out.data_ptr());
  // Zero bytes are the value 0 (and +0.0) in every dtype, so one memset per row suffices.
  parallel::parallel_for_if(
      out.numel() > kParallelGrain, 0, mats, [&](int64_t m_begin, int64_t m_end) {
        for (int64_t m = m_begin; m < m_end; ++m) {
          for (int64_t i = 0; i < rows; ++i) {
            char* row = base + (m * rows + i) * cols * es;
            // tril keeps j <= i + k; triu keeps j >= i + k.
            int64_t begin, end;
            if (lower) {
              begin = std::clamp<int64_t>(i + k + 1, 0, cols);
              end = cols;
            } else {
              begin = 0;
              end = std::clamp<int64_t>(i + k, 0, cols);
            }
            if (end > begin)
              std::memset(row + begin * es, 0, static_cast<size_t>((end - begin) * es));
          }
        }
      });
}

Tensor nonzero(const Tensor& src) {
  const Tensor c = src.contiguous();
  const int64_t n = c.numel(), nd = c.dim();
  std::vector<int64_t> hits;
  visit_dtype(c.dtype(), [&]<typename T>() {
    const T* p = static_cast<const T*>(c.data_ptr());
    for (int64_t i = 0; i < n; ++i)
      if (cast_value<bool>(p[i])) hits.push_back(i);
  });
  const int64_t count = static_cast<int64_t>(hits.size());
  Tensor out = empty_tensor({count, nd}, kInt64);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t h = 0; h < count; ++h) {
    int64_t rem = hits[static_cast<size_t>(h)];
    for (int64_t d = nd - 1; d >= 0; --d) {
      o[h * nd + d] = rem % c.size(d);
      rem /= c.size(d);
    }
  }
  return out;
}

std::vector<int64_t> offset_table(IntArrayRef sizes, IntArrayRef strides) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> out(static_cast<size_t>(n), 0);
  if (n == 0) return out;
  int64_t filled = 1;  // out[0, filled) holds the table of the trailing dims done so far
  int64_t block = 1;
  // Build from the innermost dim out: table(d..n) = for i in size(d): i*stride(d) + table(d+1..n).
  std::vector<int64_t> tmp;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tmp.assign(out.begin(), out.begin() + filled);
    for (int64_t i = 0; i < sizes[d]; ++i)
      for (int64_t j = 0; j < block; ++j)
        out[static_cast<size_t>(i * block + j)] = i * strides[d] + tmp[static_cast<size_t>(j)];
    block *= sizes[d];
    filled = block;
  }
  return out;
}

}  // namespace kiln::cpu
