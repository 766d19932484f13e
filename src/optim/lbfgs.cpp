// LBFGS (kiln/optim/lbfgs.h): torch.optim.LBFGS's iteration, step for step, so that the iterates
// are PyTorch's: the same two-loop recursion over the same curvature pairs, the same step-size
// rules and stopping tests in the same order, the same line search (src/optim/strong_wolfe.cpp).
// The scalars PyTorch keeps as 0-dim tensors (dot products, ro, H_diag) are 0-dim tensors of the
// parameters' dtype here too; the line search and the step length are doubles (for float32
// parameters PyTorch rounds some of them to float32, so float32 iterates may differ in the last
// bits).
#include "kiln/optim/lbfgs.h"

#include <cmath>
#include <deque>

#include "kiln/autograd.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/shape.h"
#include "src/core/shape.h"
#include "src/core/tracing_hooks.h"
#include "src/optim/strong_wolfe.h"

namespace kiln::optim {

namespace {

std::map<std::string, double> option_map(const LBFGSOptions& o) {
  KILN_CHECK(o.line_search_fn.empty() || o.line_search_fn == "strong_wolfe", ValueError,
             "LBFGS: line_search_fn must be \"strong_wolfe\" or empty (no line search), got "
             "\"{}\"",
             o.line_search_fn);
  return {{"max_iter", static_cast<double>(o.max_iter)},
          {"max_eval", static_cast<double>(o.max_eval)},
          {"tolerance_grad", o.tolerance_grad},
          {"tolerance_change", o.tolerance_change},
          {"history_size", static_cast<double>(o.history_size)},
          {"line_search_fn", o.line_search_fn.empty() ? 0.0 : 1.0}};
}

Tensor dot(const Tensor& a, const Tensor& b) { return matmul(a, b); }

// The state an LBFGS step carries to the next (kiln/optim/lbfgs.h names the entries).
struct GlobalState {
  int64_t func_evals = 0;
  int64_t n_iter = 0;
  // Set once a step has iterated:
  Tensor d;                                   // the last direction
  double t = 0;                               // the last step length
  std::deque<Tensor> old_dirs, old_stps, ro;  // curvature pairs y, s and 1 / (y . s)
  Tensor H_diag;                              // the scale of the initial inverse Hessian
  Tensor prev_flat_grad;
  double prev_loss = 0;

  static GlobalState read(const std::map<std::string, Tensor>& m) {
    GlobalState s;
    auto get = [&](const std::string& name) {
      auto it = m.find(name);
      return it == m.end() ? Tensor() : it->second;
    };
    if (Tensor v = get("func_evals"); v.defined()) s.func_evals = v.item<int64_t>();
    if (Tensor v = get("n_iter"); v.defined()) s.n_iter = v.item<int64_t>();
    s.d = get("d");
    if (Tensor v = get("t"); v.defined()) s.t = v.item<double>();
    for (size_t k = 0; m.count("old_dirs." + std::to_string(k)); ++k) {
      s.old_dirs.push_back(get("old_dirs." + std::to_string(k)));
      s.old_stps.push_back(get("old_stps." + std::to_string(k)));
      s.ro.push_back(get("ro." + std::to_string(k)));
    }
    s.H_diag = get("H_diag");
    s.prev_flat_grad = get("prev_flat_grad");
    if (Tensor v = get("prev_loss"); v.defined()) s.prev_loss = v.item<double>();
    return s;
  }

  void write(std::map<std::string, Tensor>& m) const {
    m["func_evals"] = full({}, func_evals, kInt64);
    m["n_iter"] = full({}, n_iter, kInt64);
    if (!d.defined()) return;  // a step that stopped at once (PyTorch keeps only the counts)
    for (auto it = m.begin(); it != m.end();) {
      const std::string& key = it->first;
      const bool pair =
          key.starts_with("old_dirs.") || key.starts_with("old_stps.") || key.starts_with("ro.");
      it = pair ? m.erase(it) : std::next(it);
    }
    m["d"] = d;
    m["t"] = full({}, t, kFloat64);
    for (size_t k = 0; k < old_dirs.size(); ++k) {
      m["old_dirs." + std::to_string(k)] = old_dirs[k];
      m["old_stps." + std::to_string(k)] = old_stps[k];
      m["ro." + std::to_string(k)] = ro[k];
    }
    m["H_diag"] = H_diag;
    m["prev_flat_grad"] = prev_flat_grad;
    m["prev_loss"] = full({}, prev_loss, kFloat64);
  }
};

bool is_flat_entry(const std::string& name) {
  return name == "d" || name == "prev_flat_grad" || name.starts_with("old_dirs.") ||
         name.starts_with("old_stps.");
}

bool is_known_entry(const std::string& name) {
  return is_flat_entry(name) || name == "func_evals" || name == "n_iter" || name == "t" ||
         name == "H_diag" || name == "prev_loss" || name.starts_with("ro.");
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions options)
    : LBFGS(single_group(std::move(params)), options) {}

LBFGS::LBFGS(std::vector<ParamGroup> groups, LBFGSOptions defaults)
    : Optimizer(std::move(groups), defaults.lr, option_map(defaults)) {
  KILN_CHECK(groups_.size() == 1, ValueError,
             "LBFGS doesn't support per-parameter options (parameter groups): got {} groups; "
             "pass all parameters as one group",
             groups_.size());
  // As PyTorch's: max_eval defaults to max_iter * 5 // 4.
  ParamGroup& group = groups_.front();
  if (group.option("max_eval") < 0)
    group.options["max_eval"] = std::floor(group.option("max_iter") * 5 / 4);
  check_groups();
}

LBFGSOptions LBFGS::group_options(const ParamGroup& group) {
  return {.lr = group.lr,
          .max_iter = static_cast<int64_t>(group.option("max_iter")),
          .max_eval = static_cast<int64_t>(group.option("max_eval")),
          .tolerance_grad = group.option("tolerance_grad"),
          .tolerance_change = group.option("tolerance_change"),
          .history_size = static_cast<int64_t>(group.option("history_size")),
          .line_search_fn = group.option("line_search_fn") != 0 ? "strong_wolfe" : ""};
}

void LBFGS::check_group(const ParamGroup& group, size_t index) const {
  KILN_CHECK(index == 0, ValueError,
             "LBFGS doesn't support per-parameter options (parameter groups): can't add group "
             "{}; pass all parameters as one group",
             index);
  KILN_CHECK(group.lr > 0, ValueError,
             "LBFGS: invalid learning rate {} in parameter group {} (must be > 0)", group.lr,
             index);
  const LBFGSOptions o = group_options(group);
  auto is_count = [&](const char* name) {
    const double v = group.option(name);
    return v == std::floor(v);
  };
  check_option(o.max_iter > 0 && is_count("max_iter"), group, index, "max_iter",
               "a positive integer");
  check_option(o.max_eval > 0 && is_count("max_eval"), group, index, "max_eval",
               "a positive integer");
  check_option(o.history_size > 0 && is_count("history_size"), group, index, "history_size",
               "a positive integer");
  check_option(o.tolerance_grad >= 0, group, index, "tolerance_grad", ">= 0");
  check_option(o.tolerance_change >= 0, group, index, "tolerance_change", ">= 0");
  const double line_search = group.option("line_search_fn");
  check_option(line_search == 0 || line_search == 1, group, index, "line_search_fn",
               "0 (none) or 1 (strong_wolfe)");
  for (size_t i = 1; i < group.params.size(); ++i)
    KILN_CHECK(group.params[i].dtype() == group.params[0].dtype(), DTypeError,
               "LBFGS: all parameters must have one dtype (LBFGS works on their concatenation), "
               "but parameter 0 is {} and parameter {} is {}",
               dtype_name(group.params[0].dtype()), i, dtype_name(group.params[i].dtype()));
}

void LBFGS::step() {
  throw ValueError(
      "LBFGS.step: LBFGS re-evaluates the objective several times per step; call "
      "step(closure) with a closure that clears the gradients, computes the loss, calls "
      "backward() and returns the loss");
}

int64_t LBFGS::numel() const {
  int64_t n = 0;
  for (const Tensor& p : groups_.front().params) n += p.numel();
  return n;
}

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (const Tensor& p : groups_.front().params) {
    const Tensor& g = p.grad();
    views.push_back(g.defined() ? g.reshape({-1}) : zeros({p.numel()}, p.dtype()));
  }
  return cat(views, 0);
}

void LBFGS::add_to_params(double step_size, const Tensor& direction) {
  int64_t offset = 0;
  for (const Tensor& p : groups_.front().params) {
    const int64_t n = p.numel();
    p.add_(direction.slice(0, offset, offset + n).reshape(p.sym_sizes()), step_size);
    offset += n;
  }
}

std::vector<Tensor> LBFGS::clone_params() const {
  std::vector<Tensor> copies;
  for (const Tensor& p : groups_.front().params) copies.push_back(p.clone());
  return copies;
}

void LBFGS::set_params(const std::vector<Tensor>& values) {
  const std::vector<Tensor>& params = groups_.front().params;
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

double LBFGS::evaluate(const Closure& closure, Tensor* loss) const {
  Tensor value;
  {
    EnableGradGuard enable_grad;  // the closure differentiates, whatever the caller's mode
    value = closure();
  }
  KILN_CHECK(value.defined() && value.numel() == 1, ValueError,
             "LBFGS.step: the closure must return the loss as a one-element tensor, got {}",
             value.defined() ? "shape " + shape_str(value.sym_sizes()) : "an undefined tensor");
  if (loss != nullptr) *loss = value;
  return value.item<double>();
}

std::pair<double, Tensor> LBFGS::directional_evaluate(const Closure& closure,
                                                      const std::vector<Tensor>& x, double t,
                                                      const Tensor& d) {
  add_to_params(t, d);
  const double loss = evaluate(closure);
  Tensor flat_grad = gather_flat_grad();
  set_params(x);
  return {loss, flat_grad};
}

Tensor LBFGS::step(const Closure& closure) {
  KILN_CHECK(closure != nullptr, ValueError,
             "LBFGS.step: got an empty closure; pass one that clears the gradients, computes "
             "the loss, calls backward() and returns the loss");
  // How many times the closure runs depends on the loss's values, which a trace does not have.
  KILN_CHECK(current_tracing_hooks() == nullptr, NotImplementedError,
             "LBFGS.step: stepping inside a compiled function is not supported; call "
             "step(closure) outside it (the closure may call a compiled function)");
  NoGradGuard no_grad;
  const ParamGroup& group = groups_.front();
  const LBFGSOptions o = group_options(group);
  const double lr = step_lr(group);
  const bool strong_wolfe_search = !o.line_search_fn.empty();
  std::map<std::string, Tensor>& stored = state(group.params.front());
  GlobalState s = GlobalState::read(stored);

  // The first evaluation, at the current parameters.
  Tensor orig_loss;
  double loss = evaluate(closure, &orig_loss);
  int64_t current_evals = 1;
  s.func_evals += 1;
  Tensor flat_grad = gather_flat_grad();
  bool opt_cond = flat_grad.abs().max().item<double>() <= o.tolerance_grad;
  if (opt_cond) {
    s.write(stored);
    return orig_loss;
  }

  int64_t n_iter = 0;
  while (n_iter < o.max_iter) {
    ++n_iter;
    ++s.n_iter;

    // ---- the descent direction ----
    if (s.n_iter == 1) {
      s.d = flat_grad.neg();
      s.old_dirs.clear();
      s.old_stps.clear();
      s.ro.clear();
      s.H_diag = full({}, 1.0, flat_grad.dtype());
    } else {
      // Update the memory with the newest curvature pair, if it has positive curvature.
      const Tensor y = flat_grad.sub(s.prev_flat_grad);
      const Tensor step = s.d.mul(s.t);
      const Tensor ys = dot(y, step);
      if (ys.item<double>() > 1e-10) {
        if (static_cast<int64_t>(s.old_dirs.size()) == o.history_size) {
          s.old_dirs.pop_front();
          s.old_stps.pop_front();
          s.ro.pop_front();
        }
        s.old_dirs.push_back(y);
        s.old_stps.push_back(step);
        s.ro.push_back(ys.reciprocal());
        s.H_diag = ys.div(dot(y, y));
      }
      // The two-loop recursion: d = -H g for the L-BFGS inverse Hessian H.
      const size_t num_old = s.old_dirs.size();
      std::vector<Tensor> al(num_old);
      Tensor q = flat_grad.neg();
      for (size_t i = num_old; i-- > 0;) {
        al[i] = dot(s.old_stps[i], q).mul(s.ro[i]);
        q.add_(s.old_dirs[i], -al[i].item<double>());
      }
      Tensor r = q.mul(s.H_diag);
      for (size_t i = 0; i < num_old; ++i) {
        const Tensor be_i = dot(s.old_dirs[i], r).mul(s.ro[i]);
        r.add_(s.old_stps[i], al[i].sub(be_i).item<double>());
      }
      s.d = r;
    }
    if (!s.prev_flat_grad.defined()) {
      s.prev_flat_grad = flat_grad.clone();
    } else {
      s.prev_flat_grad.copy_(flat_grad);
    }
    s.prev_loss = loss;

    // ---- the step length: min(1, 1 / |g|_1) * lr at first, then lr ----
    if (s.n_iter == 1) {
      const Tensor inverse = flat_grad.abs().sum().reciprocal();
      s.t = inverse.item<double>() < 1.0 ? inverse.mul(lr).item<double>() : lr;
    } else {
      s.t = lr;
    }
    const double gtd = dot(flat_grad, s.d).item<double>();
    if (gtd > -o.tolerance_change) break;  // not a descent direction (any more)

    int64_t ls_func_evals = 0;
    if (strong_wolfe_search) {
      const std::vector<Tensor> x_init = clone_params();
      const Tensor d = s.d;
      // PyTorch passes the line search its own default tolerance_change, not the group's.
      const LineSearchResult found =
          strong_wolfe([&](double t) { return directional_evaluate(closure, x_init, t, d); }, s.t,
                       d, loss, flat_grad, gtd);
      loss = found.f;
      flat_grad = found.grad;
      s.t = found.t;
      ls_func_evals = found.evals;
      add_to_params(s.t, s.d);
      opt_cond = flat_grad.abs().max().item<double>() <= o.tolerance_grad;
    } else {
      add_to_params(s.t, s.d);
      if (n_iter != o.max_iter) {
        // Re-evaluated except after the last iteration (of no use in a stochastic setting).
        loss = evaluate(closure);
        flat_grad = gather_flat_grad();
        opt_cond = flat_grad.abs().max().item<double>() <= o.tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    s.func_evals += ls_func_evals;

    // ---- stopping tests, in PyTorch's order ----
    if (n_iter == o.max_iter) break;
    if (current_evals >= o.max_eval) break;
    if (opt_cond) break;
    if (s.d.mul(s.t).abs().max().item<double>() <= o.tolerance_change) break;  // no progress
    if (std::abs(loss - s.prev_loss) < o.tolerance_change) break;
  }
  s.write(stored);
  return orig_loss;
}

void LBFGS::load_state_dict(const StateDict& dict) {
  // The global state is not shaped like the first parameter, which the base's checks expect of
  // a parameter's state: check it here, let the base load the rest, then put it back.
  // A handle, not a reference: the base's load replaces groups_.
  const Tensor first = groups_.front().params.front();
  const int64_t n = numel();
  StateDict rest;
  rest.values = dict.values;
  std::map<std::string, Tensor> global;
  for (const auto& [key, t] : dict.tensors) {
    if (!key.starts_with("state.0.")) {
      rest.tensors.emplace(key, t);
      continue;
    }
    const std::string name = key.substr(8);
    KILN_CHECK(is_known_entry(name), ValueError,
               "LBFGS.load_state_dict: unknown state entry '{}'; the state must come from "
               "LBFGS.state_dict()",
               key);
    if (is_flat_entry(name)) {
      KILN_CHECK(t.dim() == 1 && t.size(0) == n, ShapeError,
                 "LBFGS.load_state_dict: state '{}' has shape {} but the parameters have {} "
                 "elements in all; build the optimizer over the same parameters",
                 key, shape_str(t.sym_sizes()), n);
    } else {
      KILN_CHECK(t.dim() == 0, ShapeError,
                 "LBFGS.load_state_dict: state '{}' must be 0-dim, got {}", key,
                 shape_str(t.sym_sizes()));
    }
    const bool keeps_dtype =
        name == "func_evals" || name == "n_iter" || name == "t" || name == "prev_loss";
    global.emplace(name, keeps_dtype ? t.clone() : t.to(first.dtype(), /*copy=*/true));
  }
  Optimizer::load_state_dict(rest);
  if (!global.empty()) state(first) = std::move(global);
}

}  // namespace kiln::optim
