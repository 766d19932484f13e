// The unrolling behind convolution as GEMM (conv.cpp forward, conv_backward.cpp backward):
// im2col copies each output position's input window into a column of a
// [channels * kH * kW, oH * oW] matrix; col2im is its adjoint, adding each column back into the
// window it came from (what the input gradient needs). The _kernel_row variants unroll one
// kernel row at a time (Note [Convolution by kernel rows] in conv.cpp); vol2col and col2vol_add
// are the 3-D forms, one depth tap and output depth at a time through the 2-D ones.
//
// Both loop over (channel, kernel row, kernel column, output row) and compute once, per kernel
// column, the range of output columns whose input column lies inside the input: inside it, a
// stride-1 row is one contiguous copy/add the compiler vectorizes; outside it is padding (zeros in
// im2col, nothing to add in col2im).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/kernels/cpu/conv.h"

namespace kiln::cpu {

// Output columns [lo, hi) with 0 <= o * stride + offset < in (offset = kernel column * dilation -
// padding), clipped to [0, out).
struct ValidRange {
  int64_t lo, hi;
};
inline ValidRange valid_range(int64_t offset, int64_t stride, int64_t in, int64_t out) {
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t hi = in - 1 - offset < 0 ? 0 : (in - 1 - offset) / stride + 1;
  const int64_t clo = std::min(lo, out), chi = std::min(hi, out);
  return {clo, std::max(clo, chi)};
}

// The output rows whose input row for kernel row i (oy * stride_h + i * dilation_h - pad_h) lies
// inside the input.
inline ValidRange kernel_row_outputs(const ConvGeometry& g, int64_t i) {
  return valid_range(i * g.dilation_h - g.pad_h, g.stride_h, g.in_h, g.out_h);
}

// The input row that output row oy reads for kernel row i.
inline int64_t input_row(const ConvGeometry& g, int64_t i, int64_t oy) {
  return oy * g.stride_h + i * g.dilation_h - g.pad_h;
}

// Note [Convolution rows as one block]
// With stride 1 and an output as wide as the input ("same" padding, the usual 3x3 / padding 1),
// the output rows [lo, hi) of one (channel, kernel row, kernel column) read consecutive input
// rows, all shifted by the same dx columns: the block of them is one shifted copy (or add) of
// (hi - lo) * W elements, after which the few positions whose column falls in the padding are
// zeroed. Row by row, each 14- or 28-float row of the demo CNN was a memcpy call of its own.
// For the add (col2im), those positions are zeroed in the column matrix first, so that the block
// add carries nothing into the neighbouring row's edge.
inline bool same_width_rows(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.out_w == g.in_w;
}

// dst[k] = src[k + dx] for the n elements of a block of rows `width` wide, with the columns
// outside [x.lo, x.hi) of every row zero.
template <typename T>
void copy_shifted_block(const T* src, int64_t dx, int64_t n, int64_t width, ValidRange x, T* dst) {
  const int64_t k0 = std::max<int64_t>(0, -dx), k1 = std::min(n, n - dx);
  std::fill(dst, dst + k0, T(0));
  if (k1 > k0) std::memcpy(dst + k0, src + k0 + dx, static_cast<size_t>(k1 - k0) * sizeof(T));
  std::fill(dst + std::max(k0, k1), dst + n, T(0));
  if (x.lo == 0 && x.hi == width) return;
  for (int64_t r = 0; r < n; r += width) {
    std::fill(dst + r, dst + r + x.lo, T(0));
    std::fill(dst + r + x.hi, dst + r + width, T(0));
  }
}

// dst[k + dx] += src[k] for the n elements of a block of rows `width` wide whose columns inside
// [x.lo, x.hi) count; the others are zeroed in src first (a scratch column matrix).
template <typename T>
void add_shifted_block(T* src, int64_t dx, int64_t n, int64_t width, ValidRange x, T* dst) {
  if (x.lo != 0 || x.hi != width) {
    for (int64_t r = 0; r < n; r += width) {
      std::fill(src + r, src + r + x.lo, T(0));
      std::fill(src + r + x.hi, src + r + width, T(0));
    }
  }
  const int64_t k0 = std::max<int64_t>(0, -dx), k1 = std::min(n, n - dx);
  T* d = dst + k0 + dx;
  const T* s = src + k0;
  for (int64_t k = 0; k < k1 - k0; ++k) d[k] += s[k];
}

// col [channels * kH * kW, oH * oW] <- the windows of `channels` planes of `in` ([in_h, in_w]
// each, contiguous); positions in the padding read as zero. Rows of col are `ld` apart (oH * oW
// when 0). Only the 2-D fields of g are read.
template <typename T>
void im2col(const T* in, int64_t channels, const ConvGeometry& g, T* col, int64_t ld = 0) {
  const int64_t ohw = g.out_h * g.out_w;
  if (ld == 0) ld = ohw;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = in + c * g.in_h * g.in_w;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        const int64_t dx = j * g.dilation_w - g.pad_w;
        const ValidRange x = valid_range(dx, g.stride_w, g.in_w, g.out_w);
        if (same_width_rows(g)) {  // Note [Convolution rows as one block]
          const ValidRange rows = kernel_row_outputs(g, i);
          std::fill(row, row + rows.lo * g.out_w, T(0));
          copy_shifted_block(plane + input_row(g, i, rows.lo) * g.in_w, dx,
                             (rows.hi - rows.lo) * g.out_w, g.out_w, x, row + rows.lo * g.out_w);
          std::fill(row + rows.hi * g.out_w, row + ohw, T(0));
          continue;
        }
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          T* dst = row + oy * g.out_w;
          const int64_t iy = input_row(g, i, oy);
          if (iy < 0 || iy >= g.in_h) {
            std::fill(dst, dst + g.out_w, T(0));
            continue;
          }
          const T* src = plane + iy * g.in_w;
          std::fill(dst, dst + x.lo, T(0));
          if (g.stride_w == 1) {
            std::memcpy(dst + x.lo, src + x.lo + dx, static_cast<size_t>(x.hi - x.lo) * sizeof(T));
          } else {
            for (int64_t ox = x.lo; ox < x.hi; ++ox) dst[ox] = src[ox * g.stride_w + dx];
          }
          std::fill(dst + x.hi, dst + g.out_w, T(0));
        }
      }
    }
  }
}

// in += col2im(col): the adjoint of im2col. `in` holds `channels` planes (not cleared here).
// `col` is scratch: Note [Convolution rows as one block] zeroes its padding positions. Rows of
// col are `ld` apart (oH * oW when 0).
template <typename T>
void col2im_add(T* col, int64_t channels, const ConvGeometry& g, T* in, int64_t ld = 0) {
  if (ld == 0) ld = g.out_h * g.out_w;
  for (int64_t c = 0; c < channels; ++c) {
    T* plane = in + c * g.in_h * g.in_w;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        const int64_t dx = j * g.dilation_w - g.pad_w;
        const ValidRange x = valid_range(dx, g.stride_w, g.in_w, g.out_w);
        if (same_width_rows(g)) {  // Note [Convolution rows as one block]
          const ValidRange rows = kernel_row_outputs(g, i);
          add_shifted_block(row + rows.lo * g.out_w, dx, (rows.hi - rows.lo) * g.out_w, g.out_w, x,
                            plane + input_row(g, i, rows.lo) * g.in_w);
          continue;
        }
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          const int64_t iy = input_row(g, i, oy);
          if (iy < 0 || iy >= g.in_h) continue;
          const T* src = row + oy * g.out_w;
          T* dst = plane + iy * g.in_w;
          if (g.stride_w == 1) {
            T* d = dst + x.lo + dx;
            const T* s = src + x.lo;
            for (int64_t k = 0; k < x.hi - x.lo; ++k) d[k] += s[k];
          } else {
            for (int64_t ox = x.lo; ox < x.hi; ++ox) dst[ox * g.stride_w + dx] += src[ox];
          }
        }
      }
    }
  }
}

// A 1x1 kernel with stride 1 and no padding reads the input as it is: the input is the column
// matrix, no unrolling.
inline bool conv_reads_input_directly(const ConvGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
         g.pad_w == 0 && g.kernel_d == 1 && g.stride_d == 1 && g.pad_d == 0;
}

// The input depth that output depth od reads for kernel depth tap kd.
inline int64_t input_depth(const ConvGeometry& g, int64_t kd, int64_t od) {
  return od * g.stride_d + kd * g.dilation_d - g.pad_d;
}

// The 3-D im2col: col [channels * kD * kH * kW, oD * oH * oW] <- the windows of `channels`
// volumes of `in` ([in_d, in_h, in_w] each, contiguous). For each (channel, depth tap, output
// depth) the block of kH * kW rows over that output depth's oH * oW columns is the 2-D im2col of
// the input plane it reads, or zeros where that plane is depth padding. A planar geometry is
// im2col itself.
template <typename T>
void vol2col(const T* in, int64_t channels, const ConvGeometry& g, T* col) {
  if (is_planar(g)) return im2col(in, channels, g, col);
  const int64_t ohw = g.out_h * g.out_w, ld = g.out_d * ohw, taps = g.kernel_h * g.kernel_w;
  const int64_t plane = g.in_h * g.in_w;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kd = 0; kd < g.kernel_d; ++kd) {
      T* rows = col + (c * g.kernel_d + kd) * taps * ld;
      for (int64_t od = 0; od < g.out_d; ++od) {
        const int64_t id = input_depth(g, kd, od);
        if (id < 0 || id >= g.in_d) {
          for (int64_t r = 0; r < taps; ++r)
            std::fill(rows + r * ld + od * ohw, rows + r * ld + (od + 1) * ohw, T(0));
          continue;
        }
        im2col(in + (c * g.in_d + id) * plane, 1, g, rows + od * ohw, ld);
      }
    }
}

// in += the adjoint of vol2col (`col` is scratch, as for col2im_add). A planar geometry is
// col2im_add itself.
template <typename T>
void col2vol_add(T* col, int64_t channels, const ConvGeometry& g, T* in) {
  if (is_planar(g)) return col2im_add(col, channels, g, in);
  const int64_t ohw = g.out_h * g.out_w, ld = g.out_d * ohw, taps = g.kernel_h * g.kernel_w;
  const int64_t plane = g.in_h * g.in_w;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kd = 0; kd < g.kernel_d; ++kd) {
      T* rows = col + (c * g.kernel_d + kd) * taps * ld;
      for (int64_t od = 0; od < g.out_d; ++od) {
        const int64_t id = input_depth(g, kd, od);
        if (id >= 0 && id < g.in_d)
          col2im_add(rows + od * ohw, 1, g, in + (c * g.in_d + id) * plane, ld);
      }
    }
}

// Whether the GEMMs run per kernel row (Note [Convolution by kernel rows] in conv.cpp): when a
// kernel row's unrolled depth C_g * kW is enough for an efficient GEMM. 64 is measured: at 48
// (16 channels, 3 columns) the per-row backward was already slower than one full product.
// (Planar geometries only: a 3-D one unrolls whole, vol2col.)
inline bool conv_by_kernel_rows(const ConvGeometry& g) {
  return is_planar(g) && g.kernel_h > 1 && g.in_channels / g.groups * g.kernel_w >= 64;
}

// Weights [O, C_g, kH, kW] reordered to [O, kH, C_g, kW], so kernel row i of output channel o is
// the contiguous [C_g * kW] slice at (o * kH + i) * C_g * kW, rows of one GEMM operand
// [O_g, C_g * kW] with leading dimension kH * C_g * kW.
template <typename T>
void weights_by_kernel_rows(const T* w, const ConvGeometry& g, T* out) {
  const int64_t cg = g.in_channels / g.groups, kh = g.kernel_h, kw = g.kernel_w;
  for (int64_t o = 0; o < g.out_channels; ++o)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t c = 0; c < cg; ++c)
        std::memcpy(out + ((o * kh + i) * cg + c) * kw, w + ((o * cg + c) * kh + i) * kw,
                    static_cast<size_t>(kw) * sizeof(T));
}

// Kernel row i of im2col, for the output rows `rows` = kernel_row_outputs(g, i) only:
// col [channels * kW, (rows.hi - rows.lo) * oW], rows ordered (channel, kernel column).
template <typename T>
void im2col_kernel_row(const T* in, int64_t channels, const ConvGeometry& g, int64_t i,
                       ValidRange rows, T* col) {
  const int64_t n = (rows.hi - rows.lo) * g.out_w;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = in + c * g.in_h * g.in_w;
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      T* row = col + (c * g.kernel_w + j) * n;
      const int64_t dx = j * g.dilation_w - g.pad_w;
      const ValidRange x = valid_range(dx, g.stride_w, g.in_w, g.out_w);
      if (same_width_rows(g)) {  // Note [Convolution rows as one block]
        copy_shifted_block(plane + input_row(g, i, rows.lo) * g.in_w, dx, n, g.out_w, x, row);
        continue;
      }
      for (int64_t oy = rows.lo; oy < rows.hi; ++oy) {
        T* dst = row + (oy - rows.lo) * g.out_w;
        const T* src = plane + input_row(g, i, oy) * g.in_w;
        std::fill(dst, dst + x.lo, T(0));
        if (g.stride_w == 1) {
          std::memcpy(dst + x.lo, src + x.lo + dx, static_cast<size_t>(x.hi - x.lo) * sizeof(T));
        } else {
          for (int64_t ox = x.lo; ox < x.hi; ++ox) dst[ox] = src[ox * g.stride_w + dx];
        }
        std::fill(dst + x.hi, dst + g.out_w, T(0));
      }
    }
  }
}

// in += the adjoint of im2col_kernel_row (`col` is scratch, as for col2im_add).
template <typename T>
void col2im_kernel_row_add(T* col, int64_t channels, const ConvGeometry& g, int64_t i,
                           ValidRange rows, T* in) {
  const int64_t n = (rows.hi - rows.lo) * g.out_w;
  for (int64_t c = 0; c < channels; ++c) {
    T* plane = in + c * g.in_h * g.in_w;
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      T* row = col + (c * g.kernel_w + j) * n;
      const int64_t dx = j * g.dilation_w - g.pad_w;
      const ValidRange x = valid_range(dx, g.stride_w, g.in_w, g.out_w);
      if (same_width_rows(g)) {  // Note [Convolution rows as one block]
        add_shifted_block(row, dx, n, g.out_w, x, plane + input_row(g, i, rows.lo) * g.in_w);
        continue;
      }
      for (int64_t oy = rows.lo; oy < rows.hi; ++oy) {
        const T* src = row + (oy - rows.lo) * g.out_w;
        T* dst = plane + input_row(g, i, oy) * g.in_w;
        if (g.stride_w == 1) {
          T* d = dst + x.lo + dx;
          const T* s = src + x.lo;
          for (int64_t k = 0; k < x.hi - x.lo; ++k) d[k] += s[k];
        } else {
          for (int64_t ox = x.lo; ox < x.hi; ++ox) dst[ox * g.stride_w + dx] += src[ox];
        }
      }
    }
  }
}

}  // namespace kiln::cpu
