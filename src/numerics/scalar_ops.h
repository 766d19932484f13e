// The scalar semantics of every loop-IR primitive, shared by the eager kernels, the loop-IR
// interpreter and the generated code.
//
// Note [One definition of a primitive's semantics]
// An integer floor modulo, a wrapping multiply, a shift past the width, a division by zero or a
// NaN in a maximum must give the same answer in eager mode, in the loop-IR interpreter that the
// tests and the value checks run, and in compiled code; three hand-kept copies drifted. So the
// definitions live once, in scalar_ops.inc, as templates in namespace kiln::prim (one function
// per primitive, named as its row of the primitive table, src/lower/primitives.h):
//   - Kiln compiles them through this header: the eager kernels call them in their scalar loops
//     (the vectorized float loops are the same arithmetic on lanes), the interpreter calls them
//     for every primitive;
//   - every generated translation unit carries the same text (prelude.cpp embeds the file,
//     through the build's generated `scalar_ops_text.cpp`), and the C++ printer prints a scalar
//     primitive as a call `kiln::prim::<name><T>(...)`.
// What differs is only the reaction to an integer division by zero: the includer's
// on_division_by_zero(). Here it does nothing, because every caller checks its divisors first and
// raises the eager op's error naming the op (cpu::binary kernels, the interpreter); generated code
// sets its error bit (Note [Runtime errors in generated code]).
#pragma once

#include <cstdint>

namespace kiln::prim {

// Callers check divisors before computing (Note [One definition of a primitive's semantics]).
inline void on_division_by_zero() {}

#include "src/numerics/scalar_ops.inc"  // IWYU pragma: export

}  // namespace kiln::prim
