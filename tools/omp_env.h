// Note [OpenMP wait policy]
// libgomp's default lets idle worker threads spin for a while after each parallel region. On a
// 2-core machine that is shared (or where OpenBLAS and Kiln's loops alternate), the spinning
// threads take the cores from the thread doing the work: the Fashion-MNIST demo measured 2x slower
// under load with spinning than with OMP_WAIT_POLICY=PASSIVE, and PyTorch's reference numbers are
// measured with PASSIVE too. libgomp reads the variable when it is loaded, before main(), so the
// command-line programs set it and re-execute themselves when the user has not chosen a policy.
#pragma once

#include <unistd.h>
#include <cstdlib>

namespace kiln::tools {

inline void use_passive_omp_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then run with the default policy
}

}  // namespace kiln::tools
