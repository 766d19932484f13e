// What the code-generating backend hands to the runtime (DESIGN.md section 5): a Program is the
// compiled form of one graph. It names the buffers, the kernels of the generated translation unit
// and the extern calls (matmul, convolution, ... run by the eager kernels) in execution order.
//
// Note [Programs are data]
// A Program holds no pointers into the lowering's IR: sizes are expressions over the graph's size
// symbols (sym::Expr), extern calls are one-node graphs, kernels are names of `extern "C"`
// symbols in the generated library. That is what makes the graph-level cache possible: a warm
// start reads a Program back from JSON and loads the cached `.so`, and never lowers (and it is
// what an AOT package stores next to its library).
//
// Kernel ABI (Note [Kernel ABI]): every generated kernel is
//   extern "C" void <name>(void* const* buffers, const int64_t* symbols);
// `buffers[i]` is the data pointer of Program::buffers[kernel.buffers[i]], already offset to the
// buffer's first element; `symbols[j]` is the value of Program::symbols[j] for this call (every
// kernel gets the whole symbol array).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "src/sym/expr.h"

namespace kiln::runtime {

// Where a size symbol's value comes from at each call: inputs[input].size(dim) (or .stride(dim)),
// the output size of an extern step (unbacked sizes from data-dependent ops), or the value of an
// extern step's 0-dim output (`_local_scalar_dense`, Note [Scalar outputs in a graph] in
// src/ops/scalar_output.cpp: the executor checks the value against the range the call's node
// asserts as it binds it). A symbol bound by an extern step has no value before that step runs
// (Note [When expressions are evaluated] in executor.cpp).
struct SymbolSource {
  sym::ExprPtr symbol = nullptr;
  enum class From : uint8_t {
    InputSize,
    InputStride,
    ExternOutputSize,
    ExternOutputValue,
  } from = From::InputSize;
  int index = 0;   // the input, or the step (ExternOutput*)
  int dim = 0;     // ExternOutputValue: unused (0)
  int output = 0;  // ExternOutput* only: which of the step's outputs
  bool from_step() const {
    return from == From::ExternOutputSize || from == From::ExternOutputValue;
  }
};

// Sizes, strides and storage offset, in elements, as expressions over the symbols.
//
// Note [View offsets]
// The offset of a view (OutputDesc::view, ExternStep::arg_views) counts from the buffer's first
// element, the address a kernel receives, not from the start of the underlying storage: the code
// generator indexes buffers, it does not know an input's storage offset. The executor adds the
// buffer's own storage offset. An Intermediate buffer's offset counts from the start of its slot;
// an Extern buffer's offset is ignored (the op's output carries its own).
struct Layout {
  std::vector<sym::ExprPtr> sizes;
  std::vector<sym::ExprPtr> strides;
  sym::ExprPtr offset = nullptr;  // nullptr means 0
};

struct BufferDesc {
  enum class Kind : uint8_t {
    Input,         // inputs[input]; its layout is the input's own (read at run time)
    Intermediate,  // allocated by the runtime in `slot` (Note [Buffer reuse] in src/sched)
    Extern,        // the output of an extern step (allocated by the eager op)
  } kind = Kind::Intermediate;
  std::string name;  // "arg0", "buf3": the name the generated code uses
  ScalarType dtype = kFloat32;
  Layout layout;   // Intermediate: contiguous, offset 0; Extern: as the op returns it
  int input = -1;  // Input only
  int slot = -1;   // Intermediate only: buffers sharing a slot share memory (disjoint lifetimes)
};

struct KernelStep {
  std::string name;          // the extern "C" symbol
  std::vector<int> buffers;  // indices into Program::buffers, in the kernel's argument order
};

struct Program;

// One op run by the eager kernels: `call` is a graph with one placeholder per entry of `args`,
// one call node and an output node (src/graph text, parsed back on load). Its outputs become
// `outputs` (buffer indices, of kind Extern).
//
// Note [Higher-order ops in a program]
// A call of a higher-order op (`cond`, `while_loop`, `scan`) is an extern step whose `bodies` are
// its subgraphs compiled, in the node's subgraph order (cond: true_fn, false_fn; while_loop:
// cond_fn, body_fn; scan: combine_fn). Each body is a whole Program of its own, taking the step's
// tensors as its inputs (cond: the operands, after the predicate; while_loop: the carries, then
// the additional inputs; scan: the carries, a row of each xs, the additional inputs)
// and binding its own symbols from them; its kernels live in the same library as the
// program's (their names carry a prefix, so they do not clash). The executor runs the step as
// the graph interpreter runs the node (src/graph/higher_order.cpp) with the bodies' Executors in
// place of interpreting the subgraphs: a branch, or a loop, around the bodies' kernels. A call
// with no bodies (a graph cached before bodies were compiled) runs its subgraphs with the
// interpreter.
struct ExternStep {
  std::string call;       // graph text
  std::vector<int> args;  // buffer per placeholder (a buffer index)
  // The view of that buffer the op reads (index-remapped views); one per arg, or empty when
  // every arg is its buffer as is.
  std::vector<Layout> arg_views;
  std::vector<int> outputs;
  std::vector<Program> bodies;  // Note [Higher-order ops in a program]
};

// A buffer's memory is updated in place with a kernel's result: copies `src` into input buffer
// `dst` (used when a kernel cannot store into a mutated input directly).
struct CopyStep {
  int dst = 0;
  int src = 0;
};

using Step = std::variant<KernelStep, ExternStep, CopyStep>;

// A graph output: a view of a buffer (outputs never copy; Note [Views never allocate]).
struct OutputDesc {
  int buffer = 0;
  Layout view;
};

struct Program {
  int num_inputs = 0;
  std::vector<sym::ExprPtr> symbols;         // the kernels' symbol array, in order
  std::vector<SymbolSource> symbol_sources;  // one per entry of `symbols`
  std::vector<BufferDesc> buffers;
  std::vector<sym::ExprPtr> slot_bytes;  // per slot: bytes as an expression
  std::vector<Step> steps;
  std::vector<OutputDesc> outputs;
  // The cache key (runtime::source_hash) of the library this program runs; the Executor checks
  // it against the library it is given (empty: not checked).
  std::string source_hash;
};

// Checks the Program's internal consistency (indices in range, buffer kinds where each step
// needs them, one source per symbol, no symbol used before the step that binds it): ValueError
// naming the offending entry. program_from_json and the Executor run it.
void verify(const Program& program);

}  // namespace kiln::runtime
