// The random program generator of the differential fuzzer.
//
// A program is grown one step at a time. Each step is a proposal (an op of the op table with
// random arguments drawn from the values computed so far, fresh inputs and constants) that is
// run eagerly on the program's actual inputs before it is accepted: a proposal that the op
// rejects (a dtype it does not take, a promotion that has no result type, a shape that does not
// broadcast) is dropped and another one is drawn. So the generator respects each op's dtype set
// and promotion rules without restating them, and every program it returns runs eagerly.
//
// Note [Fuzzer numerics]
// Compiled code may legitimately compute floating results differently from eager: fused
// multiply-adds, float32 arithmetic for float16/bfloat16 intermediates that eager rounds after
// every op, other summation orders, vector exp/log/tanh/erf approximations. The fuzzer must not
// call those differences bugs, and must still catch real ones (a wrong index, a wrong cast, a
// dropped op). Each value therefore carries:
//   - `exact`: compiled must equal eager bit for bit (NaN positions included). True for every
//     integer and bool value, for inputs, and for floating values that only went through ops that
//     select or copy values (views, cat, neg, abs, relu, maximum, where, clamp, casts, amax, ...)
//     from exact values.
//   - for inexact floating values, an error budget: |compiled - eager| <= tol * (|eager| + scale).
//     `tol` grows by one rounding step of the output dtype per op (float64 2e-12, float32 4e-6,
//     float16 4e-3, bfloat16 3e-2: a few units in the last place, twice what a float64
//     evaluation of the same program needs at most, see FuzzNumerics in fuzz_test.cpp) and sums
//     over the op's inputs (a result whose budget passes 0.2 is not generated);
//     `scale` is the magnitude the absolute error is measured against, propagated by a gain rule
//     per op (a product multiplies its inputs' scales, a sum of n terms grows by 2*sqrt(n), exp
//     multiplies by its input's scale, ...).
// Ops whose result can jump for an arbitrarily small change of input (floor, comparisons,
// argmax, casts to integers, remainder, logical ops on floats) take only exact floating inputs,
// and ops with a singularity (log, sqrt, reciprocal, division) take an inexact input only when it
// stays at least a quarter of its scale away from zero. A proposal whose result overflows or
// creates NaN/inf from finite inputs is dropped, so the comparison never depends on where a
// rounding difference crosses the overflow threshold; NaN and inf enter only through inputs with
// special values, and then their positions must agree exactly (they propagate deterministically).
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
};

// The program for (seed, index): deterministic, and independent of every other index, so one
// failing program of a batch is rerun alone with the same two numbers.
Program generate(uint64_t seed, int64_t index, const GeneratorOptions& options = {});

// Every op the generator may call, by op-table name (each one exists in the table; unary and
// binary ops are taken from the table itself, so a new one is fuzzed without editing this file).
std::vector<std::string> fuzzed_ops();

}  // namespace kiln::fuzz
