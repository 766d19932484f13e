// Kiln's exception hierarchy. Every message names the op, the shapes and dtypes involved, and
// what the user can do about it. Bad input raises one of these; it never crashes the process.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Shapes that do not fit the op (broadcast failure, wrong rank, mismatched matmul dims).
class ShapeError : public Error {
  using Error::Error;
};
// A dtype the op does not support, or a promotion with no exact result (uint64 with a signed type).
class DTypeError : public Error {
  using Error::Error;
};
// An index or dimension out of range.
class IndexError : public Error {
  using Error::Error;
};
// A bad value: negative size, invalid option, NaN where a number is required.
class ValueError : public Error {
  using Error::Error;
};
// Something Kiln does not implement (yet): the message says what and what to use instead.
class NotImplementedError : public Error {
  using Error::Error;
};
// Generated code failed to compile.
class CompileError : public Error {
  using Error::Error;
};
// Capture hit something it cannot put in a graph while fullgraph=true.
class GraphBreakError : public Error {
  using Error::Error;
};
// Compiled code branched on, or needed the integer value of, an expression over data-dependent
// symbols (an item<SymInt>() value, or a nonzero() size under fullgraph) that no kiln::check
// decides (Note [Guarding on a data-dependent value] in src/capture/tracer.cpp).
class GuardOnDataDependentError : public GraphBreakError {
  using GraphBreakError::GraphBreakError;
};
// CompileOptions::verify found a compiled call that differs from what the function does: its
// graph from the interpreter, or a retrace of the function (Note [Verify mode]).
class VerifyError : public Error {
  using Error::Error;
};

}  // namespace kiln

// KILN_CHECK(cond, Kind, fmt-args...) throws kiln::Kind with a fmt-formatted message.
// The message is formatted only on failure, so checks are free on the hot path.
#include <fmt/format.h>
#define KILN_CHECK(cond, Kind, ...)                   \
  do {                                                \
    if (!(cond)) [[unlikely]] {                       \
      throw ::kiln::Kind(::fmt::format(__VA_ARGS__)); \
    }                                                 \
  } while (0)
