// kiln::compile: capture plain C++ model code into graphs (DESIGN.md section 4).
//
//   auto step = kiln::compile([](nn::Module& model, const Tensor& x) { return model(x).relu(); });
//   Tensor y = step(model, x);   // first call traces and compiles; later calls check guards
//
// The function may take tensors, integers, floating-point numbers, bools and nn::Module
// references (any type derived from nn::Module), and return a Tensor, a std::vector<Tensor>, a
// std::tuple/std::pair of Tensors, or nothing. Like jax.jit, it must be functional in its
// non-tensor state: C++ side effects (printing, counters) run only while tracing.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/tensor.h"

namespace kiln {

// `dynamic` = automatic_dynamic: the first compile is static; a dim whose size changes makes
// one recompile with that dim symbolic, after which sizes >= 2 reuse the graph.
inline constexpr std::nullopt_t automatic_dynamic = std::nullopt;

// True when the environment variable KILN_COMPILE_VERIFY is "1": the default of
// CompileOptions::verify.
bool compile_verify_from_environment();

struct CompileOptions {
  // "inductor" generates and compiles C++ kernels (src/runtime/inductor_backend.cpp); "eager"
  // runs captured graphs with the graph interpreter; others are registered by name.
  std::string backend = "inductor";
  std::optional<bool> dynamic = automatic_dynamic;  // true: every dim symbolic; false: never
  bool fullgraph = false;           // a graph break raises GraphBreakError instead of splitting
  int recompile_limit = 8;          // then the function runs eagerly (one warning)
  bool specialize_zero_one = true;  // sizes 0 and 1 stay constants
  bool duck_shape = true;           // equal input sizes share one symbol
  std::string name;                 // for logs and errors; default "fn at file:line"
  // Note [Scalar outputs in a graph] (src/ops/scalar_output.cpp): item<SymInt>() and
  // to_vector<SymInt>() give unbacked symbols (u0, u1, ...) computed in the graph instead of a
  // graph break; code computes with them and branches only on what kiln::check and
  // check_is_size decide (GuardOnDataDependentError otherwise).
  bool capture_scalar_outputs = false;
  // Ops whose output shape depends on the data (nonzero, masked_select, boolean-mask indexing,
  // repeat_interleave with tensor repeats) stay in the graph with unbacked sizes. false runs each
  // eagerly between graphs (a graph break), as PyTorch does by default; Kiln's default is true.
  bool capture_dynamic_output_shape_ops = true;
  // AOT autograd (a graph whose inputs require grad, src/aot): which forward values the backward
  // gets. "min_cut" saves the cheapest set and recomputes the rest; "default" saves every forward
  // value the backward reads.
  std::string partitioner = "min_cut";
  // Note [Verify mode] (src/capture/verify.h): every call also runs each graph with the graph
  // interpreter on copies of its inputs and compares outputs and in-place updates, and every
  // cache hit traces the function again and compares the graphs it records with the cached ones;
  // a difference raises VerifyError naming the first differing output or graph node. For finding
  // state the guards do not see; it costs a trace and an interpreted run per call.
  bool verify = compile_verify_from_environment();
};

// Marks dim `dim` of `t` dynamic for the next compile that sees `t` (a symbol from the start).
void mark_dynamic(const Tensor& t, int64_t dim);

namespace capture {

// A type-erased argument of a compiled function.
using ArgValue = std::variant<Tensor, int64_t, double, bool, nn::Module*>;

// What a compiled function has done so far (for tests and tools).
struct CompileStats {
  int compiles = 0;  // traces that produced a cache entry (or a new branch of one)
  int cache_entries = 0;
  int graphs = 0;  // graph segments compiled by the backend
  int graph_breaks = 0;
  int cache_hits = 0;
  bool fell_back_to_eager = false;
  std::vector<std::string> recompile_reasons;
};

struct FunctionState;  // src/capture/compiled_function.h

class CompiledFunction {
 public:
  using Body = std::function<std::vector<Tensor>(const std::vector<ArgValue>&)>;
  CompiledFunction(Body body, CompileOptions options, std::source_location where);
  std::vector<Tensor> call(const std::vector<ArgValue>& args);
  CompileStats stats() const;
  // Prints every cache entry's graphs and guards (what KILN_LOGS=graph,guards shows).
  std::string describe() const;

 private:
  std::shared_ptr<FunctionState> state_;
};

// Argument conversion: declared parameter type <-> ArgValue.
template <typename T>
struct ArgTraits {
  static_assert(sizeof(T) == 0,
                "kiln::compile: unsupported parameter type. A compiled function takes Tensor, "
                "integers, floating-point numbers, bool and nn::Module references; pass other "
                "state (a std::string, a struct) by capturing it in the lambda, or as a module "
                "attribute (nn::Module::register_attribute), which is guarded");
};
template <>
struct ArgTraits<Tensor> {
  static ArgValue box(const Tensor& t) { return t; }
  static const Tensor& unbox(const ArgValue& v) { return std::get<Tensor>(v); }
};
template <typename T>
requires(std::integral<T> && !std::same_as<T, bool>) struct ArgTraits<T> {
  static ArgValue box(T v) { return static_cast<int64_t>(v); }
  static T unbox(const ArgValue& v) { return static_cast<T>(std::get<int64_t>(v)); }
};
template <std::floating_point T>
struct ArgTraits<T> {
  static ArgValue box(T v) { return static_cast<double>(v); }
  static T unbox(const ArgValue& v) { return static_cast<T>(std::get<double>(v)); }
};
template <>
struct ArgTraits<bool> {
  static ArgValue box(bool v) { return v; }
  static bool unbox(const ArgValue& v) { return std::get<bool>(v); }
};
template <std::derived_from<nn::Module> M>
struct ArgTraits<M> {
  static ArgValue box(M& m) { return static_cast<nn::Module*>(&m); }
  static M& unbox(const ArgValue& v) { return *static_cast<M*>(std::get<nn::Module*>(v)); }
};

// Result conversion: the function's return type <-> a flat list of tensors.
template <typename R>
struct ResultTraits {
  static_assert(sizeof(R) == 0,
                "kiln::compile: unsupported return type. A compiled function returns a Tensor, a "
                "std::vector<Tensor>, a std::tuple or std::pair of Tensors, or nothing");
};
template <>
struct ResultTraits<Tensor> {
  static std::vector<Tensor> flatten(Tensor t) { return {std::move(t)}; }
  static Tensor unflatten(std::vector<Tensor> v) { return std::move(v.at(0)); }
};
template <>
struct ResultTraits<std::vector<Tensor>> {
  static std::vector<Tensor> flatten(std::vector<Tensor> v) { return v; }
  static std::vector<Tensor> unflatten(std::vector<Tensor> v) { return v; }
};
template <>
struct ResultTraits<void> {};
template <typename... Ts>
struct ResultTraits<std::tuple<Ts...>> {
  static_assert((std::is_same_v<Ts, Tensor> && ...), "compiled functions return Tensors");
  static std::vector<Tensor> flatten(std::tuple<Ts...> t) {
    return std::apply([](auto&... x) { return std::vector<Tensor>{x...}; }, t);
  }
  static std::tuple<Ts...> unflatten(std::vector<Tensor> v) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Ts...>(std::move(v.at(I))...);
    }
    (std::index_sequence_for<Ts...>{});
  }
};
template <>
struct ResultTraits<std::pair<Tensor, Tensor>> {
  static std::vector<Tensor> flatten(std::pair<Tensor, Tensor> p) { return {p.first, p.second}; }
  static std::pair<Tensor, Tensor> unflatten(std::vector<Tensor> v) {
    return {std::move(v.at(0)), std::move(v.at(1))};
  }
};

template <typename Signature>
class Compiled;

template <typename R, typename... Args>
class Compiled<R(Args...)> {
 public:
  template <typename F>
  Compiled(F fn, CompileOptions options, std::source_location where)
      : fn_(std::make_shared<CompiledFunction>(make_body(std::move(fn)), std::move(options),
                                               where)) {}

  R operator()(Args... args) const {
    std::vector<ArgValue> boxed{Traits<Args>::box(args)...};
    std::vector<Tensor> out = fn_->call(boxed);
    if constexpr (!std::is_void_v<R>) return ResultTraits<R>::unflatten(std::move(out));
  }
  CompileStats stats() const { return fn_->stats(); }
  std::string describe() const { return fn_->describe(); }

 private:
  template <typename T>
  using Traits = ArgTraits<std::remove_cvref_t<T>>;

  template <typename F>
  static CompiledFunction::Body make_body(F fn) {
    return [fn = std::move(fn)](const std::vector<ArgValue>& boxed) -> std::vector<Tensor> {
      return [&]<size_t... I>(std::index_sequence<I...>)->std::vector<Tensor> {
        if constexpr (std::is_void_v<R>) {
          fn(Traits<Args>::unbox(boxed[I])...);
          return {};
        } else {
          return ResultTraits<R>::flatten(fn(Traits<Args>::unbox(boxed[I])...));
        }
      }
      (std::index_sequence_for<Args...>{});
    };
  }

  std::shared_ptr<CompiledFunction> fn_;
};

template <typename F>
struct SignatureOf : SignatureOf<decltype(&F::operator())> {};
template <typename C, typename R, typename... A>
struct SignatureOf<R (C::*)(A...) const> {
  using type = R(A...);
};
template <typename C, typename R, typename... A>
struct SignatureOf<R (C::*)(A...)> {
  using type = R(A...);
};
template <typename R, typename... A>
struct SignatureOf<R (*)(A...)> {
  using type = R(A...);
};
template <typename R, typename... A>
struct SignatureOf<R(A...)> {
  using type = R(A...);
};

}  // namespace capture

// Compiles `fn` (a lambda, function or function pointer). See the file comment.
template <typename F>
auto compile(F fn, CompileOptions options = {},
             std::source_location where = std::source_location::current()) {
  using Signature = typename capture::SignatureOf<std::remove_pointer_t<std::decay_t<F>>>::type;
  return capture::Compiled<Signature>(std::move(fn), std::move(options), where);
}

namespace optim {
class Optimizer;
}

// Note [Compiled optimizer step]
// An optimizer's step() compiled on its own: kiln::compile of `optimizer.step()`, for training
// loops that keep backward() outside. A step() inside any compiled function records one graph
// that updates every parameter and its state in place (Note [Optimizer steps under a trace],
// src/optim/traced_step.cpp): the learning rate, SGD's momentum and Adam's beta1 and bias
// corrections enter as 0-dim tensors, so a scheduler changing them (OneCycleLR changes lr and
// momentum every step) never recompiles; the other hyperparameters are guarded and a change
// recompiles. The first step, which creates the optimizer's state (momentum buffers, moments),
// runs the optimizer's eager step; the second compiles the update. SGD, Adam and AdamW;
// constructing one for another optimizer raises NotImplementedError. The optimizer must outlive
// this object.
class CompiledOptimizerStep {
 public:
  explicit CompiledOptimizerStep(optim::Optimizer& optimizer, CompileOptions options = {});
  void step();
  // Traces so far: 1 for the eager first step, 1 for the compiled update, 1 more per
  // recompile.
  int compiles() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kiln
