// The graph IR (DESIGN.md section 2, src/graph: the FX of Kiln). A Graph is a list of nodes in
// program order: placeholders (the inputs), calls of ops from the op table, and one output node.
// Every Value is defined exactly once (SSA): a placeholder, or one output of a call.
//
// Note [Graph ownership and stable pointers]
// A Graph owns its nodes (one heap object each, in a std::list) and each node owns its output
// Values, so Node* and Value* stay valid while the graph is edited: passes hold them across
// insertions and erasures. Erased nodes are not freed until the graph dies; they are unlinked
// from program order and marked erased, so the verifier can report a leftover use of one instead
// of reading freed memory. Graphs are move-only; clone() makes an independent copy with the same
// value ids.
//
// Note [Users lists]
// Each Value keeps the nodes that use it (each user once, in the order the uses were made). The
// graph keeps the lists up to date on every edit (add_call, Node::set_arg, replace_all_uses,
// erase_node), so DCE and the pattern matcher can ask "who reads this?" in O(1). The output node
// is a user like any other, which is what keeps graph outputs alive under DCE.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "src/dispatch/dispatcher.h"

namespace kiln::graph {

// The words of an int-list constant as they are, symbolic ones included (IValue::int_list()
// would specialize them; Note [Boxed SymInts]).
inline IntArrayRef raw_words(const IValue& c) {
  const SymIntArrayRef list = c.sym_int_list();
  return IntArrayRef(reinterpret_cast<const int64_t*>(list.data()), list.size());
}

// What a Value is known to be without running the graph: a tensor's dtype, sizes, strides, storage
// offset (each possibly symbolic) and whether it requires grad. A graph fills empty strides with
// the contiguous ones when it creates the value.
struct TensorMeta {
  ScalarType dtype = kFloat32;
  SymDimVector sizes;
  SymDimVector strides;
  SymInt offset = 0;
  bool requires_grad = false;
  // A Scalar turned into a 0-dim tensor (`2.5 - t`): type promotion treats it as a Scalar, so
  // meta functions run on a fake of this meta must see it too (printed " wrapped").
  bool wrapped_number = false;

  // A contiguous meta (row-major strides, offset 0).
  static TensorMeta contiguous(ScalarType dtype, SymDimVector sizes, bool requires_grad = false);
  // The meta of an existing tensor (real, Meta or traced).
  static TensorMeta of(const Tensor& t);
  // Row-major strides. A symbolic size counts as itself (symbolic sizes are >= 2: 0 and 1 are
  // specialized), a concrete one as max(size, 1), as for eager tensors.
  static SymDimVector contiguous_strides(const SymDimVector& sizes);
  bool is_symbolic() const;
  bool has_contiguous_strides() const;
  // Structural equality (same integers or the same interned expressions); never guards.
  friend bool operator==(const TensorMeta& a, const TensorMeta& b);
};

class Node;
class Graph;

// One SSA value: a graph input (placeholder) or one output of a call. Tensors only for now.
class Value {
 public:
  int id() const { return id_; }
  std::string name() const;  // "%3"
  Node* producer() const { return producer_; }
  int output_index() const { return output_index_; }
  const TensorMeta& meta() const { return meta_; }
  TensorMeta& mutable_meta() { return meta_; }
  // The nodes that use this value, each once (Note [Users lists]).
  const std::vector<Node*>& users() const { return users_; }

 private:
  friend class Graph;
  friend class Node;
  Value(Node* producer, int output_index, int id, TensorMeta meta)
      : id_(id), producer_(producer), output_index_(output_index), meta_(std::move(meta)) {}

  int id_;
  Node* producer_;
  int output_index_;
  TensorMeta meta_;
  std::vector<Node*> users_;
};

// One argument of a call: a Value, a list of Values (a Tensor[] or Tensor?[] argument; nullptr
// elements are None), or a constant IValue (None for an absent optional tensor). Int constants
// and int lists may hold symbolic SymInt words (Note [SymInt representation]).
class Arg {
 public:
  enum class Kind : uint8_t { Value, List, Constant };

  static Arg value(Value* v) { return Arg(v); }
  static Arg list(std::vector<Value*> vs) { return Arg(std::move(vs)); }
  static Arg constant(IValue c) { return Arg(std::move(c)); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_value() const { return kind() == Kind::Value; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_constant() const { return kind() == Kind::Constant; }
  Value* as_value() const { return std::get<Value*>(v_); }
  const std::vector<Value*>& as_list() const { return std::get<std::vector<Value*>>(v_); }
  const IValue& as_constant() const { return std::get<IValue>(v_); }
  // The values this argument reads (nullptr list elements skipped).
  std::vector<Value*> values() const;

 private:
  explicit Arg(Value* v) : v_(v) {}
  explicit Arg(std::vector<Value*> vs) : v_(std::move(vs)) {}
  explicit Arg(IValue c) : v_(std::move(c)) {}
  std::variant<Value*, std::vector<Value*>, IValue> v_;
};

// Equality of constants as op arguments: numbers compare by kind and value whether boxed as int,
// float, bool or Scalar (an int 2 and Scalar(2) mean the same to an op); floats compare bitwise
// (NaN equals NaN, -0.0 differs from 0.0); symbolic ints compare structurally.
bool constants_equal(const IValue& a, const IValue& b);
bool args_equal(const Arg& a, const Arg& b);

enum class NodeKind : uint8_t { Placeholder, Call, Output };

// Note [Subgraphs of a higher-order op]
// A call of a higher-order op (cond, while_loop: ops tagged kTagHigherOrder) carries its bodies
// as subgraphs, each named by its role ("true_fn", "body_fn"). A subgraph is a whole Graph with
// its own placeholders and value ids: it reads nothing of the enclosing graph (what a body closed
// over is lifted into an operand), so each graph is verified, printed and interpreted on its own.
// Subgraphs are immutable once attached and shared between clones; a pass that rewrites a body
// attaches a new one. The op's schema lists only the values it reads; which subgraphs it takes
// and what they must accept and return is src/graph/higher_order.h's.
struct Subgraph {
  std::string name;
  std::shared_ptr<const Graph> graph;
};

class Node {
 public:
  NodeKind kind() const { return kind_; }
  // Call nodes only.
  OpId op() const;
  const OpDef& op_def() const;
  const std::vector<Arg>& args() const { return args_; }
  std::span<Value* const> outputs() const { return output_ptrs_; }
  Value* output(size_t i = 0) const { return output_ptrs_.at(i); }
  // Placeholders: where the input comes from ("arg0", "model.fc.weight").
  const std::string& source() const { return source_; }
  Graph* owning_graph() const { return graph_; }
  bool erased() const { return erased_; }

  // Replaces argument i, keeping users lists up to date.
  void set_arg(size_t i, Arg arg);
  // The distinct values the node reads, in argument order.
  std::vector<Value*> inputs() const;
  bool uses(const Value* v) const;

  // True when the node must not be removed or merged even if its outputs are unused: in-place and
  // random ops, ops whose schema mutates an argument (`Tensor(a!)`), a node that defines a
  // symbol or a data-dependent size (Note [A node that defines a size]), or one marked explicitly.
  bool has_side_effects() const;
  void set_has_side_effects(bool v) { side_effects_flag_ = v; }

  // Note [Grad mode of a node]
  // A call traced under NoGradGuard (or EnableGradGuard) records that mode; the interpreter
  // runs the node in it. Inherit (the default) runs in the caller's mode. Printed as a trailing
  // `# no_grad` / `# enable_grad`, which the parser reads back.
  enum class GradMode : uint8_t { Inherit, Disabled, Enabled };
  GradMode grad_mode() const { return grad_mode_; }
  void set_grad_mode(GradMode m) { grad_mode_ = m; }
  bool mutates() const;  // in-place op or a schema argument marked `!`

  // Higher-order ops only (Note [Subgraphs of a higher-order op]).
  const std::vector<Subgraph>& subgraphs() const { return subgraphs_; }
  void set_subgraphs(std::vector<Subgraph> subgraphs) { subgraphs_ = std::move(subgraphs); }

 private:
  friend class Graph;
  Node(Graph* graph, NodeKind kind) : graph_(graph), kind_(kind) {}
  void add_use_of_args();
  void remove_use_of_args();

  Graph* graph_;
  NodeKind kind_;
  OpId op_ = 0;
  std::vector<Arg> args_;
  std::vector<std::unique_ptr<Value>> owned_outputs_;
  std::vector<Value*> output_ptrs_;
  std::string source_;
  bool side_effects_flag_ = false;
  GradMode grad_mode_ = GradMode::Inherit;
  std::vector<Subgraph> subgraphs_;
  bool erased_ = false;
  std::list<std::unique_ptr<Node>>::iterator position_;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds an input; placeholders always come before every call, in the order they are added.
  Value* add_placeholder(std::string source, TensorMeta meta);
  // Adds a call at the insertion point (the end by default). Values in `args` must belong to this
  // graph (ValueError otherwise); the rest is the verifier's job.
  std::vector<Value*> add_call(OpId op, std::vector<Arg> args, std::vector<TensorMeta> outputs);
  // Single-output convenience.
  Value* add_call1(OpId op, std::vector<Arg> args, TensorMeta output);
  void set_outputs(std::vector<Value*> outputs);

  std::span<Value* const> placeholders() const { return placeholders_; }
  // Every node in program order: placeholders, calls, then the output node (once set).
  std::vector<Node*> nodes() const;
  // Call nodes only, in program order.
  std::vector<Node*> calls() const;
  std::span<Value* const> outputs() const;
  Node* output_node() const { return output_node_; }
  // The live value with this id, or nullptr.
  Value* value(int id) const;

  // Every use of `from` becomes a use of `to` (the graph outputs included).
  void replace_all_uses(Value* from, Value* to);
  // Removes a placeholder or call node; throws ValueError when one of its outputs still has users.
  void erase_node(Node* node);

  // New calls go before `node` (nullptr: at the end). See InsertPoint for a scoped version.
  void set_insert_before(Node* node) { insert_before_ = node; }
  Node* insert_before() const { return insert_before_; }
  class InsertPoint {
   public:
    InsertPoint(Graph& g, Node* before) : g_(g), saved_(g.insert_before_) {
      g.insert_before_ = before;
    }
    ~InsertPoint() { g_.insert_before_ = saved_; }
    InsertPoint(const InsertPoint&) = delete;
    InsertPoint& operator=(const InsertPoint&) = delete;

   private:
    Graph& g_;
    Node* saved_;
  };

  // An independent copy with the same ids, sources, metas and flags. `mapping` (optional)
  // receives old value -> new value.
  Graph clone(std::unordered_map<const Value*, Value*>* mapping = nullptr) const;

  // The parser keeps the ids it reads: the next values created take `ids` in order (each must be
  // unused; ValueError otherwise). Afterwards ids continue from the largest one used.
  void set_next_value_ids(std::vector<int> ids);
  int next_value_id() const { return next_id_; }

  // True if `a` comes before `b` in program order (both live nodes of this graph). O(n).
  bool comes_before(const Node* a, const Node* b) const;

 private:
  friend class Node;
  Value* new_value(Node* producer, int index, TensorMeta meta);
  void check_owned(const Arg& arg, std::string_view caller, std::string_view op = {}) const;

  std::list<std::unique_ptr<Node>> nodes_;   // placeholders and calls, program order
  std::list<std::unique_ptr<Node>> erased_;  // Note [Graph ownership and stable pointers]
  std::unique_ptr<Node> output_holder_;
  Node* output_node_ = nullptr;
  std::vector<Value*> placeholders_;
  std::unordered_map<int, Value*> values_by_id_;
  Node* insert_before_ = nullptr;
  int next_id_ = 0;
  std::vector<int> pending_ids_;  // set_next_value_ids, consumed from the back
};

// ---- printer (printer.cpp) ----
// One line per node, like code:
//   %0 : f32[s0, 784] = placeholder("arg0")
//   %2 : f32[s0, 512] = mm(%0, %1)
//   %3 : f32[s0, 512] = add(%2, %4, alpha=1)
//   return (%3)
// A higher-order op's subgraphs follow its line as indented blocks. See Note [Graph text format]
// in printer.cpp.
std::string to_string(const Graph& g);
std::string to_string(const Node& node);  // one line, no newline, no subgraphs
std::string to_string(const TensorMeta& meta);
std::string constant_to_string(const IValue& c);

// ---- parser (parser.cpp) ----
// Reads the printer's text back (keeping value ids). Throws ValueError naming line:column.
Graph parse_graph(std::string_view text);

// ---- verifier (verifier.cpp) ----
// Checks the SSA and schema invariants; throws kiln::Error naming the offending node's line.
void verify(const Graph& g);

// ---- interpreter (interpreter.cpp) ----
// Runs the graph's ops through the dispatcher on `inputs` (one per placeholder); returns the
// graph's outputs.
std::vector<Tensor> interpret(const Graph& g, std::span<const Tensor> inputs);
// Runs the graph on fake tensors whose sizes are its placeholders' own (symbolic) sizes, under
// the ShapeEnv that made them: symbolic constants (view sizes) stay symbolic instead of taking
// values, so nothing is specialized (AOT autograd's joint trace, Note [AOT autograd with
// symbolic sizes] in src/aot/aot_autograd.h).
// A higher-order call has no kernel to run on fakes: `higher_order` runs it (AOT autograd records
// it with its backward, Note [Higher-order ops in AOT autograd] in src/aot/joint_graph.cpp);
// without one, such a graph raises NotImplementedError.
using HigherOrderHandler = std::function<std::vector<Tensor>(const Node& node, const Stack& args)>;
std::vector<Tensor> interpret_symbolic(const Graph& g, std::span<const Tensor> inputs,
                                       const HigherOrderHandler& higher_order = nullptr);
// A `_local_scalar_dense` node read `value` (Note [Scalar outputs in a graph] in
// src/ops/scalar_output.cpp): raises the ValueError of the kiln::check it breaks (the node's
// lower and upper bounds) and otherwise returns the symbol the node defines. The interpreter and
// the executor both check a value this way, where they bind it.
SymInt check_symbol_definition(const Node& node, int64_t value);

// ---- passes (passes.cpp) ----
// Removes calls whose outputs are unused and that have no side effects; returns #removed.
int eliminate_dead_code(Graph& g);
// Merges identical pure calls (same op, same arguments); returns #removed.
int eliminate_common_subexpressions(Graph& g);

}  // namespace kiln::graph
