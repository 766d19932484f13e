#include "src/kernels/cpu/tensor_iter.h"

#include <algorithm>

#include "src/core/shape.h"
#include "src/util/parallel.h"

namespace kiln::cpu {

TensorIter::TensorIter(std::string_view op, std::initializer_list<Tensor> outputs,
                       std::initializer_list<Tensor> inputs) {
  build(op, std::span<const Tensor>(outputs.begin(), outputs.size()),
        std::span<const Tensor>(inputs.begin(), inputs.size()));
}

TensorIter::TensorIter(std::string_view op, std::span<const Tensor> outputs,
                       std::span<const Tensor> inputs) {
  build(op, outputs, inputs);
}

void TensorIter::build(std::string_view op, std::span<const Tensor> outputs,
                       std::span<const Tensor> inputs) {
  num_outputs_ = static_cast<int>(outputs.size());
  num_operands_ = static_cast<int>(outputs.size() + inputs.size());
  KILN_CHECK(num_outputs_ >= 1 && num_operands_ <= kMaxOperands, Error,
             "{}: TensorIter takes 1..{} operands with at least one output", op, kMaxOperands);
  IntArrayRef shape = outputs[0].sizes();
  const int64_t nd = static_cast<int64_t>(shape.size());
  numel_ = outputs[0].numel();
  shape_.resize(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) shape_[d] = shape[nd - 1 - d];

  for (int k = 0; k < num_operands_; ++k) {
    const Tensor& t = k < num_outputs_ ? outputs[k] : inputs[k - num_outputs_];
    IntArrayRef sizes = t.sizes();
    IntArrayRef strides = t.strides();
    const int64_t td = t.dim();
    if (k < num_outputs_) {
      KILN_CHECK(sizes == shape, ShapeError,
                 "{}: output {} has shape {} but the result has shape {}", op, k, shape_str(sizes),
                 shape_str(shape));
    }
    KILN_CHECK(td <= nd, ShapeError, "{}: input of shape {} cannot be broadcast to {}", op,
               shape_str(sizes), shape_str(shape));
    const int64_t esize = t.element_size();
    strides_[k].resize(static_cast<size_t>(nd));
    for (int64_t d = 0; d < nd; ++d) {  // d counts from the innermost dim
      int64_t s = 0;
      if (d < td) {
        const int64_t size = sizes[td - 1 - d];
        KILN_CHECK(size == shape_[d] || size == 1, ShapeError,
                   "{}: input of shape {} cannot be broadcast to {}", op, shape_str(sizes),
                   shape_str(shape));
        s = size == 1 ? 0 : strides[td - 1 - d] * esize;
      }
      strides_[k][d] = s;
    }
    base_[k] = static_cast<char*>(t.data_ptr());
  }
  coalesce();
}

void TensorIter::coalesce() {
  // Drop size-1 dims, then merge dim d+1 into d when every operand steps through them as one.
  DimVector shape;
  SmallVector<int64_t, 5> strides[kMaxOperands];
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] == 1) continue;
    bool merge = !shape.empty();
    for (int k = 0; k < num_operands_ && merge; ++k)
      merge = strides[k].back() * shape.back() == strides_[k][d];
    if (merge) {
      shape.back() *= shape_[d];
    } else {
      shape.push_back(shape_[d]);
      for (int k = 0; k < num_operands_; ++k) strides[k].push_back(strides_[k][d]);
    }
  }
  shape_ = std::move(shape);
  for (int k = 0; k < num_operands_; ++k) strides_[k] = std::move(strides[k]);
}

void TensorIter::serial_for_each(const Loop& loop, int64_t begin, int64_t end) const {
  if (begin >= end) return;
  char* ptrs[kMaxOperands];
  int64_t inner_strides[kMaxOperands];
  const int nd = ndim();
  if (nd == 0) {  // one element
    for (int k = 0; k < num_operands_; ++k) {
      ptrs[k] = base_[k];
      inner_strides[k] = 0;
    }
    loop(ptrs, inner_strides, 1);
    return;
  }
  for (int k = 0; k < num_operands_; ++k) inner_strides[k] = strides_[k][0];
  // Multi-index of `begin`, innermost first.
  int64_t counter[16];
  DimVector heap_counter;
  int64_t* idx = counter;
  if (nd > 16) {
    heap_counter.resize(static_cast<size_t>(nd));
    idx = heap_counter.data();
  }
  int64_t rest = begin;
  for (int d = 0; d < nd; ++d) {
    idx[d] = rest % shape_[d];
    rest /= shape_[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = std::min(shape_[0] - idx[0], end - pos);
    for (int k = 0; k < num_operands_; ++k) {
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += idx[d] * strides_[k][d];
      ptrs[k] = base_[k] + off;
    }
    loop(ptrs, inner_strides, n);
    pos += n;
    idx[0] += n;
    for (int d = 0; d < nd - 1 && idx[d] >= shape_[d]; ++d) {
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

void TensorIter::for_each(const Loop& loop, int64_t grain) const {
  if (numel_ == 0) return;
  parallel::parallel_for(0, numel_, grain,
                         [&](int64_t begin, int64_t end) { serial_for_each(loop, begin, end); });
}

}  // namespace kiln::cpu
