// The reference interpreter: runs a graph's ops one by one through the dispatcher, so autograd
// records when inputs require grad and in-place ops mutate the caller's tensors.
//
// Note [Binding symbols when interpreting]
// A graph with symbolic sizes is run with concrete tensors. Every symbol that is a whole size or
// stride of a placeholder's meta takes the actual input's value at its first occurrence (later
// occurrences are checked against it). Unbacked symbols (u0, ...) are bound from the actual sizes
// of the first node output whose meta has one as a whole size. Before each call, symbolic words
// in int and int-list constants are replaced by their values; a symbol with no value there is an
// error naming the node. Sizes bind before strides, so a symbol that is both takes the size.
#include <typeinfo>
#include <unordered_map>

#include "src/graph/graph.h"
#include "src/graph/higher_order.h"
#include "src/graph/schema.h"

#include <optional>

#include "kiln/autograd.h"
#include "src/graph/sym_bindings.h"
#include "src/graph/text.h"

namespace kiln::graph {
namespace {

// Runs a node in the grad mode it was traced in (Note [Grad mode of a node]).
class ScopedGradMode {
 public:
  explicit ScopedGradMode(bool enabled) : saved_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~ScopedGradMode() { GradMode::set_enabled(saved_); }
  ScopedGradMode(const ScopedGradMode&) = delete;
  ScopedGradMode& operator=(const ScopedGradMode&) = delete;

 private:
  bool saved_;
};

std::string shape_text(IntArrayRef sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

void bind_input(const Value* placeholder, const Tensor& input, SymBindings& symbols) {
  const std::string& source = placeholder->producer()->source();
  const TensorMeta& meta = placeholder->meta();
  KILN_CHECK(input.defined(), ValueError, "interpret: input '{}' ({}) is an undefined tensor",
             source, placeholder->name());
  KILN_CHECK(
      input.dtype() == meta.dtype && input.dim() == static_cast<int64_t>(meta.sizes.size()),
      ValueError,
      "interpret: input '{}' ({}) should be {} but got a {} tensor of shape {}; pass a tensor "
      "of the traced dtype and rank",
      source, placeholder->name(), to_string(meta), dtype_name(input.dtype()),
      shape_text(input.sizes()));
  auto check_dims = [&](const SymDimVector& expected, IntArrayRef actual, const char* what) {
    for (size_t d = 0; d < expected.size(); ++d) {
      const std::string where =
          fmt::format("interpret: input '{}' ({}) {} {}", source, placeholder->name(), what, d);
      symbols.bind_or_check(expected[d], actual[d], where);
    }
  };
  check_dims(meta.sizes, input.sizes(), "size");
}

// The tensor of each value computed so far, indexed by value id (ids are below next_value_id).
class Env {
 public:
  explicit Env(int num_ids) : slots_(static_cast<size_t>(num_ids)) {}
  void bind(const Value* v, Tensor t) {
    slots_.at(static_cast<size_t>(v->id())) = {v, std::move(t)};
  }
  const Tensor& lookup(const Value* v) const {
    const size_t id = static_cast<size_t>(v->id());
    KILN_CHECK(id < slots_.size() && slots_[id].first == v, ValueError,
               "{} is used before it is defined (or by a node of another graph); run verify() on "
               "the graph to find the broken node",
               v->name());
    return slots_[id].second;
  }

 private:
  std::vector<std::pair<const Value*, Tensor>> slots_;
};

const Tensor& lookup(const Env& env, const Value* v) { return env.lookup(v); }

// `symbols` null: constants stay as they are (interpret_symbolic).
Stack box_arguments(const Node& node, const Env& env, const SymBindings* symbols) {
  Stack stack;
  for (const Arg& a : node.args()) {
    switch (a.kind()) {
      case Arg::Kind::Value:
        stack.emplace_back(lookup(env, a.as_value()));
        break;
      case Arg::Kind::List: {
        std::vector<Tensor> tensors;
        for (Value* v : a.as_list()) tensors.push_back(v == nullptr ? Tensor() : lookup(env, v));
        stack.emplace_back(std::move(tensors));
        break;
      }
      case Arg::Kind::Constant:
        stack.emplace_back(symbols != nullptr ? symbols->concretize(a.as_constant(), node)
                                              : a.as_constant());
        break;
    }
  }
  // Passes (decompositions) may leave trailing defaults out; the op gets them, as from its
  // wrapper, so that code reading every argument (derivative formulas) finds them. The argument
  // count is cached per op on this thread: schema_of takes a lock, and this runs for every node.
  thread_local std::vector<int> arg_counts;
  const OpId op = node.op();
  if (arg_counts.size() <= op) arg_counts.resize(op + 1, -1);
  if (arg_counts[op] < 0) arg_counts[op] = static_cast<int>(schema_of(node.op_def()).args.size());
  if (stack.size() < static_cast<size_t>(arg_counts[op])) {
    const Schema& schema = schema_of(node.op_def());
    for (size_t i = stack.size(); i < schema.args.size() && schema.args[i].default_text; ++i)
      stack.push_back(default_value(schema.args[i], node.op_def().name));
  }
  return stack;
}

}  // namespace

namespace {

void check_input_count(const Graph& g, std::span<const Tensor> inputs) {
  const std::span<Value* const> placeholders = g.placeholders();
  if (inputs.size() == placeholders.size()) return;
  std::string names;
  for (const Value* p : placeholders)
    names += (names.empty() ? "" : ", ") + p->producer()->source();
  throw ValueError(fmt::format("interpret: the graph takes {} inputs ({}) but got {} tensors",
                               placeholders.size(), names, inputs.size()));
}

// Note [Scalar outputs in a graph] (src/ops/scalar_output.cpp): `_local_scalar_dense(x, u0)`
// runs on x alone (u0 has no value yet), and its output's value binds u0 for the nodes after it.
std::vector<Tensor> run_symbol_definition(const Node& node, const Env& env, SymBindings* symbols) {
  Stack args{IValue(lookup(env, node.args().at(0).as_value())), IValue(int64_t{0}),
             IValue(SymDimVector{}), IValue(SymDimVector{}), IValue(std::string())};
  std::vector<Tensor> results = dispatch::call_for_tensors(node.op(), args);
  symbols->bind_if_unbound(check_symbol_definition(node, results.at(0).item<int64_t>()),
                           results.at(0).item<int64_t>());
  return results;
}

// Runs the calls; `symbols` as in box_arguments.
std::vector<Tensor> run_calls(const Graph& g, std::span<const Tensor> inputs, SymBindings* symbols,
                              const HigherOrderHandler* higher_order) {
  Env env(g.next_value_id());
  for (size_t i = 0; i < inputs.size(); ++i) env.bind(g.placeholders()[i], inputs[i]);
  for (const Node* node : g.calls()) {
    // Built only on error: printing a node costs more than running a small op.
    auto context = [node] { return fmt::format("interpret: {}: ", to_string(*node)); };
    std::vector<Tensor> results;
    try {
      // On fakes (interpret_symbolic: AOT autograd's joint trace) there is no value to bind:
      // the op runs on its meta function and its symbol stays a symbol.
      if (node->op_def().has_tag(kTagDefinesSymbol) && symbols != nullptr) {
        results = run_symbol_definition(*node, env, symbols);
        for (size_t i = 0; i < results.size(); ++i) env.bind(node->outputs()[i], results[i]);
        continue;
      }
      Stack args = box_arguments(*node, env, symbols);
      std::optional<ScopedGradMode> grad_mode;  // Note [Grad mode of a node]
      if (node->grad_mode() != Node::GradMode::Inherit)
        grad_mode.emplace(node->grad_mode() == Node::GradMode::Enabled);
      if (is_higher_order(*node)) {
        if (symbols != nullptr) {
          results = run_higher_order(*node, args);
        } else {
          KILN_CHECK(higher_order != nullptr && *higher_order, NotImplementedError,
                     "{}: tracing through a higher-order op symbolically needs a handler for it",
                     node->op_def().name);
          results = (*higher_order)(*node, args);
        }
      } else {
        results = dispatch::call_for_tensors(node->op(), args);  // Note [Running a recorded op]
      }
    } catch (const Error& e) {
      dispatch::rethrow_with_context(e, context());
    }
    KILN_CHECK(results.size() == node->outputs().size(), ValueError,
               "{}the op returned {} tensors but the node has {} outputs", context(),
               results.size(), node->outputs().size());
    for (size_t i = 0; i < results.size(); ++i) {
      const Value* v = node->outputs()[i];
      if (symbols != nullptr && results[i].defined() &&
          results[i].dim() == static_cast<int64_t>(v->meta().sizes.size()))
        for (size_t d = 0; d < v->meta().sizes.size(); ++d)
          symbols->bind_if_unbound(v->meta().sizes[d], results[i].sizes()[d]);
      env.bind(v, std::move(results[i]));
    }
  }
  std::vector<Tensor> outputs;
  for (const Value* v : g.outputs()) {
    try {
      outputs.push_back(lookup(env, v));
    } catch (const Error& e) {
      dispatch::rethrow_with_context(e, "interpret: return: ");
    }
  }
  return outputs;
}

}  // namespace

SymInt check_symbol_definition(const Node& node, int64_t value) {
  KILN_CHECK(node.args().size() == 5 && node.args()[0].is_value(), ValueError,
             "{}: expected (Tensor self, int symbol, int[] lower, int[] upper, str checks)",
             to_string(node));
  const SymInt symbol = node.args()[1].as_constant().to_sym_int();
  auto bound = [&](size_t i) -> std::optional<int64_t> {
    const IntArrayRef words = raw_words(node.args()[i].as_constant());
    return words.empty() ? std::nullopt : std::optional(words[0]);
  };
  const std::optional<int64_t> lower = bound(2), upper = bound(3);
  if ((lower && value < *lower) || (upper && value > *upper)) {
    const std::string& checks = node.args()[4].as_constant().string();
    throw ValueError(fmt::format(
        "kiln::check failed: {} = {} breaks what was asserted about it: {} (the compiled "
        "function checks it where the value is read)",
        symbol.is_symbolic() ? sym::to_string(symbol.expr()) : std::to_string(symbol.raw()), value,
        checks.empty() ? "its value range" : checks));
  }
  return symbol;
}

std::vector<Tensor> interpret(const Graph& g, std::span<const Tensor> inputs) {
  check_input_count(g, inputs);
  const std::span<Value* const> placeholders = g.placeholders();
  SymBindings symbols;
  for (size_t i = 0; i < inputs.size(); ++i) bind_input(placeholders[i], inputs[i], symbols);
  // Sizes first: a symbol that is both a size and a stride takes the size (strides of a
  // non-contiguous input need not match the traced ones).
  for (size_t i = 0; i < inputs.size(); ++i) {
    const SymDimVector& strides = placeholders[i]->meta().strides;
    // Not through a dim of size 0 or 1 (Note [Where a symbol is read] in
    // src/lower/graph_lowering.cpp).
    for (size_t d = 0; d < strides.size() && d < static_cast<size_t>(inputs[i].dim()); ++d)
      if (inputs[i].sizes()[d] > 1) symbols.bind_if_unbound(strides[d], inputs[i].strides()[d]);
  }
  symbols.check_deferred();
  return run_calls(g, inputs, &symbols, nullptr);
}

std::vector<Tensor> interpret_symbolic(const Graph& g, std::span<const Tensor> inputs,
                                       const HigherOrderHandler& higher_order) {
  check_input_count(g, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorMeta& meta = g.placeholders()[i]->meta();
    KILN_CHECK(inputs[i].defined() && inputs[i].dtype() == meta.dtype &&
                   inputs[i].sym_sizes() == SymIntArrayRef(meta.sizes),
               ValueError,
               "interpret_symbolic: input '{}' should be {} with the same (symbolic) sizes",
               g.placeholders()[i]->producer()->source(), to_string(meta));
  }
  return run_calls(g, inputs, nullptr, &higher_order);
}

}  // namespace kiln::graph
