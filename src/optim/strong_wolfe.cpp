#include "src/optim/strong_wolfe.h"

#include <cmath>
#include <tuple>
#include <vector>

#include "kiln/ops/linalg.h"

namespace kiln::optim {

namespace {

// Python's max(a, b) and min(a, b), which keep the first argument unless the second compares
// strictly greater (smaller): with a NaN they return what PyTorch's line search returns.
double py_max(double a, double b) { return b > a ? b : a; }
double py_min(double a, double b) { return b < a ? b : a; }

double dot(const Tensor& a, const Tensor& b) { return matmul(a, b).item<double>(); }

}  // namespace

double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2) {
  return x1 <= x2 ? cubic_interpolate(x1, f1, g1, x2, f2, g2, x1, x2)
                  : cubic_interpolate(x1, f1, g1, x2, f2, g2, x2, x1);
}

double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         double xmin, double xmax) {
  // With x2 the farther point:
  //   d1 = g1 + g2 - 3 (f1 - f2) / (x1 - x2),  d2 = sqrt(d1^2 - g1 g2),
  //   t = x2 - (x2 - x1) (g2 + d2 - d1) / (g2 - g1 + 2 d2).
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (!(d2_square >= 0)) return (xmin + xmax) / 2.0;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return py_min(py_max(min_pos, xmin), xmax);
}

LineSearchResult strong_wolfe(const DirectionalObjective& objective, double t, const Tensor& d,
                              double f, const Tensor& g, double gtd, double c1, double c2,
                              double tolerance_change, int64_t max_ls) {
  const double d_norm = d.abs().max().item<double>();
  double f_new;
  Tensor g_new;
  std::tie(f_new, g_new) = objective(t);
  int64_t evals = 1;
  double gtd_new = dot(g_new, d);

  // ---- bracketing: an interval that contains a point satisfying the conditions ----
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g.clone();
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Tensor> bracket_g;
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      // Armijo fails, or the objective stopped decreasing: the minimum lies in between.
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {t};
      bracket_f = {f_new};
      bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      // The slope turned: the minimum lies in between.
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    // Extrapolate: a cubic step within [t + 0.01 (t - t_prev), 10 t].
    const double min_step = t + 0.01 * (t - t_prev);
    const double max_step = t * 10;
    const double previous = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, min_step, max_step);
    t_prev = previous;
    f_prev = f_new;
    g_prev = g_new.clone();
    gtd_prev = gtd_new;
    std::tie(f_new, g_new) = objective(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) {
    bracket = {0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }

  // ---- zoom: shrink the bracket until a point satisfies the conditions ----
  bool insufficient_progress = false;
  size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1;
  size_t high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1],
                          bracket_gtd[1]);
    // A trial too close to an end of the bracket, twice in a row or at the end itself, moves to
    // 10% of the bracket's length from that end.
    const double b_max = py_max(bracket[0], bracket[1]), b_min = py_min(bracket[0], bracket[1]);
    const double eps = 0.1 * (b_max - b_min);
    if (py_min(b_max - t, t - b_min) < eps) {
      if (insufficient_progress || t >= b_max || t <= b_min) {
        t = std::abs(t - b_max) < std::abs(t - b_min) ? b_max - eps : b_min + eps;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    std::tie(f_new, g_new) = objective(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      // Armijo fails or no lower than the low end: the trial becomes the high end.
      bracket[high] = t;
      bracket_f[high] = f_new;
      bracket_g[high] = g_new.clone();
      bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        // The old high end becomes the new low end's partner.
        bracket[high] = bracket[low];
        bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low];
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t;
      bracket_f[low] = f_new;
      bracket_g[low] = g_new.clone();
      bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], evals};
}

}  // namespace kiln::optim
