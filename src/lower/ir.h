// The loop IR (DESIGN.md section 5, lower): what graph ops become before scheduling.
//
//   TensorBox ──► StorageBox ──► Pointwise / Reduction   (not yet realized: a body, no memory)
//       │              └───────► Buffer                  (realized: InputBuffer, ComputedBuffer,
//       │                                                 ExternBuffer; has a name and a layout)
//       └── view: sizes + reindex                        (a view never allocates)
//
// Note [Views never allocate]
// A view (permute, slice, expand, reshape, select, ...) is a TensorBox over the same StorageBox
// with a `reindex` function from the view's index to the storage's index; loading through a view
// composes the reindex with the storage's loader. Reshape of a non-contiguous value is index
// arithmetic too (flatten, then unflatten), simplified with the loop ranges (index_simplify.h).
// A view becomes memory only when something needs a strided tensor (an extern kernel's input, a
// graph output): then it is a StridedView of the realized buffer when its index is linear in the
// loop variables, and a copy otherwise.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/dispatch/dispatcher.h"
#include "src/lower/ops_handler.h"

namespace kiln::graph {
class Node;
}

namespace kiln::lower {

using sym::ExprPtr;
using Index = std::vector<ExprPtr>;
// The value at `index` (one expression per dim) under the current handler.
using Loader = std::function<Val(const Index& index)>;
// A reduction body: the value at output `index` and reduction index `rindex`.
using ReductionFn = std::function<Val(const Index& index, const Index& rindex)>;

// Sizes, strides and storage offset of a buffer in elements (expressions over size symbols).
struct Layout {
  ScalarType dtype = kFloat32;
  std::vector<ExprPtr> sizes;
  std::vector<ExprPtr> strides;
  ExprPtr offset;  // never null

  static Layout contiguous(ScalarType dtype, std::vector<ExprPtr> sizes);
  // The flat element offset of `index`.
  ExprPtr offset_of(const Index& index) const;
  ExprPtr numel() const;
};

struct Pointwise {
  ScalarType dtype = kFloat32;
  std::vector<ExprPtr> ranges;
  Loader inner_fn;
};

struct Reduction {
  ScalarType dtype = kFloat32;  // of the result
  std::vector<ExprPtr> ranges;  // output (kept dims, size 1 where keepdim)
  std::vector<ExprPtr> reduction_ranges;
  ReductionType type = ReductionType::sum;
  ReductionFn inner_fn;  // returns the value fed to the accumulator (its dtype)
};

using Loops = std::variant<Pointwise, Reduction>;

// A realized value: named memory with a layout.
class Buffer {
 public:
  enum class Kind : uint8_t { Input, Computed, Extern };
  Buffer(Kind kind, std::string name, Layout layout)
      : kind_(kind), name_(std::move(name)), layout_(std::move(layout)) {}
  virtual ~Buffer() = default;

  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  const Layout& layout() const { return layout_; }
  ScalarType dtype() const { return layout_.dtype; }
  BufferRef ref() const { return {name_, layout_.dtype}; }
  // Loads element `index` of this buffer (through its layout).
  Val load(const Index& index) const;

 private:
  Kind kind_;
  std::string name_;
  Layout layout_;
};

// A graph input (placeholder); its strides are the input tensor's (symbolic or not).
class InputBuffer : public Buffer {
 public:
  InputBuffer(std::string name, Layout layout, int input_index)
      : Buffer(Kind::Input, std::move(name), std::move(layout)), input_index_(input_index) {}
  int input_index() const { return input_index_; }

 private:
  int input_index_;
};

// The output of a generated loop nest; contiguous.
class ComputedBuffer : public Buffer {
 public:
  ComputedBuffer(std::string name, Layout layout, Loops loops)
      : Buffer(Kind::Computed, std::move(name), std::move(layout)), loops_(std::move(loops)) {}
  const Loops& loops() const { return loops_; }
  bool is_reduction() const { return std::holds_alternative<Reduction>(loops_); }
  // The loop ranges: pointwise ranges, or the reduction's output ranges.
  const std::vector<ExprPtr>& ranges() const;
  // Store into an existing buffer instead of this one's own memory (in-place mutation of an
  // input: Note [Mutation lowering] in graph_lowering.cpp). nullptr: its own memory.
  const Buffer* store_target() const { return store_target_; }
  void set_store_target(const Buffer* b) { store_target_ = b; }

 private:
  Loops loops_;
  const Buffer* store_target_ = nullptr;
};

// A strided view of a realized buffer, as an extern kernel or a graph output needs it.
struct StridedView {
  const Buffer* buffer = nullptr;
  std::vector<ExprPtr> sizes;
  std::vector<ExprPtr> strides;
  ExprPtr offset;
};

// The output of an op run by the eager kernels (matmul, convolution, sort, ...). `node` is the
// graph call; `inputs[i]` is the strided view passed for the i-th tensor the call reads
// (graph::Node::inputs() order). Multi-output ops make one ExternBuffer per output.
class ExternBuffer : public Buffer {
 public:
  ExternBuffer(std::string name, Layout layout, const graph::Node* node,
               std::vector<StridedView> inputs, int output_index, int group)
      : Buffer(Kind::Extern, std::move(name), std::move(layout)),
        node_(node),
        inputs_(std::move(inputs)),
        output_index_(output_index),
        group_(group) {}
  const graph::Node* node() const { return node_; }
  const std::vector<StridedView>& inputs() const { return inputs_; }
  int output_index() const { return output_index_; }
  // Outputs of one call share a group id (one extern step).
  int group() const { return group_; }

 private:
  const graph::Node* node_;
  std::vector<StridedView> inputs_;
  int output_index_;
  int group_;
};

class GraphLowering;

// Holds a value that may or may not be realized yet (Note [Realization] in realize.cpp).
class StorageBox {
 public:
  explicit StorageBox(Pointwise pw) : data_(std::move(pw)) {}
  explicit StorageBox(const Buffer* b) : data_(b) {}

  bool is_realized() const { return std::holds_alternative<const Buffer*>(data_); }
  const Buffer* buffer() const { return std::get<const Buffer*>(data_); }
  const Pointwise& pointwise() const { return std::get<Pointwise>(data_); }
  ScalarType dtype() const;
  const std::vector<ExprPtr>& sizes() const;
  // Makes it a ComputedBuffer of `lowering` (no-op when realized).
  const Buffer* realize(GraphLowering& lowering);
  Loader make_loader() const;

 private:
  std::variant<Pointwise, const Buffer*> data_;
  std::vector<ExprPtr> buffer_sizes_;
};

// A graph value during lowering: a storage and a view of it (Note [Views never allocate]).
class TensorBox {
 public:
  TensorBox() = default;
  static TensorBox of(std::shared_ptr<StorageBox> storage);
  // A view: `sizes` and a map from a view index to an index of this box.
  TensorBox view(std::vector<ExprPtr> sizes, std::function<Index(const Index&)> reindex) const;

  ScalarType dtype() const { return storage_->dtype(); }
  const std::vector<ExprPtr>& sizes() const { return sizes_; }
  size_t dim() const { return sizes_.size(); }
  const std::shared_ptr<StorageBox>& storage() const { return storage_; }
  bool is_view() const { return static_cast<bool>(reindex_); }
  // The index of the storage that `index` of this box reads.
  Index storage_index(const Index& index) const;
  Loader make_loader() const;

 private:
  std::shared_ptr<StorageBox> storage_;
  std::vector<ExprPtr> sizes_;
  std::function<Index(const Index&)> reindex_;  // empty: identity
};

}  // namespace kiln::lower
