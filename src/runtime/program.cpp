// verify(Program): the invariants the executor relies on, checked once per Program (at load and
// when an Executor is built) so that running one needs no checks beyond the inputs'.
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"
#include "src/runtime/program.h"
#include "src/runtime/program_schedule.h"

namespace kiln::runtime {

namespace {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw ValueError("verify(Program): " + fmt::format(format, std::forward<Args>(args)...));
}

const char* kind_name(BufferDesc::Kind kind) {
  switch (kind) {
    case BufferDesc::Kind::Input:
      return "input";
    case BufferDesc::Kind::Intermediate:
      return "intermediate";
    case BufferDesc::Kind::Extern:
      return "extern";
  }
  return "?";
}

class ProgramVerifier {
 public:
  explicit ProgramVerifier(const Program& p) : p_(p), schedule_(p) {}

  void run() {
    if (p_.num_inputs < 0) fail("num_inputs is {}", p_.num_inputs);
    check_symbols();
    check_buffers();
    check_steps();
    for (size_t i = 0; i < p_.outputs.size(); ++i) {
      const OutputDesc& out = p_.outputs[i];
      check_buffer_index(out.buffer, fmt::format("output {}", i));
      check_layout(out.view, static_cast<int>(p_.steps.size()), fmt::format("output {}'s view", i));
    }
  }

 private:
  std::string symbol_name(size_t i) const {
    return p_.symbols[i] == nullptr ? "<null>" : sym::to_string(p_.symbols[i]);
  }

  void check_symbols() {
    if (p_.symbol_sources.size() != p_.symbols.size())
      fail("{} symbols but {} symbol sources (one source per symbol)", p_.symbols.size(),
           p_.symbol_sources.size());
    std::unordered_set<sym::ExprPtr> seen;
    for (size_t i = 0; i < p_.symbols.size(); ++i) {
      const sym::ExprPtr s = p_.symbols[i];
      if (s == nullptr || !s->is_symbol())
        fail("symbols[{}] '{}' is not a symbol", i, symbol_name(i));
      if (!seen.insert(s).second) fail("symbol {} is listed twice", s->name());
      const SymbolSource& source = p_.symbol_sources[i];
      if (source.symbol != s)
        fail("symbol_sources[{}] describes '{}', not symbols[{}] = {}", i,
             source.symbol == nullptr ? "<null>" : sym::to_string(source.symbol), i, s->name());
      if (source.dim < 0) fail("symbol {}: negative dim {}", s->name(), source.dim);
      if (source.from_step()) {
        if (source.index < 0 || source.index >= static_cast<int>(p_.steps.size()) ||
            !std::holds_alternative<ExternStep>(p_.steps[source.index]))
          fail("symbol {} comes from step {}, which is not an extern step", s->name(),
               source.index);
        const auto& step = std::get<ExternStep>(p_.steps[source.index]);
        if (source.output < 0 || source.output >= static_cast<int>(step.outputs.size()))
          fail("symbol {} comes from output {} of step {}, which has {} outputs", s->name(),
               source.output, source.index, step.outputs.size());
      } else if (source.index < 0 || source.index >= p_.num_inputs) {
        fail("symbol {} comes from input {}, but the program has {} inputs", s->name(),
             source.index, p_.num_inputs);
      }
    }
  }

  void check_buffers() {
    std::unordered_map<std::string, int> names;
    for (size_t b = 0; b < p_.buffers.size(); ++b) {
      const BufferDesc& buffer = p_.buffers[b];
      if (!names.emplace(buffer.name, static_cast<int>(b)).second)
        fail("buffers {} and {} are both named '{}'", names[buffer.name], b, buffer.name);
      const std::string what = fmt::format("buffer {} ('{}')", b, buffer.name);
      if (buffer.layout.sizes.size() != buffer.layout.strides.size())
        fail("{}: {} sizes but {} strides", what, buffer.layout.sizes.size(),
             buffer.layout.strides.size());
      switch (buffer.kind) {
        case BufferDesc::Kind::Input:
          if (buffer.input < 0 || buffer.input >= p_.num_inputs)
            fail("{} is input {}, but the program has {} inputs", what, buffer.input,
                 p_.num_inputs);
          break;
        case BufferDesc::Kind::Intermediate:
          if (buffer.slot < 0 || buffer.slot >= static_cast<int>(p_.slot_bytes.size()))
            fail("{} lives in slot {}, but the program has {} slots", what, buffer.slot,
                 p_.slot_bytes.size());
          // Allocated before its first use, so its layout and its slot's size must be known then.
          check_layout(buffer.layout, schedule_.first_use[b], what + "'s layout");
          check_expr(p_.slot_bytes[buffer.slot], schedule_.slot_first_use[buffer.slot],
                     fmt::format("slot {}'s size", buffer.slot));
          break;
        case BufferDesc::Kind::Extern:
          if (schedule_.producer[b] < 0) fail("{} is extern, but no extern step produces it", what);
          if (schedule_.first_use[b] <= schedule_.producer[b])
            fail("{} is used by step {} before step {} produces it", what, schedule_.first_use[b],
                 schedule_.producer[b]);
          // Checked against the op's actual output right after the step (symbols bound by it
          // included).
          check_layout(buffer.layout, schedule_.producer[b] + 1, what + "'s layout");
          break;
      }
    }
  }

  void check_steps() {
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      const std::string what = fmt::format("step {}", i);
      if (const auto* kernel = std::get_if<KernelStep>(&p_.steps[i])) {
        if (kernel->name.empty()) fail("{}: a kernel step with no kernel name", what);
        for (int b : kernel->buffers)
          check_buffer_index(b, what + " (kernel " + kernel->name + ")");
      } else if (const auto* call = std::get_if<ExternStep>(&p_.steps[i])) {
        for (int b : call->args) check_buffer_index(b, what);
        if (!call->arg_views.empty() && call->arg_views.size() != call->args.size())
          fail("{}: {} args but {} arg views (give one per arg, or none)", what, call->args.size(),
               call->arg_views.size());
        for (size_t a = 0; a < call->arg_views.size(); ++a)
          check_layout(call->arg_views[a], static_cast<int>(i),
                       fmt::format("{}'s view of arg {}", what, a));
        for (size_t k = 0; k < call->bodies.size(); ++k) {
          try {
            verify(call->bodies[k]);
          } catch (const Error& e) {
            fail("{}: body {}: {}", what, k, e.what());
          }
        }
        for (int b : call->outputs) {
          check_buffer_index(b, what);
          if (p_.buffers[b].kind != BufferDesc::Kind::Extern)
            fail("{}: output buffer {} ('{}') is {}, not extern", what, b, p_.buffers[b].name,
                 kind_name(p_.buffers[b].kind));
          if (schedule_.producer[b] != static_cast<int>(i))
            fail("{}: buffer {} ('{}') is the output of two extern steps ({} and {})", what, b,
                 p_.buffers[b].name, schedule_.producer[b], i);
        }
      } else {
        const auto& copy = std::get<CopyStep>(p_.steps[i]);
        check_buffer_index(copy.dst, what + " (copy destination)");
        check_buffer_index(copy.src, what + " (copy source)");
      }
    }
  }

  void check_buffer_index(int b, const std::string& what) const {
    if (b < 0 || b >= static_cast<int>(p_.buffers.size()))
      fail("{} names buffer {}, but the program has {} buffers", what, b, p_.buffers.size());
  }

  void check_layout(const Layout& layout, int evaluated_before_step, const std::string& what) {
    if (layout.sizes.size() != layout.strides.size())
      fail("{}: {} sizes but {} strides", what, layout.sizes.size(), layout.strides.size());
    for (sym::ExprPtr e : layout.sizes) check_expr(e, evaluated_before_step, what);
    for (sym::ExprPtr e : layout.strides) check_expr(e, evaluated_before_step, what);
    if (layout.offset != nullptr) check_expr(layout.offset, evaluated_before_step, what);
  }

  // `e` is evaluated just before step `step` runs (steps.size(): after the last step).
  void check_expr(sym::ExprPtr e, int step, const std::string& what) {
    if (e == nullptr) fail("{}: a missing (null) expression", what);
    if (e->is_bool()) fail("{}: '{}' is a condition, not an integer", what, sym::to_string(e));
    for (sym::ExprPtr s : sym::free_symbols(e)) {
      auto it = schedule_.symbol_index.find(s);
      if (it == schedule_.symbol_index.end())
        fail("{}: '{}' uses {}, which is not in the program's symbols", what, sym::to_string(e),
             s->name());
      const SymbolSource& source = p_.symbol_sources[it->second];
      if (source.from_step() && source.index >= step)
        fail("{}: '{}' is needed before step {}, but {} is only known after step {} runs", what,
             sym::to_string(e), step, s->name(), source.index);
    }
  }

  const Program& p_;
  ProgramSchedule schedule_;
};

}  // namespace

ProgramSchedule::ProgramSchedule(const Program& p)
    : first_use(p.buffers.size(), static_cast<int>(p.steps.size())),
      producer(p.buffers.size(), -1) {
  const auto use = [&](int b, size_t step) {
    if (b >= 0 && b < static_cast<int>(first_use.size()))
      first_use[b] = std::min(first_use[b], static_cast<int>(step));
  };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (const auto* kernel = std::get_if<KernelStep>(&p.steps[i])) {
      for (int b : kernel->buffers) use(b, i);
    } else if (const auto* call = std::get_if<ExternStep>(&p.steps[i])) {
      for (int b : call->args) use(b, i);
      for (int b : call->outputs) {
        if (b >= 0 && b < static_cast<int>(producer.size()) && producer[b] < 0)
          producer[b] = static_cast<int>(i);
      }
    } else {
      const auto& copy = std::get<CopyStep>(p.steps[i]);
      use(copy.dst, i);
      use(copy.src, i);
    }
  }
  slot_first_use.assign(p.slot_bytes.size(), static_cast<int>(p.steps.size()));
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const int slot = p.buffers[b].slot;
    if (p.buffers[b].kind == BufferDesc::Kind::Intermediate && slot >= 0 &&
        slot < static_cast<int>(slot_first_use.size()))
      slot_first_use[slot] = std::min(slot_first_use[slot], first_use[b]);
  }
  for (size_t i = 0; i < p.symbols.size(); ++i)
    symbol_index.emplace(p.symbols[i], static_cast<int>(i));
}

void verify(const Program& program) { ProgramVerifier(program).run(); }

}  // namespace kiln::runtime
