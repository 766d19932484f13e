// Runs fuzz programs through kiln::compile and compares them with eager (issue 5, "Correctness").
// The backend is a name (CompileOptions::backend): the fuzzer knows nothing about any backend.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "kiln/compile.h"
#include "tests/fuzz/fuzz_generator.h"
#include "tests/fuzz/fuzz_program.h"

namespace kiln::fuzz {

// The backend the fuzz test and kiln-fuzz use when KILN_FUZZ_BACKEND is not set: the one
// kiln::compile defaults to.
inline constexpr const char* kDefaultFuzzBackend = "inductor";
// KILN_FUZZ_BACKEND when set and non-empty, else kDefaultFuzzBackend.
std::string backend_from_environment();

struct RunOptions {
  std::string backend = kDefaultFuzzBackend;
  bool dynamic = false;  // compile with every dim symbolic (CompileOptions::dynamic = true)
  bool minimize = true;  // shrink a failing program before reporting it
  // Programs compiled together as one function (run_batch): with a code-generating backend one
  // compiler run serves several programs. A group that fails is rechecked program by program.
  int programs_per_compile = 8;
  // Also compare gradients: floating inputs require grad, and the gradients of a fixed weighted
  // sum of the floating outputs, through the compiled backward (AOT autograd), must match eager
  // autograd's. Programs that eager autograd cannot differentiate are skipped.
  bool grad = false;
  // Note [Later calls]
  // A compiled function is called many times, and what changes between calls is where guards,
  // caches and runtime checks go wrong. So after the first call of a group's function, the
  // fuzzer calls it again, each time with one thing changed, and compares with eager again (the
  // same outputs, or an error of the same kind):
  //  - fresh values from another data seed (integer divisors may now be zero: eager raises, and
  //    the compiled call must raise too);
  //  - new sizes, one map over all sizes so that equal sizes stay equal (1 stays 1, others may
  //    become 1): guards, automatic dynamic, symbolic size-1 and squeeze cases;
  //  - the first values again (a cache hit after recompiles);
  //  - inputs that overlap in memory (views into one storage);
  //  - and, for one group in four, the inputs reaching the function as the buffers of an
  //    nn::Module argument: a second module (a module swap), then the first again with its
  //    buffers updated in place.
  // Random steps (GeneratorOptions::random_ops) are drawn after seeding the generator alike for
  // the eager and the compiled run.
  bool later_calls = true;
  GeneratorOptions generator;
};

// Note [Later calls]: calls `fn` (the group's compiled function, already called once) again with
// changed inputs; records the first difference of each program in `mismatches`.
void check_later_calls(const std::vector<Program>& programs, capture::CompiledFunction& fn,
                       uint64_t rng_seed, std::vector<std::string>& mismatches);
// Note [Later calls]: the module swap, with a compiled function of its own.
void check_module_swap(const std::vector<Program>& programs, const RunOptions& options,
                       uint64_t rng_seed, std::vector<std::string>& mismatches);
// The generator seed a group's eager and compiled runs start from (Note [Random steps]).
uint64_t rng_seed_of(const Program& first);

// Compares compiled (under options.backend) with eager for one program: an empty string when
// they agree, else what differs (output index, element, both values, the allowed error).
std::string check_program(const Program& program, const RunOptions& options);
// The same for several programs compiled as one function (their graphs side by side): one
// message per program. A failure to compile or run the function is reported for each program.
std::vector<std::string> check_programs(const std::vector<Program>& programs,
                                        const RunOptions& options);

// One output under its ValueInfo's rule (Note [Fuzzer numerics]): exact values bit for bit,
// inexact floating values within tol * (|eager| + scale); NaN and inf positions always exactly.
// Empty when they agree.
std::string compare_value(const Tensor& compiled, const Tensor& eager, const ValueInfo& info);

// A smaller program (fewer outputs and steps) for which `fails` still holds: first a single
// output, then the earliest value that alone still fails. Each try costs one compile.
Program minimize(const Program& program, const std::function<bool(const Program&)>& fails);

// The report of a failing program: seed, index, the command that reruns it, the program and its
// minimized form with their mismatches.
std::string failure_report(const Program& program, const std::string& mismatch,
                           const RunOptions& options);

struct BatchResult {
  int64_t programs = 0;
  int64_t steps = 0;
  std::vector<std::string> failures;  // one failure_report each
  double seconds = 0;
  int64_t gradient_checks = 0;  // RunOptions::grad: programs whose gradients were compared
};

// Generates and checks programs start, ..., start + count - 1 of `seed`. With `log`, prints
// every program and its outcome (verbose) or only failures.
BatchResult run_batch(uint64_t seed, int64_t start, int64_t count, const RunOptions& options,
                      std::ostream* log = nullptr, bool verbose = false);

// What a set of programs exercises, for the coverage test and `kiln-fuzz --coverage`.
struct Coverage {
  std::map<std::string, int> ops;          // op name -> steps calling it
  std::map<ScalarType, int> input_dtypes;  // dtype -> inputs of that dtype
  std::map<ScalarType, int> value_dtypes;  // dtype -> values (inputs and results)
  std::map<InputLayout, int> layouts;
  int zero_size_values = 0;
  int size_one_dims = 0;
  int inexact_outputs = 0;
  int non_finite_values = 0;
  int max_steps = 0;
  std::string summary() const;
};
Coverage coverage_of(const std::vector<Program>& programs);

}  // namespace kiln::fuzz
