#include "src/lower/graph_lowering.h"

#include <algorithm>

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "kiln/error.h"
#include "src/lower/handlers/dependency_handler.h"
#include "src/lower/index_simplify.h"
#include "src/lower/lowerings/common.h"

namespace kiln::lower {
namespace {

// The loads of `pw`'s body at the element (i0, i1, ...) of its ranges.
std::vector<MemoryAccess> reads_of(const Pointwise& pw, const Index& index) {
  DependencyHandler deps;
  {
    HandlerScope scope(deps);
    (void)pw.inner_fn(index);
  }
  return deps.reads();
}

Index loop_index(const Pointwise& pw) {
  const std::vector<ExprPtr> vars = loop_vars('i', pw.ranges.size());
  return Index(vars.begin(), vars.end());
}

// True when `pw`'s body loads from the buffer called `name`.
bool reads_buffer(const Pointwise& pw, const std::string& name) {
  for (const MemoryAccess& read : reads_of(pw, loop_index(pw)))
    if (read.buffer == name) return true;
  return false;
}

// True when `pw`, stored into `target` element by element, reads `target` at an element other
// than the one being stored (Note [Mutation lowering]).
bool reads_target_elsewhere(const Pointwise& pw, const Buffer& target) {
  const Index index = loop_index(pw);
  const ExprPtr stored = target.layout().offset_of(index);
  for (const MemoryAccess& read : reads_of(pw, index))
    if (read.buffer == target.name() && read.index != stored) return true;
  return false;
}

std::unordered_map<OpId, LoweringFn>& lowering_table() {
  static std::unordered_map<OpId, LoweringFn> table;
  return table;
}

// The op named `name` without a trailing underscore ("add_.Scalar" -> "add.Scalar"), or "".
std::string functional_name(std::string_view name) {
  const size_t dot = name.find('.');
  std::string_view base = name.substr(0, dot);
  if (base.empty() || base.back() != '_') return {};
  std::string out(base.substr(0, base.size() - 1));
  if (dot != std::string_view::npos) out += name.substr(dot);
  return out;
}

}  // namespace

void register_lowering(std::string_view op, LoweringFn fn) {
  lowering_table()[op_id(op)] = std::move(fn);
}

const LoweringFn* find_lowering(OpId op) {
  auto it = lowering_table().find(op);
  return it == lowering_table().end() ? nullptr : &it->second;
}

void register_pointwise_lowerings();  // lowerings/pointwise.cpp
void register_reduction_lowerings();  // lowerings/reduction.cpp
void register_view_lowerings();       // lowerings/views.cpp
void register_misc_lowerings();       // lowerings/misc.cpp
void register_pooling_lowerings();    // lowerings/pooling.cpp

void register_all_lowerings() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_pointwise_lowerings();
    register_reduction_lowerings();
    register_view_lowerings();
    register_misc_lowerings();
    register_pooling_lowerings();
  });
}

GraphLowering::GraphLowering(const graph::Graph& graph) : graph_(graph) {
  register_all_lowerings();
}

const TensorBox& GraphLowering::box(const graph::Value* v) const {
  auto it = boxes_.find(v);
  KILN_CHECK(it != boxes_.end(), ValueError, "lower: value {} used before it was lowered",
             v->name());
  return it->second;
}

std::string GraphLowering::new_name(const char* prefix) {
  return fmt::format("{}{}", prefix, next_buffer_++);
}

const ComputedBuffer* GraphLowering::add_computed(Loops loops) {
  const auto& ranges =
      std::visit([](const auto& l) -> const std::vector<ExprPtr>& { return l.ranges; }, loops);
  const ScalarType dtype = std::visit([](const auto& l) { return l.dtype; }, loops);
  auto b = std::make_unique<ComputedBuffer>(new_name("buf"), Layout::contiguous(dtype, ranges),
                                            std::move(loops));
  const ComputedBuffer* p = b.get();
  buffers_.push_back(std::move(b));
  return p;
}

const ExternBuffer* GraphLowering::add_extern(Layout layout, const graph::Node* node,
                                              std::vector<StridedView> inputs, int output_index,
                                              int group) {
  auto b = std::make_unique<ExternBuffer>(new_name("buf"), std::move(layout), node,
                                          std::move(inputs), output_index, group);
  const ExternBuffer* p = b.get();
  buffers_.push_back(std::move(b));
  return p;
}

const InputBuffer* GraphLowering::input_buffer(const graph::Value* v) const {
  auto it = boxes_.find(v);
  if (it == boxes_.end() || it->second.is_view() || !it->second.storage()->is_realized())
    return nullptr;
  const Buffer* b = it->second.storage()->buffer();
  return b->kind() == Buffer::Kind::Input ? static_cast<const InputBuffer*>(b) : nullptr;
}

StridedView GraphLowering::as_strided(const TensorBox& box) {
  const Buffer* base = box.storage()->realize(*this);
  const std::vector<ExprPtr> vars = loop_vars('i', box.dim());
  VarRanges ranges;
  for (size_t d = 0; d < vars.size(); ++d) ranges[vars[d]] = box.sizes()[d];
  ExprPtr flat = simplify_index(base->layout().offset_of(box.storage_index(vars)), ranges);
  StridedView view{base, box.sizes(), {}, drop_vars(flat, vars)};
  bool linear = true;
  for (size_t d = 0; d < vars.size() && linear; ++d) {
    auto c = linear_coefficient(flat, vars[d]);
    if (!c)
      linear = false;
    else
      view.strides.push_back(*c);
  }
  if (linear) return view;
  // Not expressible with strides: copy into a contiguous buffer.
  const ComputedBuffer* copy = add_computed(Pointwise{box.dtype(), box.sizes(), box.make_loader()});
  const Layout& cl = copy->layout();
  return StridedView{copy, cl.sizes, cl.strides, cl.offset};
}

void GraphLowering::lower_placeholder(const graph::Value* v, int index) {
  const graph::TensorMeta& m = v->meta();
  Layout layout;
  layout.dtype = m.dtype;
  layout.sizes = to_exprs(m.sizes);
  layout.strides = to_exprs(m.strides);
  // Kernels receive a pointer to the input's first element (Note [Kernel ABI] in
  // src/runtime/program.h), so the storage offset is already applied.
  layout.offset = sym::integer(0);
  // Note [Where a symbol is read]
  // A symbol is read from an input's size where any input has it as a size (an earlier input's
  // stride gives way to a later input's size), otherwise from a stride. Never from the stride of
  // a dim of size 0 or 1: no element is addressed through it, so a tensor may carry any number
  // there (a saved select of [1, s1] came back with stride 0 where it was traced with s1, and the
  // backward divided by that "s1"). The interpreter binds in the same order (interpreter.cpp).
  for (bool stride : {false, true}) {
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      SymInt s = stride ? m.strides[d] : m.sizes[d];
      if (!s.is_symbolic() || !s.expr()->is_symbol()) continue;
      if (stride && !m.sizes[d].is_symbolic() && m.sizes[d].raw() <= 1) continue;
      auto known = std::find_if(symbol_sources_.begin(), symbol_sources_.end(),
                                [&](const SymbolSource& src) { return src.symbol == s.expr(); });
      const SymbolSource source{s.expr(), index, static_cast<int>(d), stride};
      if (known == symbol_sources_.end())
        symbol_sources_.push_back(source);
      else if (known->is_stride && !stride)
        *known = source;
    }
  }
  auto b = std::make_unique<InputBuffer>(fmt::format("arg{}", index), std::move(layout), index);
  boxes_[v] = TensorBox::of(std::make_shared<StorageBox>(b.get()));
  buffers_.push_back(std::move(b));
}

// Note [Realization]
// When does a value get its own memory? The rules, all here:
// - reductions always (their lowering creates the buffer);
// - inputs of extern kernels and graph outputs (as_strided, lower_outputs); a graph output that
//   other nodes read too is realized where it is computed, so they read it instead of computing
//   it again (a residual sum that a layer norm reduces and the backward saves: stored at the end,
//   the forward computed it twice and read its three inputs twice);
// - values read by more than one consumer when recomputing them in each would cost too much:
//   more than kMaxInlineOps operations or kMaxInlineReads loads in the body, or more than
//   kMaxInlineUsers consumers (Inductor's realize_opcount/reads thresholds play the same part);
// - values with an expensive operation (exp, log, erf, ...) that a reduction over a static row
//   of at most kMaxLocalRowElements reads and another consumer reads too: softmax's
//   exp(x - max) is summed and then divided by the sum. Realized,
//   both read it instead of computing it twice, and when they fuse into one kernel the buffer is a
//   kernel-local row (Note [Local buffers] in src/sched/memory_plan.cpp), so it costs no
//   memory traffic either;
// - every pending value still to be read, before a node that mutates memory, so no body reads a
//   location after the mutation that it meant to read before it; before an in-place op on a
//   whole graph input, only the pending values that read that input (and not the value a copy_
//   stores, when nothing else reads it).
// Everything else is inlined into its consumers: a pointwise chain becomes one loop body.
namespace {
constexpr int kMaxInlineOps = 30;
constexpr int kMaxInlineReads = 8;
constexpr int kMaxInlineUsers = 4;
}  // namespace

namespace {

// Does `user` reduce `value` over dims whose sizes are static and at most kMaxLocalRowElements
// in all (a row that can live on a kernel's stack)? Reductions take their dims as args[1] (an
// empty list: all dims).
bool reduces_a_small_row(const graph::Node& user, const graph::Value& value) {
  if (user.kind() != graph::NodeKind::Call || !user.op_def().has_tag(kTagReduction)) return false;
  if (user.args().size() < 2 || !user.args()[1].is_constant() ||
      !user.args()[1].as_constant().is_int_list())
    return false;
  const auto& sizes = value.meta().sizes;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  std::vector<bool> reduced(sizes.size(), user.args()[1].as_constant().sym_int_list().empty());
  for (SymInt d : user.args()[1].as_constant().sym_int_list()) {
    if (d.is_symbolic() || rank == 0) return false;
    const int64_t dim = d.raw() < 0 ? d.raw() + rank : d.raw();
    if (dim < 0 || dim >= rank) return false;
    reduced[dim] = true;
  }
  int64_t row = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!reduced[d]) continue;
    if (sizes[d].is_symbolic()) return false;
    row *= sizes[d].raw();
    if (row > kMaxLocalRowElements) return false;
  }
  return true;
}

}  // namespace

void GraphLowering::apply_realization_rules(const graph::Node& node) {
  for (const graph::Value* out : node.outputs()) {
    auto it = boxes_.find(out);
    if (it == boxes_.end() || it->second.storage()->is_realized()) continue;
    const size_t users = out->users().size();
    if (users <= 1) continue;
    const StorageBox& s = *it->second.storage();
    DependencyHandler deps;
    {
      HandlerScope scope(deps);
      s.pointwise().inner_fn(loop_vars('i', s.sizes().size()));
    }
    const bool reduced =
        std::any_of(out->users().begin(), out->users().end(),
                    [&](const graph::Node* u) { return reduces_a_small_row(*u, *out); });
    const bool output =
        std::find(graph_.outputs().begin(), graph_.outputs().end(), out) != graph_.outputs().end();
    if (output || users > static_cast<size_t>(kMaxInlineUsers) || deps.op_count() > kMaxInlineOps ||
        deps.reads().size() > static_cast<size_t>(kMaxInlineReads) ||
        (reduced && deps.expensive_op_count() > 0)) {
      it->second.storage()->realize(*this);
    }
  }
}

void GraphLowering::lower_call(const graph::Node& node) {
  const OpDef& def = node.op_def();
  // A higher-order op (no lowering) and _local_scalar_dense become extern calls: codegen compiles
  // the former's subgraphs into the step (Note [Higher-order ops in a program] in
  // src/runtime/program.h) and binds the latter's symbol from its value (Note [Scalar outputs in
  // a graph] in src/ops/scalar_output.cpp).
  if (node.mutates() || def.has_tag(kTagRandom)) {
    // Note [Realization], last rule. An in-place op on a whole graph input writes only that
    // input: values that do not read it stay inline, and so does the value a copy_ stores when
    // nothing else reads it.
    const graph::Value* self =
        def.has_tag(kTagInplace) && node.args()[0].is_value() ? node.args()[0].as_value() : nullptr;
    const InputBuffer* target = self != nullptr ? input_buffer(self) : nullptr;
    const graph::Value* stored =
        target != nullptr && def.name == "copy_" && node.args()[1].is_value()
            ? node.args()[1].as_value()
            : nullptr;
    for (auto& [value, box] : boxes_) {
      if (box.storage()->is_realized()) continue;
      const bool still_read =
          std::any_of(value->users().begin(), value->users().end(),
                      [&](const graph::Node* u) { return u != &node && !lowered_.contains(u); }) ||
          value == stored ||
          std::find(graph_.outputs().begin(), graph_.outputs().end(), value) !=
              graph_.outputs().end();
      if (!still_read) continue;
      if (target != nullptr) {
        if (value == stored && value->users().size() == 1) continue;
        if (!reads_buffer(box.storage()->pointwise(), target->name())) continue;
      }
      box.storage()->realize(*this);
    }
  }
  if (def.has_tag(kTagInplace)) {
    // Note [Mutation lowering]
    // An in-place op on a whole graph input whose functional form has a lowering stores its
    // result straight into the input's memory (no copy); on an intermediate that nothing else
    // aliases it is the functional op. Anything else (views of inputs, aliased values) runs the
    // eager kernel on the buffer's memory as an extern call.
    const LoweringFn* fn = nullptr;
    if (def.name == "copy_" || def.name == "fill_") {
      fn = find_lowering(def.id);  // lowered as the value they write (lowerings/misc.cpp)
    } else if (const OpDef* f = OpRegistry::instance().find(functional_name(def.name))) {
      fn = find_lowering(f->id);
    }
    const graph::Value* self = node.args()[0].is_value() ? node.args()[0].as_value() : nullptr;
    if (fn != nullptr && self != nullptr) {
      const TensorBox& self_box = box(self);
      const InputBuffer* input = input_buffer(self);
      const graph::Node* producer = self->producer();
      const bool plain_intermediate =
          input == nullptr && !self_box.is_view() && producer != nullptr &&
          producer->kind() == graph::NodeKind::Call && !producer->op_def().has_tag(kTagView) &&
          self->users().size() == 1;
      if (input != nullptr || plain_intermediate) {
        TensorBox result = (*fn)(*this, node).at(0);
        const ScalarType dtype = self->meta().dtype;
        Loader ld = result.make_loader();
        Pointwise pw{dtype, self_box.sizes(),
                     [ld, dtype](const Index& i) { return cast(ld(i), dtype); }};
        if (input != nullptr) {
          if (reads_target_elsewhere(pw, *input)) {
            // x.add_(x.t()): stored element by element, the value would read elements already
            // overwritten. It is computed whole into its own buffer first, then copied in (the
            // scheduler keeps the copy out of the producer's kernel: it writes what that reads
            // elsewhere).
            const ComputedBuffer* whole = add_computed(std::move(pw));
            Loader copy = TensorBox::of(std::make_shared<StorageBox>(whole)).make_loader();
            pw = Pointwise{dtype, self_box.sizes(), copy};
          }
          ComputedBuffer* b = const_cast<ComputedBuffer*>(add_computed(std::move(pw)));
          b->set_store_target(input);
          boxes_[node.output(0)] = boxes_.at(self);
        } else {
          boxes_[node.output(0)] = make_pointwise(dtype, pw.ranges, pw.inner_fn);
        }
        return;
      }
    }
  }
  // Mutating ops not handled above run eagerly on the buffers' memory.
  const LoweringFn* lowering = node.mutates() ? nullptr : find_lowering(node.op());
  std::vector<TensorBox> outs;
  if (lowering != nullptr) outs = (*lowering)(*this, node);  // none: a case it leaves extern
  if (!outs.empty()) {
    KILN_CHECK(outs.size() == node.outputs().size(), ValueError,
               "lower: the lowering of {} made {} outputs for {}", def.name, outs.size(),
               node.outputs().size());
    for (size_t i = 0; i < outs.size(); ++i) boxes_[node.output(i)] = std::move(outs[i]);
    apply_realization_rules(node);
    return;
  }
  // Extern kernel: the eager op on strided views of realized buffers.
  std::vector<StridedView> inputs;
  for (const graph::Value* v : node.inputs()) inputs.push_back(as_strided(box(v)));
  const int group = new_extern_group();
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    const graph::TensorMeta& m = node.output(i)->meta();
    Layout layout;
    layout.dtype = m.dtype;
    layout.sizes = to_exprs(m.sizes);
    layout.strides = to_exprs(m.strides);
    layout.offset = sym::integer(0);
    const ExternBuffer* b =
        add_extern(std::move(layout), &node, inputs, static_cast<int>(i), group);
    boxes_[node.output(i)] = TensorBox::of(std::make_shared<StorageBox>(b));
  }
}

void GraphLowering::lower_outputs() {
  for (const graph::Value* v : graph_.outputs()) outputs_.push_back(as_strided(box(v)));
}

void GraphLowering::run() {
  int index = 0;
  for (const graph::Value* p : graph_.placeholders()) lower_placeholder(p, index++);
  for (const graph::Node* node : graph_.calls()) {
    lower_call(*node);
    lowered_.insert(node);
  }
  lower_outputs();
}

}  // namespace kiln::lower
