#include "src/sched/scheduler.h"

#include "src/sched/loop_plan.h"
#include "src/sched/memory_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/error.h"
#include "src/lower/index_simplify.h"

namespace kiln::sched {
namespace {

using lower::Buffer;
using lower::ComputedBuffer;
using lower::DependencyHandler;
using lower::Index;
using lower::MemoryAccess;

const ExprPtr kOne = sym::integer(1);

SchedNode make_node(const ComputedBuffer* b) {
  SchedNode n;
  n.buffer = b;
  const auto& ranges = b->ranges();
  for (size_t d = 0; d < ranges.size(); ++d) {
    if (ranges[d] == kOne) continue;
    n.kept_dims.push_back(static_cast<int64_t>(d));
    n.ranges.push_back(ranges[d]);
  }
  if (const auto* r = std::get_if<lower::Reduction>(&b->loops())) {
    for (size_t d = 0; d < r->reduction_ranges.size(); ++d) {
      if (r->reduction_ranges[d] == kOne) continue;
      n.kept_reduction_dims.push_back(static_cast<int64_t>(d));
      n.reduction_ranges.push_back(r->reduction_ranges[d]);
    }
  }
  return n;
}

bool is_prefix(const std::vector<ExprPtr>& p, const std::vector<ExprPtr>& of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}

// Loop variables of `node` when the kernel's outer loops are `outer_dims` long: i0.. for the
// outer dims, j0.. for the node's own inner dims.
std::vector<ExprPtr> node_vars(const SchedNode& node, size_t outer_dims) {
  std::vector<ExprPtr> vars;
  for (size_t d = 0; d < node.ranges.size(); ++d) {
    vars.push_back(d < outer_dims ? sym::symbol(fmt::format("i{}", d))
                                  : sym::symbol(fmt::format("j{}", d - outer_dims)));
  }
  return vars;
}

struct Accesses {
  std::vector<MemoryAccess> reads, writes;
};

Accesses accesses(const SchedNode& node, size_t outer_dims) {
  DependencyHandler deps;
  node.run_body(deps, node_vars(node, outer_dims),
                lower::loop_vars('r', node.reduction_ranges.size()));
  return {deps.reads(), deps.writes()};
}

bool mentions_inner_vars(ExprPtr e) {
  for (ExprPtr s : sym::free_symbols(e)) {
    const char c = s->name()[0];
    if (c == 'j' || c == 'r') return true;
  }
  return false;
}

// May `reader` (later in the kernel) read at `read` what `writer` wrote at `write`, within one
// outer iteration? (Note [Fusion])
bool same_iteration(const SchedNode& writer, ExprPtr write, const SchedNode& reader, ExprPtr read) {
  if (read != write) return false;
  if (!mentions_inner_vars(write)) return true;
  return writer.ranges == reader.ranges && writer.reduction_ranges.empty() &&
         reader.reduction_ranges.empty();
}

// Or: does `reader`, later in the kernel, reduce over exactly `writer`'s inner loops and read
// each element where `writer` wrote it (the same index once its reduction variables are named
// as the writer's inner ones)? Within one outer iteration the writer's loops run to completion
// before the reader's start, so every element read was written in that iteration: softmax's
// exp(x - max), written for a row and then summed over it.
bool reduces_what_was_written(const SchedNode& writer, ExprPtr write, const SchedNode& reader,
                              ExprPtr read, size_t outer_dims) {
  if (same_iteration(writer, write, reader, read)) return true;
  if (!writer.reduction_ranges.empty() || !reader.is_reduction() ||
      reader.ranges.size() != outer_dims || writer.ranges.size() < outer_dims)
    return false;
  const std::vector<ExprPtr> inner(writer.ranges.begin() + static_cast<long>(outer_dims),
                                   writer.ranges.end());
  if (inner != reader.reduction_ranges) return false;
  const ExprPtr renamed = sym::substitute(read, [](ExprPtr v) -> ExprPtr {
    return v->name()[0] == 'r'
               ? sym::symbol(fmt::format("j{}", std::string_view(v->name()).substr(1)))
               : nullptr;
  });
  return renamed == write;
}

}  // namespace

lower::Index SchedNode::index_for(const std::vector<ExprPtr>& vars) const {
  Index index(buffer->ranges().size(), sym::integer(0));
  for (size_t k = 0; k < kept_dims.size(); ++k) index[kept_dims[k]] = vars[k];
  return index;
}

lower::Index SchedNode::rindex_for(const std::vector<ExprPtr>& rvars) const {
  const auto& r = std::get<lower::Reduction>(buffer->loops());
  Index index(r.reduction_ranges.size(), sym::integer(0));
  for (size_t k = 0; k < kept_reduction_dims.size(); ++k) index[kept_reduction_dims[k]] = rvars[k];
  return index;
}

const lower::Buffer& SchedNode::target() const {
  return buffer->store_target() != nullptr ? *buffer->store_target() : *buffer;
}

void SchedNode::run_body(lower::OpsHandler& handler, const std::vector<ExprPtr>& vars,
                         const std::vector<ExprPtr>& rvars) const {
  lower::HandlerScope scope(handler);
  const Index index = index_for(vars);
  const Buffer& out = target();
  const ExprPtr offset = out.layout().offset_of(index);
  if (const auto* r = std::get_if<lower::Reduction>(&buffer->loops())) {
    lower::Val v = r->inner_fn(index, rindex_for(rvars));
    lower::Val acc = handler.reduction(r->type, v);
    handler.store_reduction(out.ref(), offset, lower::cast(acc, out.dtype()));
    return;
  }
  const auto& pw = std::get<lower::Pointwise>(buffer->loops());
  handler.store(out.ref(), offset, lower::cast(pw.inner_fn(index), out.dtype()));
}

namespace {

class Fuser {
 public:
  explicit Fuser(Schedule& out) : out_(out) {}

  void add(const ComputedBuffer* b) {
    SchedNode node = make_node(b);
    if (current_ && try_fuse(node)) return;
    flush();
    current_ = Kernel{};
    current_->outer = node.ranges;
    current_->nodes.push_back(std::move(node));
  }

  void flush() {
    if (!current_) return;
    current_->name = fmt::format("kernel{}", kernel_count_++);
    std::string names;
    for (const SchedNode& n : current_->nodes)
      names += (names.empty() ? "" : ", ") + n.buffer->name();
    out_.fusion_log.push_back(fmt::format("{}: [{}] over ({})", current_->name, names,
                                          fmt::join(
                                              [&] {
                                                std::vector<std::string> s;
                                                for (ExprPtr e : current_->outer)
                                                  s.push_back(sym::to_string(e));
                                                return s;
                                              }(),
                                              ", ")));
    out_.steps.push_back(std::move(*current_));
    current_.reset();
  }

 private:
  bool try_fuse(SchedNode& node) {
    Kernel& k = *current_;
    bool has_reduction = false;
    for (const SchedNode& n : k.nodes) has_reduction |= n.is_reduction();
    std::vector<ExprPtr> outer;
    if (node.is_reduction()) {
      if (node.ranges == k.outer)
        outer = k.outer;
      else if (!has_reduction && is_prefix(node.ranges, k.outer))
        outer = node.ranges;
      else
        return reject(node, "its output loops differ from the kernel's");
    } else if (is_prefix(k.outer, node.ranges)) {
      outer = k.outer;
    } else if (!has_reduction && is_prefix(node.ranges, k.outer)) {
      outer = node.ranges;
    } else {
      return reject(node, "its loops do not share the kernel's outer loops");
    }
    // No outer loop left while the nodes still loop: fusing would serialize them.
    if (outer.empty()) {
      bool loops = !node.ranges.empty();
      for (const SchedNode& n : k.nodes) loops |= !n.ranges.empty();
      if (loops) return reject(node, "they would share no outer loop");
    }
    const Accesses mine = accesses(node, outer.size());
    for (const SchedNode& other : k.nodes) {
      const Accesses theirs = accesses(other, outer.size());
      for (const MemoryAccess& w : theirs.writes) {
        for (const MemoryAccess& r : mine.reads) {
          if (r.buffer == w.buffer &&
              !reduces_what_was_written(other, w.index, node, r.index, outer.size()))
            return reject(node, fmt::format("it reads {} at another index than {} writes it",
                                            r.buffer, other.buffer->name()));
        }
        for (const MemoryAccess& w2 : mine.writes) {
          if (w2.buffer == w.buffer) return reject(node, "both write " + w.buffer);
        }
      }
      for (const MemoryAccess& r : theirs.reads) {
        for (const MemoryAccess& w : mine.writes) {
          if (r.buffer == w.buffer && !same_iteration(node, w.index, other, r.index))
            return reject(node, fmt::format("it writes {} that {} reads elsewhere", w.buffer,
                                            other.buffer->name()));
        }
      }
    }
    k.outer = std::move(outer);
    k.nodes.push_back(std::move(node));
    return true;
  }

  bool reject(const SchedNode& node, const std::string& why) {
    out_.fusion_log.push_back(
        fmt::format("{} not fused into the current kernel: {}", node.buffer->name(), why));
    return false;
  }

  Schedule& out_;
  std::optional<Kernel> current_;
  int kernel_count_ = 0;
};

}  // namespace

Schedule schedule(const lower::GraphLowering& lowering) {
  Schedule s;
  Fuser fuser(s);
  int current_group = -1;
  for (const auto& b : lowering.buffers()) {
    switch (b->kind()) {
      case Buffer::Kind::Input:
        break;
      case Buffer::Kind::Computed:
        current_group = -1;
        fuser.add(static_cast<const ComputedBuffer*>(b.get()));
        break;
      case Buffer::Kind::Extern: {
        fuser.flush();
        const auto* e = static_cast<const lower::ExternBuffer*>(b.get());
        if (e->group() != current_group) {
          s.steps.push_back(ExternCall{});
          current_group = e->group();
        }
        std::get<ExternCall>(s.steps.back()).outputs.push_back(e);
        break;
      }
    }
  }
  fuser.flush();
  // The decisions codegen prints: what each kernel touches, which buffers stay in a kernel, and
  // where the others live.
  for (Step& step : s.steps)
    if (auto* k = std::get_if<Kernel>(&step)) {
      for (const SchedNode& n : k->nodes) {
        DependencyHandler deps;
        n.run_body(deps, lower::loop_vars('i', n.ranges.size()),
                   lower::loop_vars('r', n.reduction_ranges.size()));
        k->accesses.push_back({deps.reads(), deps.writes()});
      }
    }
  s.local_buffers = find_local_buffers(lowering, s);
  s.memory = plan_memory(lowering, s);
  for (Step& step : s.steps)
    if (auto* k = std::get_if<Kernel>(&step)) plan_loops(*k, s.local_buffers);
  return s;
}

}  // namespace kiln::sched

namespace kiln::sched {
namespace {
std::string ranges_text(const std::vector<ExprPtr>& v) {
  std::vector<std::string> s;
  for (ExprPtr e : v) s.push_back(sym::to_string(e));
  return fmt::format("[{}]", fmt::join(s, ", "));
}
std::string groups_text(const LoopGroups& groups) {
  std::vector<std::string> s;
  for (const auto& g : groups) s.push_back(fmt::format("{{{}}}", fmt::join(g, ", ")));
  return fmt::format("[{}]", fmt::join(s, ", "));
}
}  // namespace

std::string to_string(const Schedule& schedule) {
  std::string out;
  for (const Step& step : schedule.steps) {
    if (const auto* k = std::get_if<Kernel>(&step)) {
      out += fmt::format("kernel {} over {}:\n", k->name.empty() ? "(unnamed)" : k->name,
                         ranges_text(k->outer));
      for (const SchedNode& n : k->nodes) {
        out += fmt::format("  {} {}", n.buffer->name(), ranges_text(n.ranges));
        if (n.is_reduction()) out += " reduce " + ranges_text(n.reduction_ranges);
        if (n.buffer->store_target() != nullptr)
          out += " (stores into " + n.buffer->store_target()->name() + ")";
        out += "\n";
      }
      if (k->outer_loops.size() < k->outer.size())
        out += fmt::format("  merged outer loops {}\n", groups_text(k->outer_loops));
      for (const NodeGroup& g : k->groups) {
        if (g.end > g.first + 1)
          out += fmt::format("  one loop nest: {}..{}\n", k->nodes[g.first].buffer->name(),
                             k->nodes[g.end - 1].buffer->name());
        if (!g.reduction_loops.empty())
          out += fmt::format("  {} merged reduction loops {}\n", k->nodes[g.first].buffer->name(),
                             groups_text(g.reduction_loops));
      }
    } else {
      std::vector<std::string> names;
      for (const lower::ExternBuffer* e : std::get<ExternCall>(step).outputs)
        names.push_back(e->name());
      const auto& first = *std::get<ExternCall>(step).outputs.front();
      out += fmt::format("extern {} -> {}\n", first.node()->op_def().name, fmt::join(names, ", "));
    }
  }
  for (const auto& [name, row] : schedule.local_buffers)
    out += fmt::format("local {} [{}]\n", name, row);
  for (const auto& [name, slot] : schedule.memory.slot_of)
    out += fmt::format("memory {} -> slot{} ({} bytes)\n", name, slot,
                       sym::to_string(schedule.memory.slot_bytes[slot]));
  for (const std::string& line : schedule.fusion_log) out += "# fusion: " + line + "\n";
  return out;
}

}  // namespace kiln::sched
