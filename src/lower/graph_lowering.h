// Lowers a (decomposed) graph into the loop IR: one TensorBox per graph value, buffers for what is
// realized, and the graph outputs as strided views of buffers (DESIGN.md section 5, lower).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/graph/graph.h"
#include "src/lower/ir.h"

namespace kiln::lower {

// The largest row (elements) a kernel keeps on its stack (Note [Local buffers] in
// src/sched/memory_plan.cpp); the realization rule for shared expensive values (Note
// [Realization]) applies only to reductions over rows this small.
inline constexpr int64_t kMaxLocalRowElements = 16384;

// Where a size symbol's value is read at run time.
struct SymbolSource {
  ExprPtr symbol;
  int input = 0;
  int dim = 0;
  bool is_stride = false;
};

class GraphLowering {
 public:
  explicit GraphLowering(const graph::Graph& graph);
  GraphLowering(const GraphLowering&) = delete;
  GraphLowering& operator=(const GraphLowering&) = delete;

  // Lowers every node; throws NotImplementedError for what the lowering cannot express (the
  // backend then runs the graph eagerly and says why).
  void run();

  const graph::Graph& graph() const { return graph_; }
  // Every buffer in creation order, which is a valid execution order.
  const std::vector<std::unique_ptr<Buffer>>& buffers() const { return buffers_; }
  const std::vector<StridedView>& outputs() const { return outputs_; }
  const std::vector<SymbolSource>& symbol_sources() const { return symbol_sources_; }

  // --- For lowerings ---------------------------------------------------------------------------
  const TensorBox& box(const graph::Value* v) const;
  // Realizes `loops` as a new ComputedBuffer.
  const ComputedBuffer* add_computed(Loops loops);
  const ExternBuffer* add_extern(Layout layout, const graph::Node* node,
                                 std::vector<StridedView> inputs, int output_index, int group);
  int new_extern_group() { return next_extern_group_++; }
  // A box realized to memory and viewed with strides (a copy when the view is not strided).
  StridedView as_strided(const TensorBox& box);
  // The input buffer of a placeholder value, or nullptr.
  const InputBuffer* input_buffer(const graph::Value* v) const;

 private:
  void lower_placeholder(const graph::Value* v, int index);
  void lower_call(const graph::Node& node);
  void lower_outputs();
  void apply_realization_rules(const graph::Node& node);
  std::string new_name(const char* prefix);

  const graph::Graph& graph_;
  std::unordered_map<const graph::Value*, TensorBox> boxes_;
  std::unordered_set<const graph::Node*> lowered_;  // calls lowered so far
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<StridedView> outputs_;
  std::vector<SymbolSource> symbol_sources_;
  int next_buffer_ = 0;
  int next_extern_group_ = 0;
};

// Note [Loop IR invariants]
// What every lowering must produce, checked by verify() after the `lower` pass when passes are
// verified (Note [Running a pass] in src/pipeline/pass.h): buffer names are unique; a layout has
// as many strides as sizes; a computed buffer's loop ranges match its sizes, its body reads only
// buffers created before it and writes only itself (or the earlier buffer it stores into); an
// extern call's inputs and the graph outputs view earlier buffers of the same lowering; and every
// symbol in a size, stride, offset or index is bound by an input's size or stride, by the sizes of
// an earlier extern call's output (a data-dependent size, bound when that call runs), or is a loop
// variable i0.., r0.. inside a body. A violation is a ValueError naming the buffer.
void verify(const GraphLowering& lowering);
// The same over parts (tests build broken IR with it).
void verify_loop_ir(std::span<const std::unique_ptr<Buffer>> buffers,
                    std::span<const StridedView> outputs, std::span<const SymbolSource> symbols);
// One line for a buffer: "buf3 = ComputedBuffer Pointwise<note>: float32 sizes [..] strides [..]".
std::string describe(const Buffer& b, std::string_view note = "");
// One line per symbol source, buffer (with what it reads) and output: what `KILN_LOGS=passes`
// prints after `lower`.
std::string to_string(const GraphLowering& lowering);

// Lowering of one call: the node's output boxes (one per output), or none to leave this call
// (a case the lowering does not cover) to the op's extern kernel.
using LoweringFn =
    std::function<std::vector<TensorBox>(GraphLowering& lowering, const graph::Node& node)>;
// Registers a lowering for the op named `op`; ops without one run as extern kernels.
void register_lowering(std::string_view op, LoweringFn fn);
// nullptr when the op has no lowering.
const LoweringFn* find_lowering(OpId op);
// Called once by GraphLowering: registers the lowerings in src/lower/lowerings/*.cpp.
void register_all_lowerings();

}  // namespace kiln::lower
