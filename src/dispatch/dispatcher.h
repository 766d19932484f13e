// The dispatcher: the single entry every op call goes through (DESIGN.md section 3).
//
// Note [Dispatch order]
// The key set of a call is the union of the keys of its tensor arguments, plus the thread-local
// include set, minus the thread-local exclude set. The highest key runs: a composite op runs
// first of all (it calls other ops); a non-backend key (Trace, Vmap, Autograd, Subclass) runs its
// handler, which finishes the op or redispatches with its key removed; a key with no handler
// falls through. A backend key (CPU, Meta) runs the op's meta function, then its kernel (CPU).
#pragma once

#include <string_view>
#include <vector>

#include "src/dispatch/op_call.h"
#include "src/dispatch/op_def.h"

namespace kiln {

class OpRegistry {
 public:
  // The table, with every op family registered (src/ops/all_ops.cpp) on first use.
  static OpRegistry& instance();

  OpDef& add(OpDef def);
  const OpDef& get(OpId id) const { return *ops_[id]; }
  OpDef& get_mutable(OpId id) { return *ops_[id]; }
  // Throws ValueError when no op has that name.
  OpId id(std::string_view name) const;
  const OpDef* find(std::string_view name) const;
  const std::vector<std::unique_ptr<OpDef>>& ops() const { return ops_; }

  // Note [Extending the op table]
  // A layer above the ops (autograd attaching derivatives) extends the table without the ops
  // calling it: it registers `extend` from a static initializer. An extension runs once, after
  // every op family is in the table: right away when the table already exists, otherwise when
  // instance() builds it, in registration order. So the order of static initializers across
  // files does not matter.
  static void add_extension(void (*extend)(OpRegistry& registry));

 private:
  std::vector<std::unique_ptr<OpDef>> ops_;
};

// Registers every op family; defined in src/ops/all_ops.cpp.
void register_all_ops(OpRegistry& registry);

namespace dispatch {

// Boxed entry: runs op `id` on `args`, returns its outputs.
Stack call(OpId id, Stack& args);

// Note [Running a recorded op]
// A recorded call (a graph node the interpreter runs, an extern call of a compiled program) runs
// its op one way: the boxed arguments through the dispatcher (so autograd records when grad mode
// asks, as it did when the call was recorded), and a Tensor[] result counts as one output per
// element (a non-tensor result is an undefined tensor). An error from the op is rethrown as the
// same kind with the call named in front, so that a user sees which node failed.
std::vector<Tensor> call_for_tensors(OpId id, Stack& args);
// Rethrows `e` as the same kiln::Error kind with `context` in front of its message.
[[noreturn]] void rethrow_with_context(const Error& e, std::string_view context);
// Continues dispatch of `op` on `keys` (a handler passes its key set with its own key removed).
void redispatch(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys);
// Handler used for `key` when an op has none of its own (e.g. the autograd engine's).
void set_fallback(DispatchKey key, KeyHandler handler);

// Thread-local key sets; see Note [Dispatch order].
struct LocalKeys {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
LocalKeys& local_keys();

class ExcludeKeysGuard {
 public:
  explicit ExcludeKeysGuard(DispatchKeySet keys);
  ~ExcludeKeysGuard();
  ExcludeKeysGuard(const ExcludeKeysGuard&) = delete;
  ExcludeKeysGuard& operator=(const ExcludeKeysGuard&) = delete;

 private:
  DispatchKeySet saved_;
};

class IncludeKeysGuard {
 public:
  explicit IncludeKeysGuard(DispatchKeySet keys);
  ~IncludeKeysGuard();
  IncludeKeysGuard(const IncludeKeysGuard&) = delete;
  IncludeKeysGuard& operator=(const IncludeKeysGuard&) = delete;

 private:
  DispatchKeySet saved_;
};

// Typed helpers for the wrappers in src/ops: box the arguments, call, unbox.
template <typename... Args>
Stack call_boxed(OpId id, Args&&... args) {
  Stack stack;
  (stack.emplace_back(std::forward<Args>(args)), ...);
  return call(id, stack);
}
template <typename... Args>
Tensor call_tensor(OpId id, Args&&... args) {
  Stack out = call_boxed(id, std::forward<Args>(args)...);
  return std::move(out[0].tensor());
}

}  // namespace dispatch

// `static const OpId id = op_id("add");` in a wrapper: the string lookup happens once.
inline OpId op_id(std::string_view name) { return OpRegistry::instance().id(name); }

}  // namespace kiln
