// Guards: the conditions under which a cache entry's graphs are valid (DESIGN.md section 4).
//
// Note [Guard evaluation]
// A guard set is a flat list built once per compile: per lifted tensor its dtype, rank,
// requires_grad, each size (a constant, or the first sighting of a symbol, which binds the
// symbol's value, or a later sighting, which must equal it), its layout (contiguous, or exact
// strides); per scalar argument its value; the grad mode; each module argument's tree (Note
// [Module guards]); the identity of each parameter; then the ShapeEnv's guards over the bound
// symbols. Checking walks the list with no allocation. Only after a failure is it walked again to
// say, in words, what changed (the recompile reason).
//
// Note [Module guards]
// A module argument is guarded over its whole tree, in visit_modules order: each module's id
// (unique, never reused: Note [Module identity and version] in kiln/nn/module.h), version,
// training mode and attribute values. The module guards run before every tensor guard, because
// a parameter's InputRef holds the address of the module's slot: the slot is read only once the
// module that owns it is known to be the very module traced, alive (the caller passed it) and
// with the same registered structure, so a different module, a destroyed one, a replaced
// submodule or a newly registered parameter recompiles instead of reading a stale or dangling
// slot. The guards never dereference a module they recorded: they walk the argument's tree.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/compile.h"
#include "kiln/small_vector.h"
#include "src/sym/expr.h"

namespace kiln::capture {

// Where a graph input comes from when the graph runs.
struct InputRef {
  // Grad: the gradient a parameter holds when the graph runs (Note [Backward in a compiled
  // function]); it is looked up on every call, since zero_grad() and backward() replace it.
  enum class Kind : uint8_t { Arg, Slot, Constant, Prior, Grad };
  Kind kind = Kind::Arg;
  int index = -1;                // Arg: argument position; Prior: output index of that segment
  int segment = -1;              // Prior: depth of the segment along the trace path
  const Tensor* slot = nullptr;  // Slot: the module's parameter/buffer slot
  Tensor constant;               // Constant: a tensor the function captured; Grad: the parameter
  std::string source;  // "arg0", "model.fc1.weight", "constant0", "segment0[2]", "....weight.grad"
  bool filled_by_effect = false;  // Constant: TracingHooks::filled_by_effect
};

struct TensorGuard {
  InputRef where;   // Arg or Slot
  Tensor identity;  // Slot: the tensor the slot held when traced (held, so never a reused address)
  ScalarType dtype = ScalarType::Float32;
  bool requires_grad = false;
  struct Dim {
    enum class Kind : uint8_t { Static, Bind, Same };
    Kind kind = Kind::Static;
    int64_t value = 0;  // Static: the size; Bind/Same: the symbol's index
  };
  SmallVector<Dim, 5> sizes;
  bool contiguous = false;          // layout guard: contiguous ...
  SmallVector<int64_t, 5> strides;  // ... or exactly these strides
};

struct ModuleGuard {
  int arg = 0;
  std::string source;  // "model"
  struct Entry {
    uint64_t id = 0, version = 0;
    bool training = true;
    std::vector<nn::AttributeValue> attributes;
    std::string path;  // "model.fc1"
    std::string type;  // "Linear"
  };
  std::vector<Entry> tree;  // visit_modules order
};

struct ScalarGuard {
  int arg = 0;
  ArgValue value;
};

struct SymbolRange {
  int symbol = 0;
  int64_t lower = 0, upper = INT64_MAX;
};

struct ShapeGuardRef {
  sym::ExprPtr condition;
  std::string origin;
};

// A guard on state the tracer sees only through code (TracingHooks::guard): an optimizer's
// hyperparameters, whether a parameter has a gradient.
struct ValueGuard {
  std::string what;  // "SGD group 0 weight_decay == 0"
  std::function<bool()> holds;
};

struct GuardSet {
  std::vector<TensorGuard> tensors;
  std::vector<ScalarGuard> scalars;
  std::vector<int> undefined_tensors;  // tensor arguments that were undefined (None)
  std::vector<ModuleGuard> modules;
  // Note [Input aliasing]
  // The trace gives every tensor argument a fake of its own, as if no two shared memory: a
  // graph that writes one argument and reads another is right only when they do not overlap.
  // So the pairs of tensor arguments whose storages overlap are guarded exactly (usually none).
  // An entry for arguments that do overlap is not traced: it runs the function eagerly (its
  // `eager_reason`), which is always right.
  std::vector<std::pair<int, int>> overlapping_args;  // (i, j), i < j
  std::optional<bool> grad_mode;
  std::vector<SymbolRange> ranges;
  std::vector<ShapeGuardRef> shape_guards;
  std::vector<ValueGuard> values;
  size_t size() const;  // number of checks (for logs)
};

// The symbols of one trace, by index; their values are bound while checking guards.
struct SymbolTable {
  std::vector<sym::ExprPtr> symbols;
  std::vector<std::string> sources;    // "arg0.size(0)"
  int index_of(sym::ExprPtr s) const;  // -1 if absent
  int add(sym::ExprPtr s, std::string source);
};

// The pairs of tensor arguments whose storages overlap (Note [Input aliasing]).
std::vector<std::pair<int, int>> overlapping_args(const std::vector<ArgValue>& args);

// The tensor an InputRef names for this call (not Prior/Constant-aware: those come from the
// segment runner).
const Tensor& resolve(const InputRef& ref, const std::vector<ArgValue>& args);

// True when every guard holds; binds symbol values into `values` (sized to the table). When
// `why` is given and a guard fails, it receives the reason in words.
bool check_guards(const GuardSet& guards, const SymbolTable& table,
                  const std::vector<ArgValue>& args, std::vector<int64_t>& values,
                  std::string* why = nullptr);

// Readable listing of a guard set (KILN_LOGS=guards and the structured trace).
std::string describe(const GuardSet& guards, const SymbolTable& table);

}  // namespace kiln::capture
