// The text of scalar_ops.inc, for the generated code's prelude (Note [One definition of a
// primitive's semantics] in src/numerics/scalar_ops.h). The build writes its definition
// (cmake/embed_scalar_ops.cmake) from the file itself, so the two cannot differ.
#pragma once

namespace kiln::prim {

extern const char* const kScalarOpsText;

}  // namespace kiln::prim
