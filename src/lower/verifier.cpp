// The loop-IR verifier and printer (Note [Loop IR invariants] in graph_lowering.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <unordered_map>

#include "kiln/error.h"
#include "src/lower/graph_lowering.h"
#include "src/lower/handlers/dependency_handler.h"
#include "src/lower/index_simplify.h"

namespace kiln::lower {
namespace {

[[noreturn]] void fail(std::string_view buffer, const std::string& what) {
  throw ValueError(fmt::format("verify loop IR: {}: {}", buffer, what));
}

std::string list(const std::vector<ExprPtr>& v) {
  std::vector<std::string> s;
  for (ExprPtr e : v) s.push_back(e ? sym::to_string(e) : "<null>");
  return fmt::format("[{}]", fmt::join(s, ", "));
}

struct Accesses {
  std::vector<MemoryAccess> reads, writes;
};

// Runs a computed buffer's body once over symbolic loop variables i0.. and r0.., recording what
// it reads and writes.
Accesses accesses(const ComputedBuffer& b) {
  DependencyHandler deps;
  HandlerScope scope(deps);
  const Index index = loop_vars('i', b.ranges().size());
  const Buffer& out = b.store_target() != nullptr ? *b.store_target() : b;
  if (const auto* r = std::get_if<Reduction>(&b.loops())) {
    const Val v = r->inner_fn(index, loop_vars('r', r->reduction_ranges.size()));
    deps.store_reduction(out.ref(), out.layout().offset_of(index), deps.reduction(r->type, v));
  } else {
    deps.store(out.ref(), out.layout().offset_of(index),
               std::get<Pointwise>(b.loops()).inner_fn(index));
  }
  return {deps.reads(), deps.writes()};
}

class Verifier {
 public:
  explicit Verifier(std::span<const SymbolSource> symbols) {
    for (const SymbolSource& s : symbols) {
      if (s.symbol == nullptr || !s.symbol->is_symbol())
        fail("symbols", "a symbol source without a symbol");
      known_symbols_.insert(s.symbol);
    }
  }

  void add(const Buffer& b) {
    const std::string& name = b.name();
    if (name.empty()) fail("<unnamed>", "a buffer without a name");
    if (by_name_.contains(name)) fail(name, "two buffers have this name");
    if (b.kind() == Buffer::Kind::Extern) {
      // An extern call allocates its output: a data-dependent size (an unbacked symbol such as
      // nonzero's u0) is bound when it runs.
      for (ExprPtr e : b.layout().sizes)
        if (e != nullptr)
          for (ExprPtr s : sym::free_symbols(e)) known_symbols_.insert(s);
      // _local_scalar_dense binds the symbol it defines from its value (Note [Scalar outputs in
      // a graph] in src/ops/scalar_output.cpp).
      const graph::Node* node = static_cast<const ExternBuffer&>(b).node();
      if (node != nullptr && node->op_def().has_tag(kTagDefinesSymbol) && node->args().size() > 1 &&
          node->args()[1].is_constant()) {
        const SymInt defined = node->args()[1].as_constant().to_sym_int();
        if (defined.is_symbolic()) known_symbols_.insert(defined.expr());
      }
    }
    check_layout(name, b.layout());
    switch (b.kind()) {
      case Buffer::Kind::Input:
        break;
      case Buffer::Kind::Computed:
        check_computed(static_cast<const ComputedBuffer&>(b));
        break;
      case Buffer::Kind::Extern:
        for (const StridedView& v : static_cast<const ExternBuffer&>(b).inputs())
          check_view(name, v, "an input of its extern call");
        break;
    }
    by_name_.emplace(name, &b);
  }

  void check_output(size_t i, const StridedView& v) {
    check_view(fmt::format("output {}", i), v, "a graph output");
  }

 private:
  void check_symbols(std::string_view where, ExprPtr e, bool loop_vars_allowed) {
    if (e == nullptr) fail(where, "a null index or size expression");
    for (ExprPtr s : sym::free_symbols(e)) {
      if (known_symbols_.contains(s)) continue;
      const char c = s->name().empty() ? '\0' : s->name()[0];
      if (loop_vars_allowed && (c == 'i' || c == 'r')) continue;
      fail(where, fmt::format("{} mentions {}, which no input size or stride binds",
                              sym::to_string(e), s->name()));
    }
  }

  void check_layout(std::string_view name, const Layout& layout) {
    if (layout.strides.size() != layout.sizes.size())
      fail(name,
           fmt::format("{} sizes but {} strides", layout.sizes.size(), layout.strides.size()));
    for (ExprPtr e : layout.sizes) check_symbols(name, e, false);
    for (ExprPtr e : layout.strides) check_symbols(name, e, false);
    check_symbols(name, layout.offset, false);
  }

  void check_view(std::string_view where, const StridedView& v, std::string_view role) {
    if (v.buffer == nullptr) fail(where, fmt::format("{} views no buffer", role));
    auto it = by_name_.find(v.buffer->name());
    if (it == by_name_.end() || it->second != v.buffer)
      fail(where, fmt::format("{} views {}, which is not an earlier buffer of this lowering", role,
                              v.buffer->name()));
    if (v.sizes.size() != v.strides.size())
      fail(where,
           fmt::format("{} has {} sizes but {} strides", role, v.sizes.size(), v.strides.size()));
    for (ExprPtr e : v.sizes) check_symbols(where, e, false);
    for (ExprPtr e : v.strides) check_symbols(where, e, false);
    check_symbols(where, v.offset, false);
  }

  void check_computed(const ComputedBuffer& b) {
    const std::string& name = b.name();
    if (b.ranges().size() != b.layout().sizes.size())
      fail(name, fmt::format("loop ranges {} do not match its sizes {}", list(b.ranges()),
                             list(b.layout().sizes)));
    for (ExprPtr e : b.ranges()) check_symbols(name, e, false);
    if (const auto* r = std::get_if<Reduction>(&b.loops()))
      for (ExprPtr e : r->reduction_ranges) check_symbols(name, e, false);
    const Buffer* target = b.store_target();
    if (target != nullptr &&
        (!by_name_.contains(target->name()) || by_name_.at(target->name()) != target))
      fail(name, fmt::format("stores into {}, which is not an earlier buffer", target->name()));
    const Accesses deps = accesses(b);
    for (const MemoryAccess& read : deps.reads) {
      if (!by_name_.contains(read.buffer))
        fail(name, fmt::format("reads {}, which is not defined before it", read.buffer));
      check_symbols(name, read.index, true);
    }
    const std::string& written = target != nullptr ? target->name() : name;
    for (const MemoryAccess& write : deps.writes) {
      if (write.buffer != written)
        fail(name,
             fmt::format("writes {}; a computed buffer writes only {}", write.buffer, written));
      check_symbols(name, write.index, true);
    }
  }

  std::unordered_map<std::string, const Buffer*> by_name_;
  std::set<ExprPtr> known_symbols_;
};

std::string reads_of(const Buffer& b) {
  if (b.kind() != Buffer::Kind::Computed) return "";
  std::vector<std::string> reads;
  const Accesses deps = accesses(static_cast<const ComputedBuffer&>(b));
  for (const MemoryAccess& a : deps.reads)
    reads.push_back(fmt::format("{}[{}]", a.buffer, sym::to_string(a.index)));
  return reads.empty() ? "" : fmt::format(" reads {}", fmt::join(reads, ", "));
}

}  // namespace

std::string describe(const Buffer& b, std::string_view note) {
  std::string kind;
  switch (b.kind()) {
    case Buffer::Kind::Input:
      kind = fmt::format("InputBuffer {}", static_cast<const InputBuffer&>(b).input_index());
      break;
    case Buffer::Kind::Extern: {
      const auto& e = static_cast<const ExternBuffer&>(b);
      std::vector<std::string> inputs;
      for (const StridedView& v : e.inputs()) inputs.push_back(v.buffer->name());
      kind = fmt::format("ExternKernel {}({})", e.node()->op_def().name, fmt::join(inputs, ", "));
      break;
    }
    case Buffer::Kind::Computed: {
      const auto& c = static_cast<const ComputedBuffer&>(b);
      if (const auto* r = std::get_if<Reduction>(&c.loops()))
        kind = fmt::format("ComputedBuffer Reduction {} over {}", name_of(r->type),
                           list(r->reduction_ranges));
      else
        kind = "ComputedBuffer Pointwise";
      if (c.store_target() != nullptr) kind += " (stores into " + c.store_target()->name() + ")";
      break;
    }
  }
  return fmt::format("{} = {}{}: {} sizes {} strides {}\n", b.name(), kind, note,
                     dtype_name(b.dtype()), list(b.layout().sizes), list(b.layout().strides));
}

void verify_loop_ir(std::span<const std::unique_ptr<Buffer>> buffers,
                    std::span<const StridedView> outputs, std::span<const SymbolSource> symbols) {
  Verifier v(symbols);
  for (const auto& b : buffers) v.add(*b);
  for (size_t i = 0; i < outputs.size(); ++i) v.check_output(i, outputs[i]);
}

void verify(const GraphLowering& lowering) {
  verify_loop_ir(lowering.buffers(), lowering.outputs(), lowering.symbol_sources());
}

std::string to_string(const GraphLowering& lowering) {
  std::string out;
  for (const SymbolSource& s : lowering.symbol_sources())
    out += fmt::format("{} = input {} {} {}\n", s.symbol->name(), s.input,
                       s.is_stride ? "stride" : "size", s.dim);
  for (const auto& b : lowering.buffers()) out += describe(*b, reads_of(*b));
  for (size_t i = 0; i < lowering.outputs().size(); ++i) {
    const StridedView& v = lowering.outputs()[i];
    out += fmt::format("output {} = {} sizes {} strides {} offset {}\n", i, v.buffer->name(),
                       list(v.sizes), list(v.strides), sym::to_string(v.offset));
  }
  return out;
}

}  // namespace kiln::lower
