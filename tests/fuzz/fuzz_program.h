// The differential fuzzer's program description (issue 5, "Correctness"): a straight-line program
// over the op table, in SSA form, that a generator builds at random (fuzz_generator.h) and that
// runs both eagerly and through kiln::compile (fuzz_runner.h).
//
//   %0 = input float32[3, 4] transposed (data seed 91)
//   %1 = input int8[4] contiguous (data seed 17)
//   %2 = mul(self=%0, other=%1)                  # float32[3, 4] inexact scale 12 tol 2e-06
//   %3 = sum(self=%2, dim=[1], keepdim=true, dtype=None)
//   return %3, %2
//
// Every step is one call of an op-table entry through the dispatcher (dispatch::call), with every
// argument of its schema boxed explicitly, so the interpreter needs no knowledge of any op: what
// an op accepts is the op table's business, and the generator only proposes calls that ran
// eagerly without error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::fuzz {

using ValueId = int;

// How an input tensor is laid out in memory: the compiled artifact must accept (and guard on)
// each of these exactly as eager does.
enum class InputLayout {
  Contiguous,
  Transposed,  // the last two dims swapped in storage (a permuted view of a contiguous tensor)
  Strided,     // every other element of dim 0 (a step-2 slice of a larger tensor)
  Expanded,    // a size-1 dim of storage broadcast to the shape (stride 0)
};
std::string_view layout_name(InputLayout layout);

// How an input's values are drawn (Note [Fuzzer numerics] in fuzz_generator.h).
enum class InputValues {
  Small,     // floats in [-3, 3), integers in a small range (products and sums stay exact)
  Integral,  // floats with integer values in [-4, 4]: ties and equalities happen
  Special,   // Small, plus a few NaN / +inf / -inf (floating dtypes only)
  Wide,      // integers over the dtype's whole range (wrap-around), floats in [-100, 100)
};
std::string_view values_name(InputValues values);

struct InputSpec {
  ValueId id = 0;
  ScalarType dtype = kFloat32;
  std::vector<int64_t> shape;
  InputLayout layout = InputLayout::Contiguous;
  InputValues values = InputValues::Small;
  uint64_t data_seed = 0;
};

// One argument of a call: a program value, a list of values (Tensor[]), or a constant.
struct Arg {
  struct None {};
  using Constant =
      std::variant<None, int64_t, double, bool, std::vector<int64_t>, ScalarType, std::string>;
  std::optional<ValueId> value;
  std::vector<ValueId> values;  // a Tensor[] argument when `list` is set
  bool list = false;
  Constant constant = None{};

  static Arg of(ValueId v) { return {.value = v}; }
  static Arg of_list(std::vector<ValueId> vs) { return {.values = std::move(vs), .list = true}; }
  static Arg of_constant(Constant c) { return {.constant = std::move(c)}; }
  bool is_value() const { return value.has_value(); }
};

// What the generator knows about a value: used to pick the next steps and, at comparison time,
// how strictly compiled and eager must agree (Note [Fuzzer numerics]).
struct ValueInfo {
  ScalarType dtype = kFloat32;
  std::vector<int64_t> shape;
  bool exact = true;        // compiled must equal eager bit for bit
  double scale = 0;         // magnitude against which absolute error is measured
  double tol = 0;           // relative error budget (|a - e| <= tol * (|e| + scale))
  bool non_finite = false;  // holds NaN or inf (from Special inputs)
  std::string note;         // "exact", "inexact scale 12 tol 2e-06": printed after the step
};

struct Step {
  std::string op;  // the op table name ("add", "sum", "_to_copy", ...)
  std::vector<Arg> args;
  std::vector<ValueId> outputs;  // one per tensor the op returns
};

struct Program {
  uint64_t seed = 0;
  int64_t index = 0;
  std::vector<InputSpec> inputs;
  std::vector<Step> steps;
  std::vector<ValueId> outputs;
  std::vector<ValueInfo> values;  // indexed by ValueId

  int num_values() const { return static_cast<int>(values.size()); }
  // The readable form shown above (with each value's dtype, shape and numerics as comments).
  std::string to_text() const;
  // The same program keeping only what `outputs` needs (dead steps and unused inputs removed).
  Program pruned(std::vector<ValueId> new_outputs) const;
};

// The input tensors of `program` (fresh, deterministic from each input's data seed), in input
// order: two calls give equal, independent tensors.
std::vector<Tensor> make_inputs(const Program& program);
Tensor make_input(const InputSpec& spec);

// Runs the program eagerly on `inputs` (one per InputSpec, in order) and returns its outputs.
std::vector<Tensor> interpret(const Program& program, const std::vector<Tensor>& inputs);

// Runs one step on the values computed so far (`env` is indexed by ValueId); the outputs are
// stored into env. Throws whatever the op throws.
void run_step(const Step& step, std::vector<Tensor>& env);

// The schema argument names of `op`, for printing ("self", "other", "alpha").
std::vector<std::string> argument_names(const std::string& op);

}  // namespace kiln::fuzz
