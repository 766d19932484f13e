#include "src/kernels/cpu/index.h"

#include <cstring>

#include "src/core/cast.h"
#include "src/kernels/cpu/tensor_iter.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

template <typename T>
T add_wrapping(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return T(static_cast<opmath_t<T>>(a) + static_cast<opmath_t<T>>(b));
  }
}

}  // namespace

void gather_offsets(const Tensor& out, const Tensor& src, const std::vector<int64_t>& src_offsets) {
  const int64_t n = static_cast<int64_t>(src_offsets.size());
  if (n == 0) return;
  const int64_t es = out.element_size();
  char* o = static_cast<char*>(out.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  auto run = [&]<typename U>() {
    U* op = reinterpret_cast<U*>(o);
    const U* sp = reinterpret_cast<const U*>(s);
    parallel::parallel_for_if(n > kParallelGrain, 0, n, [&](int64_t p_begin, int64_t p_end) {
      for (int64_t p = p_begin; p < p_end; ++p) op[p] = sp[src_offsets[static_cast<size_t>(p)]];
    });
  };
  switch (es) {
    case 1:
      run.template operator()<uint8_t>();
      break;
    case 2:
      run.template operator()<uint16_t>();
      break;
    case 4:
      run.template operator()<uint32_t>();
      break;
    default:
      run.template operator()<uint64_t>();
      break;
  }
}

void scatter_offsets(const Tensor& dst, const std::vector<int64_t>& dst_offsets,
                     const Tensor& values, bool accumulate) {
  const int64_t n = static_cast<int64_t>(dst_offsets.size());
  if (n == 0) return;
  // Serial: duplicate offsets must accumulate exactly and, without accumulate, the last write
  // wins deterministically.
  visit_dtype(dst.dtype(), [&]<typename T>() {
    T* d = static_cast<T*>(dst.data_ptr());
    const T* v = static_cast<const T*>(values.data_ptr());
    if (accumulate) {
      for (int64_t p = 0; p < n; ++p) {
        T& slot = d[dst_offsets[static_cast<size_t>(p)]];
        slot = add_wrapping(slot, v[p]);
      }
    } else {
      for (int64_t p = 0; p < n; ++p) d[dst_offsets[static_cast<size_t>(p)]] = v[p];
    }
  });
}

bool AdvancedOffsets::rows_are_contiguous() const {
  if (after.size() < 2) return false;  // rows of one element: the element loops are as fast
  for (size_t a = 0; a < after.size(); ++a)
    if (after[a] != static_cast<int64_t>(a)) return false;
  return true;
}

namespace {

// Calls copy(r, element offset of row r) for every (b, k) row: in order, or across threads when
// `parallel` (rows that do not overlap) and there are enough bytes.
template <typename Copy>
void for_each_row(const AdvancedOffsets& offsets, size_t row_bytes, bool parallel, Copy&& copy) {
  const int64_t k = static_cast<int64_t>(offsets.index.size());
  const int64_t rows = static_cast<int64_t>(offsets.before.size()) * k;
  const bool threads = parallel && rows * static_cast<int64_t>(row_bytes) > kParallelGrain * 8;
  parallel::parallel_for_if(threads, 0, rows, [&](int64_t r_begin, int64_t r_end) {
    for (int64_t r = r_begin; r < r_end; ++r)
      copy(r,
           offsets.before[static_cast<size_t>(r / k)] + offsets.index[static_cast<size_t>(r % k)]);
  });
}

}  // namespace

void gather_rows(const Tensor& out, const Tensor& src, const AdvancedOffsets& offsets) {
  const int64_t es = src.element_size();
  const size_t row_bytes = offsets.after.size() * static_cast<size_t>(es);
  char* o = static_cast<char*>(out.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  for_each_row(offsets, row_bytes, /*parallel=*/true, [&](int64_t r, int64_t from) {
    std::memcpy(o + r * static_cast<int64_t>(row_bytes), s + from * es, row_bytes);
  });
}

// Note [Writing rows in parallel, last write wins]
// With duplicate rows the last write wins, as element by element, so the rows cannot simply be
// shared out across threads. Into a contiguous dst, whose indexed rows are whole rows of
// row_elems elements (so two rows are the same or disjoint), each thread takes a band of dst's
// rows and makes every write that lands in it, in order: each row's last write is still the
// last one, and the threads never write the same bytes. Every thread reads all the offsets,
// which are one integer per row of hundreds of bytes.
void scatter_rows(const Tensor& dst, const AdvancedOffsets& offsets, const Tensor& values) {
  const int64_t es = dst.element_size();
  const int64_t row_elems = static_cast<int64_t>(offsets.after.size());
  const size_t row_bytes = static_cast<size_t>(row_elems * es);
  char* d = static_cast<char*>(dst.data_ptr());
  const char* v = static_cast<const char*>(values.data_ptr());
  const int64_t k = static_cast<int64_t>(offsets.index.size());
  const int64_t rows = static_cast<int64_t>(offsets.before.size()) * k;
  const auto to_of = [&](int64_t r) {
    return offsets.before[static_cast<size_t>(r / k)] + offsets.index[static_cast<size_t>(r % k)];
  };
  const auto whole_rows = [&] {
    for (int64_t r = 0; r < rows; ++r)
      if (to_of(r) % row_elems != 0) return false;
    return true;
  };
  const bool parallel = dst.is_contiguous() && !parallel::in_parallel_region() &&
                        parallel::num_threads() > 1 &&
                        rows * static_cast<int64_t>(row_bytes) > kParallelGrain * 8 && whole_rows();
  if (!parallel) {
    for (int64_t r = 0; r < rows; ++r)
      std::memmove(d + to_of(r) * es, v + r * static_cast<int64_t>(row_bytes), row_bytes);
    return;
  }
  const int64_t dst_rows = dst.numel() / row_elems;
  // Each part writes the destination rows in its range (rows may repeat: the last write wins,
  // as serially).
  const int64_t parts = parallel::num_threads();
  parallel::parallel_for(0, parts, 1, [&](int64_t part_begin, int64_t part_end) {
    const int64_t lo = dst_rows * part_begin / parts, hi = dst_rows * part_end / parts;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t to = to_of(r);
      const int64_t row = to / row_elems;
      if (row >= lo && row < hi)
        std::memcpy(d + to * es, v + r * static_cast<int64_t>(row_bytes), row_bytes);
    }
  });
}

std::vector<int64_t> AdvancedOffsets::flatten() const {
  std::vector<int64_t> out;
  out.reserve(before.size() * index.size() * after.size());
  for (int64_t b : before)
    for (int64_t k : index)
      for (int64_t a : after) out.push_back(b + k + a);
  return out;
}

}  // namespace kiln::cpu
