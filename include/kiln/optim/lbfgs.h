// LBFGS: limited-memory BFGS, torch.optim.LBFGS's algorithm (after minFunc), with an optional
// strong-Wolfe line search. Each step re-evaluates the objective through a closure, as often as
// its iterations and line search need:
//
//   optim::LBFGS opt(model.parameters(), {.lr = 1, .line_search_fn = "strong_wolfe"});
//   auto closure = [&] {
//     opt.zero_grad();
//     Tensor loss = loss_fn(model.forward(x), y);
//     loss.backward();
//     return loss;
//   };
//   for (int i = 0; i < 10; ++i) opt.step(closure);
//
// All parameters form one vector (the flat concatenation of the parameters, in order), so LBFGS
// takes one parameter group only, and its state (the curvature pairs, the last direction and
// step) is global. As PyTorch's, that state is kept as the state of the first parameter:
// state_dict() has "state.0.<name>" for func_evals and n_iter (0-dim int64), d and prev_flat_grad
// (flat vectors as long as all parameters together), t and prev_loss (0-dim float64), H_diag and,
// per stored curvature pair k (oldest first), "old_dirs.<k>", "old_stps.<k>" (flat) and "ro.<k>"
// (0-dim). (PyTorch also keeps "al", scratch space that every iteration overwrites before reading.)
// The group's options are "max_iter", "max_eval", "tolerance_grad", "tolerance_change",
// "history_size" and "line_search_fn" (0 none, 1 strong_wolfe).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct LBFGSOptions {
  double lr = 1;
  // Iterations per step().
  int64_t max_iter = 20;
  // Evaluations of the closure per step(); -1 (the default) means max_iter * 5 / 4.
  int64_t max_eval = -1;
  // A step stops when the largest gradient coordinate is at most this.
  double tolerance_grad = 1e-7;
  // ... or when the loss, the step or the directional derivative change by less than this.
  double tolerance_change = 1e-9;
  // Curvature pairs kept.
  int64_t history_size = 100;
  // "" (a fixed step of lr) or "strong_wolfe".
  std::string line_search_fn;
};

class LBFGS : public Optimizer {
 public:
  using Closure = std::function<Tensor()>;

  explicit LBFGS(std::vector<Tensor> params, LBFGSOptions options = {});
  // One group only (ValueError otherwise, as PyTorch's); the vector form is for LibTorch's
  // constructor shape.
  explicit LBFGS(std::vector<ParamGroup> groups, LBFGSOptions defaults = {});

  // Up to max_iter iterations of L-BFGS, calling `closure` (which must clear the gradients,
  // compute the loss, call backward() and return the loss) to evaluate the objective and its
  // gradient. Returns the loss of the first evaluation, as PyTorch's. The closure runs with grad
  // mode enabled; the updates of the parameters run without.
  Tensor step(const Closure& closure);
  // LBFGS needs the objective: ValueError pointing to step(closure).
  void step() override;
  std::string name() const override { return "LBFGS"; }

  // The base's, with the checks of the global state's shapes (flat vectors, not shaped like the
  // first parameter) done here.
  void load_state_dict(const StateDict& dict) override;

  static LBFGSOptions group_options(const ParamGroup& group);

 protected:
  void check_group(const ParamGroup& group, size_t index) const override;

 private:
  int64_t numel() const;
  Tensor gather_flat_grad() const;
  void add_to_params(double step_size, const Tensor& direction);
  std::vector<Tensor> clone_params() const;
  void set_params(const std::vector<Tensor>& values);
  // f(x + t d) and its gradient, then the parameters are put back to x.
  std::pair<double, Tensor> directional_evaluate(const Closure& closure,
                                                 const std::vector<Tensor>& x, double t,
                                                 const Tensor& d);
  // The closure's loss as a double (ValueError unless it is a one-element tensor).
  double evaluate(const Closure& closure, Tensor* loss = nullptr) const;
};

}  // namespace kiln::optim
