// Thread-local switches: grad mode, inference mode, anomaly mode, functional formulas.
#include "kiln/autograd.h"
#include "src/autograd/derivatives.h"

namespace kiln {
namespace {
thread_local bool grad_enabled = true;
thread_local bool inference_enabled = false;
thread_local bool anomaly_enabled = false;
thread_local bool functional_formulas_enabled = false;
}  // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }
bool InferenceMode::is_enabled() { return inference_enabled; }
void InferenceMode::set_enabled(bool enabled) { inference_enabled = enabled; }
bool AnomalyMode::is_enabled() { return anomaly_enabled; }
void AnomalyMode::set_enabled(bool enabled) { anomaly_enabled = enabled; }

namespace autograd {
bool functional_formulas() { return functional_formulas_enabled; }
FunctionalFormulasGuard::FunctionalFormulasGuard() : saved_(functional_formulas_enabled) {
  functional_formulas_enabled = true;
}
FunctionalFormulasGuard::~FunctionalFormulasGuard() { functional_formulas_enabled = saved_; }
}  // namespace autograd

}  // namespace kiln
