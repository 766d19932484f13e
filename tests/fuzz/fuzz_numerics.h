// The numerics of fuzz programs: which inexact values an op may take, and how far compiled may be
// from eager on each value the generator records.
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

#include <optional>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_program.h"

namespace kiln::fuzz {

// Which inexact floating inputs an op takes (Note [Fuzzer numerics]).
enum class Accepts {
  Any,
  Exact,         // the result can jump for a tiny change of input
  AwayFromZero,  // singular at 0: inexact only when |x| >= scale / 4 everywhere
};

// How an op's result error grows from its inputs' (Note [Fuzzer numerics]).
enum class Gain {
  Copy,       // selects or converts values: exact when the inputs are
  Smooth,     // Lipschitz ~1 in each input: scale = 2 * (sum of input scales + factor)
  Product,    // scale = product of input scales * factor
  Exp,        // relative error grows by the input's scale
  Sum,        // a sum of `factor` terms: scale = 2 * sqrt(factor) * input scale
  Square,     // var: scale = 4 * input scale^2
  Std,        // std: needs std >= input scale / 10; scale = 20 * input scale
  Relative,   // a few ulps of the result: scale = 8 * max(|result|, 1)
  Quotient,   // a / b with min|b| = factor: scale = max(8 |result|, 2 * scale(a) / min|b|)
  Power,      // x^factor (factor 2 or 3): scale = factor * scale^factor
  Matmul,     // contraction over `factor`: scale = 2 * sqrt(factor) * scale(a) * scale(b) + bias
  Addcmul,    // self + value * t1 * t2, value = factor
  Normalize,  // layer_norm (rows checked to have std >= scale / 10)
};

// An op's rule. Unary and binary ops not listed in numerics_helpers.cpp get the conservative
// default: exact inputs, a few ulps of error.
struct Rule {
  Accepts accepts = Accepts::Exact;
  Gain gain = Gain::Relative;
};
Rule rule_of(const std::string& op);

// One rounding step of a floating dtype (0 for the others).
double rounding_step(ScalarType t);
// Largest magnitude a floating result may have: far enough below overflow that a rounding
// difference cannot turn it into inf on one side only.
double magnitude_limit(ScalarType t);

struct Stats {
  double max_abs = 0;  // over finite elements
  double min_abs = std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  bool non_finite = false;
};

Stats stats_of(const Tensor& t);

// The numerics of one proposed call.
struct StepNumerics {
  std::string op;
  Accepts accepts = Accepts::Any;
  int away_arg = -1;  // this argument is AwayFromZero (a denominator)
  Gain gain = Gain::Copy;
  double factor = 0;  // the Gain's parameter (see Gain)
};

// A tensor argument of the call: its argument index, what is known about it, its eager value.
struct Operand {
  int arg = 0;
  ValueInfo info;
  Tensor tensor;
};

// The ValueInfos of a call's eager results, or nothing when the call must not be generated: an
// inexact input it does not accept, a result larger than max_numel elements, an overflow or a
// new NaN/inf, an error budget too wide to mean anything.
std::optional<std::vector<ValueInfo>> judge_step(const StepNumerics& step,
                                                 const std::vector<Operand>& operands,
                                                 const std::vector<Tensor>& results,
                                                 int64_t max_numel);

}  // namespace kiln::fuzz
