// The executor: runs a Program's steps with one call's inputs.
//
// Note [When expressions are evaluated]
// A call binds the symbols that come from the inputs first; a symbol that comes from an extern
// step (an unbacked size, e.g. nonzero's count) is bound right after that step runs. So every
// expression is evaluated at a fixed point of the run, and verify() checks that its symbols are
// known by then:
//   - Input buffers: at the start (they are the inputs);
//   - a slot: allocated just before the first step that uses one of its buffers (its size
//     expression evaluated then), and an Intermediate buffer's layout just before its first use;
//   - an Extern buffer: right after the step that produces it (its declared layout is checked
//     against the op's actual output, since the kernels index it with the declared strides);
//   - an extern step's argument views: just before the step;
//   - the outputs' views: after the last step.
// All expressions are compiled once (sym::CompiledExpr) when the Executor is built; a call then
// only evaluates small postfix programs over the symbol values.
//
// Note [Executor memory]
// A call allocates one Storage per slot (through the caching allocator, so a steady loop does not
// reach the system allocator; blocks are 64-byte aligned) and keeps it for the whole call. Outputs
// are views of the call's storages (Note [View offsets] in program.h), so an output keeps its slot
// alive, and a later call never writes into memory an earlier call returned. Per-call state lives
// on the calling thread's stack: run() is const and any number of threads may call it at once.
#include "src/runtime/executor.h"

#include <atomic>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/small_vector.h"
#include "src/dispatch/dispatcher.h"
#include "src/graph/graph.h"
#include "src/graph/higher_order.h"
#include "src/graph/text.h"
#include "src/runtime/program_schedule.h"
#include "src/runtime/step_profile.h"
#include "src/sym/compiled_expr.h"

namespace kiln::runtime {

namespace {

using KernelFn = void (*)(void* const* buffers, const int64_t* symbols);

// An integer expression ready to evaluate: constants skip the interpreter.
class Evaluator {
 public:
  Evaluator() = default;
  Evaluator(sym::ExprPtr e, std::span<const sym::ExprPtr> symbols) {
    if (e == nullptr) return;  // an absent offset: 0
    if (e->is_integer())
      constant_ = e->value();
    else
      program_.emplace(e, symbols);
  }
  int64_t operator()(const int64_t* values) const {
    return program_ ? program_->eval(values) : constant_;
  }

 private:
  int64_t constant_ = 0;
  std::optional<sym::CompiledExpr> program_;
};

struct LayoutEvaluator {
  LayoutEvaluator() = default;
  LayoutEvaluator(const Layout& layout, std::span<const sym::ExprPtr> symbols)
      : offset(layout.offset, symbols) {
    for (sym::ExprPtr e : layout.sizes) sizes.emplace_back(e, symbols);
    for (sym::ExprPtr e : layout.strides) strides.emplace_back(e, symbols);
  }
  std::vector<Evaluator> sizes, strides;
  Evaluator offset;
};

struct EvaluatedLayout {
  SymDimVector sizes, strides;
  int64_t offset = 0;
};

EvaluatedLayout evaluate(const LayoutEvaluator& layout, const int64_t* values) {
  EvaluatedLayout out;
  out.sizes.resize(layout.sizes.size());
  out.strides.resize(layout.strides.size());
  for (size_t d = 0; d < layout.sizes.size(); ++d) {
    out.sizes[d] = layout.sizes[d](values);
    out.strides[d] = layout.strides[d](values);
  }
  out.offset = layout.offset(values);
  return out;
}

std::string layout_text(SymIntArrayRef sizes, SymIntArrayRef strides) {
  std::string text = "sizes [";
  for (size_t d = 0; d < sizes.size(); ++d)
    text += (d > 0 ? ", " : "") + std::to_string(sizes[d].raw());
  text += "], strides [";
  for (size_t d = 0; d < strides.size(); ++d)
    text += (d > 0 ? ", " : "") + std::to_string(strides[d].raw());
  return text + "]";
}

// The lowest and highest element a layout touches, relative to its offset; {0, -1} when empty.
std::pair<int64_t, int64_t> element_range(const SymDimVector& sizes, const SymDimVector& strides) {
  int64_t low = 0, high = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t size = sizes[d].raw();
    if (size == 0) return {0, -1};
    const int64_t reach = (size - 1) * strides[d].raw();
    (reach < 0 ? low : high) += reach;
  }
  return {low, high};
}

struct BufferInfo {
  BufferDesc::Kind kind;
  ScalarType dtype;
  int64_t itemsize;
  int input;
  int slot;
  LayoutEvaluator layout;
  std::string name;
};

struct KernelCall {
  KernelFn fn;
  std::vector<int> buffers;
};

struct SymbolFromExtern {
  int symbol;
  int output;
  int dim;
  bool value;  // the output's value (SymbolSource::From::ExternOutputValue), not its size
};

// How to build one argument of an extern call's op without the graph interpreter (Note [Calling
// extern ops directly]).
struct ArgPlan {
  enum class Kind : uint8_t { Tensor, TensorList, Constant, SymInt, SymIntList } kind;
  std::vector<int> placeholders;  // Tensor: one; TensorList: one per element (-1: undefined)
  IValue constant;                // Constant
  std::vector<Evaluator> words;   // SymInt: one; SymIntList: one per element
};

struct ExternCall {
  std::unique_ptr<graph::Graph> graph;
  OpId op_id;
  std::optional<std::vector<ArgPlan>> direct;  // nullopt: run through graph::interpret
  std::string op;                              // for messages
  std::vector<int> args;
  std::vector<LayoutEvaluator> views;  // empty: the buffers as they are
  std::vector<int> outputs;
  std::vector<SymbolFromExtern> binds;
  // A higher-order op's compiled bodies (Note [Higher-order ops in a program] in program.h).
  std::vector<std::unique_ptr<Executor>> bodies;
};

// Note [Calling extern ops directly]
// An extern step's graph is one call, so running it through graph::interpret would spend most of
// its time on bookkeeping (binding and checking every placeholder size, formatting contexts),
// which matters for small graphs (the batch-1 MLP spends its time in two small matmuls). Instead
// the call's arguments are planned once: a placeholder becomes "arg i", a constant stays as is,
// and a symbolic int (a view size in a constant list) becomes a compiled expression over the
// program's symbols. A call then boxes the arguments and calls the dispatcher. A graph the plan
// cannot express (a symbol the program does not know, outputs other than the call's own) falls
// back to the interpreter.
std::optional<std::vector<ArgPlan>> plan_direct_call(const graph::Graph& g,
                                                     std::span<const sym::ExprPtr> symbols,
                                                     size_t bodies) {
  const graph::Node& node = *g.calls()[0];
  // A higher-order op has no kernel: without compiled bodies it runs with the interpreter.
  if (graph::is_higher_order(node) && bodies == 0) return std::nullopt;
  const std::span<graph::Value* const> outputs = g.outputs();
  if (!std::equal(outputs.begin(), outputs.end(), node.outputs().begin(), node.outputs().end()))
    return std::nullopt;
  const auto placeholder_index = [&](const graph::Value* v) {
    const auto placeholders = g.placeholders();
    const auto it = std::find(placeholders.begin(), placeholders.end(), v);
    return it == placeholders.end() ? -2 : static_cast<int>(it - placeholders.begin());
  };
  const auto known = [&](SymInt s) {
    for (sym::ExprPtr free : sym::free_symbols(s.expr()))
      if (std::find(symbols.begin(), symbols.end(), free) == symbols.end()) return false;
    return true;
  };
  std::vector<ArgPlan> plan;
  for (const graph::Arg& arg : node.args()) {
    ArgPlan a{ArgPlan::Kind::Constant, {}, {}, {}};
    if (arg.is_value()) {
      a.kind = ArgPlan::Kind::Tensor;
      a.placeholders = {placeholder_index(arg.as_value())};
    } else if (arg.is_list()) {
      a.kind = ArgPlan::Kind::TensorList;
      for (const graph::Value* v : arg.as_list())
        a.placeholders.push_back(v == nullptr ? -1 : placeholder_index(v));
    } else if (const IValue& c = arg.as_constant(); c.is_int() && c.to_sym_int().is_symbolic()) {
      if (!known(c.to_sym_int())) return std::nullopt;
      a.kind = ArgPlan::Kind::SymInt;
      a.words.emplace_back(c.to_sym_int().expr(), symbols);
    } else if (c.is_int_list() && std::any_of(c.sym_int_list().begin(), c.sym_int_list().end(),
                                              [](SymInt s) { return s.is_symbolic(); })) {
      a.kind = ArgPlan::Kind::SymIntList;
      for (SymInt s : c.sym_int_list()) {
        if (s.is_symbolic() && !known(s)) return std::nullopt;
        a.words.emplace_back(s.is_symbolic() ? s.expr() : sym::integer(s.raw()), symbols);
      }
    } else {
      a.constant = c;
    }
    for (int p : a.placeholders)
      if (p == -2) return std::nullopt;  // reads a value that is not an input of the call
    plan.push_back(std::move(a));
  }
  return plan;
}

struct CopyCall {
  int dst, src;
};

struct StepCall {
  std::variant<KernelCall, ExternCall, CopyCall> call;
  std::vector<int> materialize;  // Intermediate buffers whose first use is this step
};

struct InputSymbol {
  int symbol, input, dim;
  bool stride;
};

// One call's state (Note [Executor memory]).
struct Frame {
  std::span<const Tensor> inputs;
  SmallVector<int64_t, 16> symbols;
  SmallVector<void*, 16> pointers;
  SmallVector<Storage, 8> slots;
  SmallVector<Tensor, 16> tensors;  // Extern buffers, and Intermediate ones that needed a Tensor
  std::vector<std::unique_ptr<int64_t[]>> empty_stand_ins;  // Note [Empty buffers are readable]
};

// Note [Empty buffers are readable]
// Some lowerings read a buffer at a clamped index and discard the value when it does not apply:
// cat reads every piece at an index clamped into the piece and picks one with where(). A piece
// whose size along the cat dim is symbolic may be empty at run time, and its clamped index (0)
// is then outside its memory, which may be no memory at all (an empty tensor's data pointer may
// be null). So the kernels never see an empty buffer's own pointer: every buffer with a 0 size
// gets zeroed memory of its own for this call, covering every address an index that is 0 in its
// empty dims and in range in the others can form. Nothing is ever stored there (a loop over an
// empty buffer runs no iteration).
void* empty_stand_in(Frame& f, IntArrayRef sizes, IntArrayRef strides, int64_t itemsize) {
  int64_t high = 0;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 0) high += (sizes[d] - 1) * std::abs(strides[d]);
  const int64_t words = ((high + 1) * itemsize + 7) / 8;
  f.empty_stand_ins.push_back(std::make_unique<int64_t[]>(static_cast<size_t>(words)));
  return f.empty_stand_ins.back().get();
}

}  // namespace

struct Executor::Impl {
  Program program;
  std::shared_ptr<const KernelLibrary> library;
  std::vector<BufferInfo> buffers;
  std::vector<Evaluator> slot_bytes;
  std::vector<InputSymbol> input_symbols;
  std::vector<int> input_buffers;
  std::vector<StepCall> steps;
  std::vector<int> materialize_at_end;
  std::vector<std::pair<int, LayoutEvaluator>> outputs;
  size_t max_kernel_args = 0;
  // One entry per step when this Executor times its steps (Note [Step profile]); else empty.
  std::vector<StepProfileEntry*> profile;

  Impl(Program p, std::shared_ptr<const KernelLibrary> lib);

  std::vector<Tensor> run(std::span<const Tensor> inputs) const;
  void bind_inputs(Frame& f) const;
  void materialize(Frame& f, int b) const;
  Tensor buffer_tensor(Frame& f, int b) const;
  // `describe()` names the view in an error message (built only on failure).
  template <typename Describe>
  Tensor view_of(const Tensor& base, const LayoutEvaluator& view, const Frame& f,
                 Describe describe) const;
  void run_extern(Frame& f, const ExternCall& call, size_t step) const;
  void run_step(Frame& f, size_t i, SmallVector<void*, 16>& args) const;
  [[noreturn]] void raise_runtime_error(size_t step) const;
  int* runtime_errors = nullptr;  // Note [Runtime errors in generated code]
  void register_profile();
};

Executor::Impl::Impl(Program p, std::shared_ptr<const KernelLibrary> lib)
    : program(std::move(p)), library(std::move(lib)) {
  verify(program);
  const Program& P = program;
  const std::span<const sym::ExprPtr> symbols = P.symbols;
  if (library != nullptr && !P.source_hash.empty()) {
    KILN_CHECK(library->hash() == P.source_hash, ValueError,
               "Executor: the program runs the library {} but was given {} ({}); load the library "
               "the program was generated with",
               P.source_hash, library->hash(), library->path().string());
  }
  const ProgramSchedule schedule(P);
  if (library != nullptr)
    runtime_errors = static_cast<int*>(library->find_symbol("kiln_runtime_errors"));

  for (size_t i = 0; i < P.symbols.size(); ++i) {
    const SymbolSource& s = P.symbol_sources[i];
    if (!s.from_step())
      input_symbols.push_back(
          {static_cast<int>(i), s.index, s.dim, s.from == SymbolSource::From::InputStride});
  }
  for (size_t b = 0; b < P.buffers.size(); ++b) {
    const BufferDesc& d = P.buffers[b];
    buffers.push_back({d.kind, d.dtype, element_size(d.dtype), d.input, d.slot,
                       LayoutEvaluator(d.layout, symbols), d.name});
    if (d.kind == BufferDesc::Kind::Input) input_buffers.push_back(static_cast<int>(b));
  }
  for (sym::ExprPtr e : P.slot_bytes) slot_bytes.emplace_back(e, symbols);

  steps.resize(P.steps.size());
  for (size_t i = 0; i < P.steps.size(); ++i) {
    if (const auto* kernel = std::get_if<KernelStep>(&P.steps[i])) {
      KILN_CHECK(library != nullptr, ValueError,
                 "Executor: step {} runs kernel '{}' but no kernel library was given", i,
                 kernel->name);
      auto fn = reinterpret_cast<KernelFn>(library->symbol(kernel->name));
      steps[i].call = KernelCall{fn, kernel->buffers};
      max_kernel_args = std::max(max_kernel_args, kernel->buffers.size());
    } else if (const auto* e = std::get_if<ExternStep>(&P.steps[i])) {
      ExternCall call;
      try {
        call.graph = std::make_unique<graph::Graph>(graph::parse_graph(e->call));
      } catch (const Error& error) {
        throw ValueError(
            fmt::format("Executor: step {}: the extern call's graph does not parse: "
                        "{}\n{}",
                        i, error.what(), e->call));
      }
      const auto calls = call.graph->calls();
      KILN_CHECK(call.graph->placeholders().size() == e->args.size() && calls.size() == 1 &&
                     call.graph->outputs().size() == e->outputs.size(),
                 ValueError,
                 "Executor: step {}: an extern call is a graph of one placeholder per arg ({}), "
                 "one call and one output per output buffer ({}); got {} placeholders, {} calls "
                 "and {} outputs:\n{}",
                 i, e->args.size(), e->outputs.size(), call.graph->placeholders().size(),
                 calls.size(), call.graph->outputs().size(), e->call);
      call.op = graph::to_string(*calls[0]);
      call.op_id = calls[0]->op();
      call.direct = plan_direct_call(*call.graph, symbols, e->bodies.size());
      if (!e->bodies.empty()) {
        const graph::Node& node = *calls[0];
        KILN_CHECK(graph::is_higher_order(node) &&
                       e->bodies.size() == graph::subgraph_roles(node.op_def()).size() &&
                       call.direct.has_value(),
                   ValueError,
                   "Executor: step {}: {} compiled bodies for {}, which takes {} (only a "
                   "higher-order op whose arguments are the step's args has bodies)",
                   i, e->bodies.size(), call.op,
                   graph::is_higher_order(node) ? graph::subgraph_roles(node.op_def()).size() : 0);
        for (const Program& body : e->bodies)
          call.bodies.push_back(std::make_unique<Executor>(body, library));
      }
      call.args = e->args;
      for (const Layout& view : e->arg_views) call.views.emplace_back(view, symbols);
      call.outputs = e->outputs;
      for (size_t s = 0; s < P.symbols.size(); ++s) {
        const SymbolSource& source = P.symbol_sources[s];
        if (source.from_step() && source.index == static_cast<int>(i))
          call.binds.push_back({static_cast<int>(s), source.output, source.dim,
                                source.from == SymbolSource::From::ExternOutputValue});
      }
      steps[i].call = std::move(call);
    } else {
      const auto& copy = std::get<CopyStep>(P.steps[i]);
      steps[i].call = CopyCall{copy.dst, copy.src};
    }
  }
  for (size_t b = 0; b < P.buffers.size(); ++b) {
    if (P.buffers[b].kind != BufferDesc::Kind::Intermediate) continue;
    const int first = schedule.first_use[b];
    (first < static_cast<int>(steps.size()) ? steps[first].materialize : materialize_at_end)
        .push_back(static_cast<int>(b));
  }
  for (const OutputDesc& out : P.outputs)
    outputs.emplace_back(out.buffer, LayoutEvaluator(out.view, symbols));
  if (step_profiling_enabled()) register_profile();
}

void Executor::Impl::bind_inputs(Frame& f) const {
  for (int b : input_buffers) {
    const BufferInfo& buffer = buffers[b];
    const Tensor& t = f.inputs[buffer.input];
    KILN_CHECK(t.defined(), ValueError, "Executor: input {} (buffer '{}') is an undefined tensor",
               buffer.input, buffer.name);
    KILN_CHECK(t.dtype() == buffer.dtype, DTypeError,
               "Executor: input {} (buffer '{}') is {}, but the program was compiled for {}",
               buffer.input, buffer.name, dtype_name(t.dtype()), dtype_name(buffer.dtype));
    KILN_CHECK(t.impl()->device() == Device::CPU, ValueError,
               "Executor: input {} (buffer '{}') is not a CPU tensor", buffer.input, buffer.name);
    f.pointers[b] =
        t.numel() != 0 ? t.data_ptr() : empty_stand_in(f, t.sizes(), t.strides(), buffer.itemsize);
  }
  for (const InputSymbol& s : input_symbols) {
    const Tensor& t = f.inputs[s.input];
    KILN_CHECK(t.defined() && s.dim < t.dim(), ShapeError,
               "Executor: symbol {} is {} {} of input {}, which has {} dims",
               program.symbols[s.symbol]->name(), s.stride ? "stride" : "size", s.dim, s.input,
               t.defined() ? t.dim() : 0);
    f.symbols[s.symbol] = s.stride ? t.strides()[s.dim] : t.sizes()[s.dim];
  }
}

// Allocates the buffer's slot if this is the slot's first use, and sets the buffer's pointer.
void Executor::Impl::materialize(Frame& f, int b) const {
  const BufferInfo& buffer = buffers[b];
  Storage& slot = f.slots[buffer.slot];
  if (!slot) {
    const int64_t bytes = slot_bytes[buffer.slot](f.symbols.data());
    KILN_CHECK(bytes >= 0, ValueError, "Executor: slot {} needs {} bytes (a negative size)",
               buffer.slot, bytes);
    slot = make_intrusive<StorageImpl>(static_cast<size_t>(bytes), Device::CPU);
  }
  // The buffer must fit in its slot: a wrong size would make the kernels write out of bounds.
  int64_t high = buffer.layout.offset(f.symbols.data());
  const int64_t offset = high;
  bool empty = false;
  for (size_t d = 0; d < buffer.layout.sizes.size(); ++d) {
    const int64_t size = buffer.layout.sizes[d](f.symbols.data());
    empty |= size == 0;
    high += (size - 1) * buffer.layout.strides[d](f.symbols.data());
  }
  const int64_t needed = empty ? 0 : (high + 1) * buffer.itemsize;
  KILN_CHECK(offset >= 0 && needed <= static_cast<int64_t>(slot->nbytes()), ValueError,
             "Executor: buffer '{}' needs {} bytes at offset {} but its slot {} holds {}; the "
             "program's slot sizes are wrong",
             buffer.name, needed, offset, buffer.slot, slot->nbytes());
  if (empty) {  // Note [Empty buffers are readable]
    const EvaluatedLayout l = evaluate(buffer.layout, f.symbols.data());
    std::vector<int64_t> sizes, strides;
    for (size_t d = 0; d < l.sizes.size(); ++d) {
      sizes.push_back(l.sizes[d].raw());
      strides.push_back(l.strides[d].raw());
    }
    f.pointers[b] = empty_stand_in(f, sizes, strides, buffer.itemsize);
    return;
  }
  f.pointers[b] = static_cast<char*>(slot->data()) + offset * buffer.itemsize;
}

Tensor Executor::Impl::buffer_tensor(Frame& f, int b) const {
  const BufferInfo& buffer = buffers[b];
  switch (buffer.kind) {
    case BufferDesc::Kind::Input:
      return f.inputs[buffer.input];
    case BufferDesc::Kind::Extern:
      return f.tensors[b];
    case BufferDesc::Kind::Intermediate:
      break;
  }
  if (!f.tensors[b].defined()) {
    EvaluatedLayout l = evaluate(buffer.layout, f.symbols.data());
    f.tensors[b] =
        Tensor(make_intrusive<TensorImpl>(f.slots[buffer.slot], buffer.dtype, std::move(l.sizes),
                                          std::move(l.strides), SymInt(l.offset)));
  }
  return f.tensors[b];
}

// A view of `base` (Note [View offsets]: the offset counts from base's first element), checked to
// stay inside base's storage.
template <typename Describe>
Tensor Executor::Impl::view_of(const Tensor& base, const LayoutEvaluator& view, const Frame& f,
                               Describe describe) const {
  EvaluatedLayout l = evaluate(view, f.symbols.data());
  const int64_t offset = base.storage_offset() + l.offset;
  const auto [low, high] = element_range(l.sizes, l.strides);
  const int64_t capacity =
      static_cast<int64_t>(base.impl()->storage()->nbytes()) / base.element_size();
  KILN_CHECK(high < low || (offset + low >= 0 && offset + high < capacity), ValueError,
             "Executor: {} ({} at storage offset {}) reaches outside its buffer's {} elements",
             describe(), layout_text(l.sizes, l.strides), offset, capacity);
  return Tensor(make_intrusive<TensorImpl>(base.impl()->storage(), base.dtype(), std::move(l.sizes),
                                           std::move(l.strides), SymInt(offset)));
}

namespace {

// The op's arguments, boxed (Note [Calling extern ops directly]).
Stack box_arguments(const std::vector<ArgPlan>& plan, std::span<const Tensor> args,
                    const Frame& f) {
  Stack stack;
  for (const ArgPlan& a : plan) {
    switch (a.kind) {
      case ArgPlan::Kind::Tensor:
        stack.emplace_back(args[a.placeholders[0]]);
        break;
      case ArgPlan::Kind::TensorList: {
        std::vector<Tensor> tensors;
        for (int p : a.placeholders) tensors.push_back(p < 0 ? Tensor() : args[p]);
        stack.emplace_back(std::move(tensors));
        break;
      }
      case ArgPlan::Kind::Constant:
        stack.push_back(a.constant);
        break;
      case ArgPlan::Kind::SymInt:
        stack.emplace_back(a.words[0](f.symbols.data()));
        break;
      case ArgPlan::Kind::SymIntList: {
        SymDimVector words(a.words.size());
        for (size_t w = 0; w < a.words.size(); ++w) words[w] = a.words[w](f.symbols.data());
        stack.emplace_back(std::move(words));
        break;
      }
    }
  }
  return stack;
}

// Runs the op of `call` on `args`: its eager kernel (Note [Calling extern ops directly]), or a
// higher-order op around its compiled bodies (Note [Higher-order ops in a program]).
std::vector<Tensor> call_directly(const ExternCall& call, const std::vector<ArgPlan>& plan,
                                  std::span<const Tensor> args, const Frame& f) {
  Stack stack = box_arguments(plan, args, f);
  if (call.bodies.empty())
    return dispatch::call_for_tensors(call.op_id, stack);  // Note [Running a recorded op]
  const graph::Node& node = *call.graph->calls()[0];
  return graph::run_higher_order(node, stack, [&](size_t body, std::span<const Tensor> inputs) {
    // Note [Body inputs keep their traced layout]
    return call.bodies.at(body)->run(
        graph::inputs_in_traced_layout(*node.subgraphs().at(body).graph, inputs));
  });
}

using dispatch::rethrow_with_context;

}  // namespace

void Executor::Impl::run_extern(Frame& f, const ExternCall& call, size_t step) const {
  SmallVector<Tensor, 4> args;
  for (size_t a = 0; a < call.args.size(); ++a) {
    Tensor base = buffer_tensor(f, call.args[a]);
    args.push_back(call.views.empty() ? std::move(base) : view_of(base, call.views[a], f, [&] {
      return fmt::format("step {} ({}): the view of arg {}", step, call.op, a);
    }));
  }
  std::vector<Tensor> results;
  try {
    results = call.direct ? call_directly(call, *call.direct, args, f)
                          : graph::interpret(*call.graph, std::span<const Tensor>(args));
  } catch (const Error& e) {
    rethrow_with_context(e, fmt::format("Executor: step {} ({}): ", step, call.op));
  }
  KILN_CHECK(results.size() == call.outputs.size(), ValueError,
             "Executor: step {} ({}) returned {} tensors, the program expects {}", step, call.op,
             results.size(), call.outputs.size());
  for (const SymbolFromExtern& bind : call.binds) {
    const Tensor& t = results[bind.output];
    if (bind.value) {
      KILN_CHECK(t.defined() && t.numel() == 1 && t.dtype() == kInt64, ValueError,
                 "Executor: symbol {} is the value of output {} of step {} ({}), which is not one "
                 "int64 element",
                 program.symbols[bind.symbol]->name(), bind.output, step, call.op);
      const int64_t value = t.item<int64_t>();
      // Note [Scalar outputs in a graph]: checked where it is bound, before any step uses it.
      graph::check_symbol_definition(*call.graph->calls()[0], value);
      f.symbols[bind.symbol] = value;
      continue;
    }
    KILN_CHECK(bind.dim < t.dim(), ShapeError,
               "Executor: symbol {} is size {} of output {} of step {} ({}), which has {} dims",
               program.symbols[bind.symbol]->name(), bind.dim, bind.output, step, call.op, t.dim());
    f.symbols[bind.symbol] = t.sizes()[bind.dim];
  }
  for (size_t o = 0; o < results.size(); ++o) {
    const int b = call.outputs[o];
    const BufferInfo& buffer = buffers[b];
    Tensor& t = results[o];
    KILN_CHECK(t.defined(), ValueError, "Executor: step {} ({}) returned no tensor for buffer '{}'",
               step, call.op, buffer.name);
    KILN_CHECK(t.dtype() == buffer.dtype, DTypeError,
               "Executor: step {} ({}) returned {} for buffer '{}', the program expects {}", step,
               call.op, dtype_name(t.dtype()), buffer.name, dtype_name(buffer.dtype));
    // The kernels index the buffer with its declared strides (Note [When expressions are
    // evaluated]); strides of size-1 dims, and all strides of an empty tensor, are never used.
    const EvaluatedLayout expected = evaluate(buffer.layout, f.symbols.data());
    bool same = static_cast<size_t>(t.dim()) == expected.sizes.size();
    const bool empty = t.numel() == 0;
    for (size_t d = 0; same && d < expected.sizes.size(); ++d) {
      same = t.sizes()[d] == expected.sizes[d].raw() &&
             (empty || t.sizes()[d] <= 1 || t.strides()[d] == expected.strides[d].raw());
    }
    KILN_CHECK(same, ValueError,
               "Executor: step {} ({}) returned buffer '{}' with {}, but the program expects {}",
               step, call.op, buffer.name,
               layout_text(t.impl()->sym_sizes(), t.impl()->sym_strides()),
               layout_text(expected.sizes, expected.strides));
    f.pointers[b] =
        empty ? empty_stand_in(f, t.sizes(), t.strides(), buffer.itemsize) : t.data_ptr();
    f.tensors[b] = std::move(t);
  }
}

void Executor::Impl::run_step(Frame& f, size_t i, SmallVector<void*, 16>& args) const {
  const StepCall& step = steps[i];
  for (int b : step.materialize) materialize(f, b);
  if (const auto* kernel = std::get_if<KernelCall>(&step.call)) {
    for (size_t a = 0; a < kernel->buffers.size(); ++a) args[a] = f.pointers[kernel->buffers[a]];
    kernel->fn(args.data(), f.symbols.data());
    if (runtime_errors != nullptr &&
        std::atomic_ref<int>(*runtime_errors).load(std::memory_order_relaxed) != 0) [[unlikely]]
      raise_runtime_error(i);
  } else if (const auto* call = std::get_if<ExternCall>(&step.call)) {
    run_extern(f, *call, i);
  } else {
    const auto& copy = std::get<CopyCall>(step.call);
    buffer_tensor(f, copy.dst).copy_(buffer_tensor(f, copy.src));
  }
}

// Note [Runtime errors in generated code] (src/codegen/cpp/prelude.cpp): a kernel recorded an
// error an eager op raises; clear the word and raise that error.
void Executor::Impl::raise_runtime_error(size_t step) const {
  const int bits = std::atomic_ref<int>(*runtime_errors).exchange(0, std::memory_order_relaxed);
  const auto& kernel = std::get<KernelStep>(program.steps[step]);
  KILN_CHECK((bits & 1) == 0, ValueError,
             "compiled kernel {} (step {}): integer division by zero (ZeroDivisionError) in a "
             "div, floor_divide, remainder or fmod of integer tensors, as the eager op raises; a "
             "divisor has a zero element. Divide floating tensors to get inf/nan instead",
             kernel.name, step);
  throw ValueError(fmt::format("compiled kernel {} (step {}): runtime error bits {:#x}",
                               kernel.name, step, bits));
}

// Note [Step profile] in step_profile.h. Names a step by the program (its library's hash, which
// is also the cached .so's name) and what it runs.
void Executor::Impl::register_profile() {
  const std::string label =
      program.source_hash.empty() ? "program" : program.source_hash.substr(0, 8);
  for (size_t i = 0; i < program.steps.size(); ++i) {
    if (const auto* kernel = std::get_if<KernelStep>(&program.steps[i])) {
      profile.push_back(
          new_step_profile_entry(fmt::format("{} {}", label, kernel->name), "generated kernels"));
    } else if (const auto* call = std::get_if<ExternCall>(&steps[i].call)) {
      const graph::Node& node = *call->graph->calls()[0];
      std::string outputs;
      for (const graph::Value* v : node.outputs())
        outputs += (outputs.empty() ? "" : ", ") + graph::to_string(v->meta());
      profile.push_back(new_step_profile_entry(
          fmt::format("{} {} -> {}", label, node.op_def().name, outputs), node.op_def().name));
    } else {
      profile.push_back(new_step_profile_entry(fmt::format("{} copy", label), "copy"));
    }
  }
}

std::vector<Tensor> Executor::Impl::run(std::span<const Tensor> inputs) const {
  KILN_CHECK(inputs.size() == static_cast<size_t>(program.num_inputs), ValueError,
             "Executor: the program takes {} inputs, got {}", program.num_inputs, inputs.size());
  // Extern calls must not record autograd history: the compiled graph is one autograd node as a
  // whole (src/aot), and kernel outputs carry none either.
  NoGradGuard no_grad;
  Frame f;
  f.inputs = inputs;
  f.symbols.resize(program.symbols.size(), 0);
  f.pointers.resize(buffers.size(), nullptr);
  f.slots.resize(slot_bytes.size());
  f.tensors.resize(buffers.size());
  bind_inputs(f);

  SmallVector<void*, 16> args(max_kernel_args, nullptr);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (profile.empty()) {
      run_step(f, i, args);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    run_step(f, i, args);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    profile[i]->nanoseconds.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count(),
        std::memory_order_relaxed);
    profile[i]->calls.fetch_add(1, std::memory_order_relaxed);
  }
  for (int b : materialize_at_end) materialize(f, b);

  std::vector<Tensor> results;
  results.reserve(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    const auto& [b, view] = outputs[o];
    results.push_back(
        view_of(buffer_tensor(f, b), view, f, [o] { return fmt::format("output {}", o); }));
  }
  return results;
}

Executor::Executor(Program program, std::shared_ptr<const KernelLibrary> library)
    : impl_(std::make_unique<Impl>(std::move(program), std::move(library))) {}
Executor::~Executor() = default;

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs) const {
  return impl_->run(inputs);
}
const Program& Executor::program() const { return impl_->program; }

}  // namespace kiln::runtime
