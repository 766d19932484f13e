// Note [Compiled optimizer step] (include/kiln/compile.h): a kiln::compile of `optimizer.step()`.
// The traced step itself (tensor hyperparameters, guards, the eager first step) is the
// optimizer's: Note [Optimizer steps under a trace] in src/optim/traced_step.cpp.
#include <fmt/format.h>

#include "kiln/compile.h"
#include "kiln/error.h"
#include "kiln/optim/optimizer.h"

namespace kiln {

struct CompiledOptimizerStep::State {
  std::unique_ptr<capture::CompiledFunction> function;
};

CompiledOptimizerStep::CompiledOptimizerStep(optim::Optimizer& optimizer, CompileOptions options)
    : state_(std::make_shared<State>()) {
  const std::string name = optimizer.name();
  KILN_CHECK(name == "SGD" || name == "Adam" || name == "AdamW", NotImplementedError,
             "CompiledOptimizerStep: {} has no compiled step yet (SGD, Adam and AdamW do); call "
             "its step() instead",
             name);
  if (options.name.empty()) options.name = fmt::format("{}.step", name);
  optim::Optimizer* opt = &optimizer;
  state_->function = std::make_unique<capture::CompiledFunction>(
      [opt](const std::vector<capture::ArgValue>&) {
        opt->step();
        return std::vector<Tensor>{};
      },
      std::move(options), std::source_location::current());
}

void CompiledOptimizerStep::step() { state_->function->call({}); }

int CompiledOptimizerStep::compiles() const { return state_->function->stats().compiles; }

}  // namespace kiln
