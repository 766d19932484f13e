// Runs a Program (program.h) with a loaded kernel library: binds the size symbols from the
// inputs, allocates intermediate buffers (one allocation per reuse slot, per call), runs the
// steps in order and returns the outputs as views of their buffers.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kiln/tensor.h"
#include "src/runtime/compiler.h"
#include "src/runtime/program.h"

namespace kiln::runtime {

class Executor {
 public:
  // Verifies the program, resolves its kernels in `library` (which may be null when the program
  // has no kernel steps), parses its extern calls and compiles its expressions: ValueError when
  // the program is inconsistent or does not fit the library.
  Executor(Program program, std::shared_ptr<const KernelLibrary> library);
  ~Executor();
  // Inputs in the program's input order. Inputs that a kernel mutates are updated in place.
  // Runs without recording autograd history. Thread-safe: concurrent calls share nothing mutable
  // (Note [Executor memory] in executor.cpp).
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;
  const Program& program() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
