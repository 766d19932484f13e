// The random program generator of the differential fuzzer.
//
// A program is grown one step at a time. Each step is a proposal (an op of the op table with
// random arguments drawn from the values computed so far, fresh inputs and constants) that is
// run eagerly on the program's actual inputs before it is accepted: a proposal that the op
// rejects (a dtype it does not take, a promotion that has no result type, a shape that does not
// broadcast) is dropped and another one is drawn. So the generator respects each op's dtype set
// and promotion rules without restating them, and every program it returns runs eagerly.
//
// How strictly compiled and eager must agree on each value: Note [Fuzzer numerics] in
// fuzz_numerics.h.
#pragma once

#include <string>
#include <vector>

#include "tests/fuzz/fuzz_program.h"

namespace kiln::fuzz {

struct GeneratorOptions {
  int min_steps = 2;
  int max_steps = 12;
  int64_t max_input_numel = 1000;  // inputs stay small (the batch must be fast)
  int max_inputs = 5;
  // Some floating inputs hold NaN and +-inf (InputValues::Special): their propagation must then
  // match eager exactly.
  bool special_values = true;
  // Steps that draw from the default generator (Note [Random steps] in program_helpers.cpp).
  bool random_ops = false;
};

// The program for (seed, index): deterministic, and independent of every other index, so one
// failing program of a batch is rerun alone with the same two numbers.
Program generate(uint64_t seed, int64_t index, const GeneratorOptions& options = {});

// Every op the generator may call, by op-table name (each one exists in the table; unary and
// binary ops are taken from the table itself, so a new one is fuzzed without editing this file).
std::vector<std::string> fuzzed_ops();

}  // namespace kiln::fuzz
