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
  Executor(Program program, std::shared_ptr<const KernelLibrary> library);
  ~Executor();
  // Inputs in the program's input order. Inputs that a kernel mutates are updated in place.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;
  const Program& program() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
