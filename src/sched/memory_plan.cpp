#include "src/sched/memory_plan.h"

#include <algorithm>
#include <optional>
#include <set>

#include "src/lower/index_simplify.h"
#include "src/sched/scheduler.h"

namespace kiln::sched {
namespace {

using lower::Buffer;
using lower::ExprPtr;

ExprPtr product(const std::vector<ExprPtr>& sizes) {
  ExprPtr p = sym::integer(1);
  for (ExprPtr s : sizes) p = sym::mul(p, s);
  return p;
}

// The row size of `writer`'s buffer as a kernel-local array, or nullopt when Note [Local
// buffers]' conditions do not hold.
std::optional<int64_t> local_size(const Kernel& k, const SchedNode& writer) {
  const size_t outer = k.outer.size();
  const std::string& name = writer.buffer->name();
  const std::vector<ExprPtr> ivars = lower::loop_vars('i', outer);
  const auto local_index = [&](ExprPtr e) {
    return sym::substitute(e, [&](ExprPtr v) {
      return std::find(ivars.begin(), ivars.end(), v) != ivars.end() ? sym::integer(0) : nullptr;
    });
  };
  const auto separable = [&](ExprPtr e) {
    for (ExprPtr v : sym::free_symbols(sym::sub(e, local_index(e))))
      if (std::find(ivars.begin(), ivars.end(), v) == ivars.end()) return false;
    return true;
  };
  // The row: the writer's inner loops, row-major.
  ExprPtr row = sym::integer(1), linear = sym::integer(0);
  const std::vector<ExprPtr> all = lower::loop_vars('i', writer.ranges.size());
  for (size_t d = outer; d < writer.ranges.size(); ++d) {
    linear = sym::add(sym::mul(linear, writer.ranges[d]), all[d]);
    row = sym::mul(row, writer.ranges[d]);
  }
  if (!row->is_integer() || row->value() > lower::kMaxLocalRowElements) return std::nullopt;
  bool written = false, read = false;
  for (size_t node = 0; node < k.nodes.size(); ++node) {
    const NodeAccesses& deps = k.accesses[node];
    for (const auto& a : deps.reads) {
      if (a.buffer != name) continue;
      if (!separable(a.index)) return std::nullopt;
      read = true;
    }
    for (const auto& a : deps.writes) {
      if (a.buffer != name) continue;
      if (&k.nodes[node] != &writer || !separable(a.index) ||
          sym::sub(local_index(a.index), linear) != sym::integer(0))
        return std::nullopt;
      written = true;
    }
  }
  if (!written || !read) return std::nullopt;
  return std::max<int64_t>(row->value(), 1);
}

}  // namespace

// Note [Local buffers]
// A computed buffer that one kernel both writes and reads, that no other step reads and that is
// not a graph output, lives only for one outer iteration of that kernel: softmax's exp(x - max)
// (Note [Realization] in src/lower/graph_lowering.cpp) is written for a row, summed and divided
// within the same row. It becomes an array on the kernel's stack, declared inside the outer loops
// (so each thread has its own), indexed by the inner loop variables alone (its index with the
// outer variables set to 0): the row stays in L1 and the buffer is never allocated. Conditions,
// all checked: the kernel has inner loops (not a flat pointwise one), every access's index is
// (outer part) + (inner part), the writer's inner part is the row-major index of its inner loops,
// and the row has a static size of at most lower::kMaxLocalRowElements.
std::map<std::string, int64_t> find_local_buffers(const lower::GraphLowering& lowering,
                                                  const Schedule& schedule) {
  std::map<std::string, std::set<size_t>> steps_of;  // buffer -> steps that touch it
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    if (const auto* k = std::get_if<Kernel>(&schedule.steps[i])) {
      for (const NodeAccesses& deps : k->accesses) {
        for (const auto& a : deps.reads) steps_of[a.buffer].insert(i);
        for (const auto& a : deps.writes) steps_of[a.buffer].insert(i);
      }
    } else {
      for (const lower::ExternBuffer* b : std::get<ExternCall>(schedule.steps[i]).outputs)
        for (const lower::StridedView& v : b->inputs()) steps_of[v.buffer->name()].insert(SIZE_MAX);
    }
  }
  for (const lower::StridedView& v : lowering.outputs())
    steps_of[v.buffer->name()].insert(SIZE_MAX);
  std::map<std::string, int64_t> local;
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const auto* k = std::get_if<Kernel>(&schedule.steps[i]);
    if (k == nullptr) continue;
    bool flat = true;
    for (const SchedNode& n : k->nodes)
      flat &= !n.is_reduction() && n.ranges.size() == k->outer.size();
    if (flat && !k->outer.empty()) continue;
    for (const SchedNode& n : k->nodes) {
      const std::string& name = n.buffer->name();
      if (n.is_reduction() || n.buffer->store_target() != nullptr || steps_of[name].size() != 1)
        continue;
      if (auto size = local_size(*k, n)) local[name] = *size;
    }
  }
  return local;
}

// Note [Buffer reuse]
// Intermediate buffers share memory when their lifetimes do not overlap: a buffer is live from
// the step that writes it to the last step that reads it; after that step its slot is free for
// a buffer first written by a later step. Graph outputs and buffers an extern call reads (the
// eager op may return a view of them) are never freed. A slot's size is the largest of its
// buffers (an expression when sizes are symbolic), evaluated when the slot is allocated, before
// its first buffer's step; so a buffer whose size uses a symbol that a step binds at run time (an
// unbacked size, an item() value) takes a slot of its own rather than one allocated before that
// step could have bound it. The intermediate buffers are the computed buffers that are neither
// stores into another buffer nor kernel-local.
MemoryPlan plan_memory(const lower::GraphLowering& lowering, const Schedule& schedule) {
  std::map<std::string, int> written_by_step, last_read;
  std::set<std::string> pinned;
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const int step = static_cast<int>(i);
    if (const auto* k = std::get_if<Kernel>(&schedule.steps[i])) {
      for (const NodeAccesses& deps : k->accesses) {
        for (const auto& a : deps.writes) written_by_step[a.buffer] = step;
        for (const auto& a : deps.reads) last_read[a.buffer] = step;
      }
    } else {
      for (const lower::ExternBuffer* b : std::get<ExternCall>(schedule.steps[i]).outputs) {
        written_by_step[b->name()] = step;
        for (const lower::StridedView& v : b->inputs()) {
          last_read[v.buffer->name()] = step;
          pinned.insert(v.buffer->name());
        }
      }
    }
  }
  for (const lower::StridedView& v : lowering.outputs()) pinned.insert(v.buffer->name());

  struct Slot {
    ExprPtr bytes;
    int free_after = -1;  // step after which it is free; -1: in use (or pinned)
    bool pinned = false;
  };
  std::vector<Slot> slots;
  std::vector<std::pair<int, const Buffer*>> order;  // (first step, buffer)
  for (const auto& b : lowering.buffers()) {
    if (b->kind() != Buffer::Kind::Computed) continue;
    if (static_cast<const lower::ComputedBuffer*>(b.get())->store_target() != nullptr ||
        schedule.local_buffers.count(b->name()))
      continue;
    auto w = written_by_step.find(b->name());
    order.push_back({w == written_by_step.end() ? 0 : w->second, b.get()});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::set<ExprPtr> input_symbols;
  for (const lower::SymbolSource& source : lowering.symbol_sources())
    input_symbols.insert(source.symbol);
  const auto bound_by_inputs = [&](ExprPtr e) {
    for (ExprPtr symbol : sym::free_symbols(e))
      if (!input_symbols.count(symbol)) return false;
    return true;
  };
  MemoryPlan plan;
  for (auto [first, b] : order) {
    const ExprPtr bytes = sym::mul(product(b->layout().sizes),
                                   sym::integer(static_cast<int64_t>(element_size(b->dtype()))));
    int chosen = -1;
    const bool may_share = bound_by_inputs(bytes);
    for (size_t s = 0; s < slots.size() && chosen < 0 && may_share; ++s)
      if (!slots[s].pinned && slots[s].free_after >= 0 && slots[s].free_after < first)
        chosen = static_cast<int>(s);
    if (chosen < 0) {
      chosen = static_cast<int>(slots.size());
      slots.push_back({bytes});
    } else {
      slots[chosen].bytes = sym::max(slots[chosen].bytes, bytes);
    }
    Slot& slot = slots[chosen];
    if (pinned.count(b->name())) {
      slot.pinned = true;  // never handed out again
      slot.free_after = -1;
    } else {
      auto r = last_read.find(b->name());
      slot.free_after = std::max(first, r == last_read.end() ? first : r->second);
    }
    plan.slot_of[b->name()] = chosen;
  }
  for (const Slot& s : slots) plan.slot_bytes.push_back(s.bytes);
  return plan;
}

}  // namespace kiln::sched
