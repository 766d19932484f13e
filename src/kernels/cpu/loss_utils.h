// Helpers shared by the loss kernels (loss.cpp) and their backward kernels (loss_backward.cpp).
#pragma once

#include <string_view>
#include <vector>

#include "src/core/shape.h"
#include "src/kernels/cpu/loops.h"

namespace kiln::cpu {

// Class indices as int64 with -1 for ignored targets. Checked here, on one thread: IndexError for
// a target outside [0, C) that is not ignore_index (checked first, as PyTorch does).
inline std::vector<int64_t> class_indices(const Tensor& target, int64_t C, int64_t ignore_index,
                                          std::string_view op, IntArrayRef input_shape) {
  std::vector<int64_t> idx(static_cast<size_t>(target.numel()));
  visit_dtype_in<dtypes::kIntegral>(target.dtype(), op, [&]<typename I>() {
    const std::vector<I> raw = target.to_vector<I>();
    for (size_t i = 0; i < raw.size(); ++i) {
      const I v = raw[i];
      bool ignored, in_range;
      if constexpr (std::is_signed_v<I>) {
        ignored = static_cast<int64_t>(v) == ignore_index;
        in_range = v >= 0 && static_cast<int64_t>(v) < C;
      } else {
        ignored =
            ignore_index >= 0 && static_cast<uint64_t>(v) == static_cast<uint64_t>(ignore_index);
        in_range = static_cast<uint64_t>(v) < static_cast<uint64_t>(C);
      }
      KILN_CHECK(ignored || in_range, IndexError,
                 "{}: target {} (at position {} of target of shape {}) is out of range for {} "
                 "classes (input of shape {}); class indices must be in [0, {}) or equal "
                 "ignore_index ({})",
                 op, v, i, shape_str(target.sizes()), C, shape_str(input_shape), C, ignore_index);
      idx[i] = ignored ? -1 : static_cast<int64_t>(v);
    }
  });
  return idx;
}

}  // namespace kiln::cpu
