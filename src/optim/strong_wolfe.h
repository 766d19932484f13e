// The strong-Wolfe line search of LBFGS (src/optim/lbfgs.cpp); not public API.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "kiln/tensor.h"

namespace kiln::optim {

// The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to
// [xmin, xmax] (by default the interval between x1 and x2); the interval's midpoint when the
// cubic has no real minimizer.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2);
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         double xmin, double xmax);

// f and its gradient at x + t d, the parameters restored to x afterwards.
using DirectionalObjective = std::function<std::pair<double, Tensor>(double t)>;

struct LineSearchResult {
  double f;       // the objective at the accepted step
  Tensor grad;    // its flat gradient
  double t;       // the accepted step
  int64_t evals;  // evaluations of the objective made
};

// Finds a step t along d that satisfies the strong Wolfe conditions
//   f(t) <= f + c1 t gtd   and   |g(t) . d| <= -c2 gtd
// by bracketing (expanding the step by cubic extrapolation) and then zooming into the bracket
// (cubic interpolation, kept 10% of the bracket away from its ends), at most max_ls evaluations
// of `objective`: torch.optim.lbfgs._strong_wolfe, which is minFunc's and Torch7's lswolfe.
// f, g and gtd are the objective, flat gradient and directional derivative at t = 0.
LineSearchResult strong_wolfe(const DirectionalObjective& objective, double t, const Tensor& d,
                              double f, const Tensor& g, double gtd, double c1 = 1e-4,
                              double c2 = 0.9, double tolerance_change = 1e-9, int64_t max_ls = 25);

}  // namespace kiln::optim
