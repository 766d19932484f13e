// Note [Optimizer steps under a trace]
// Optimizer::step() called while kiln::compile traces (a whole training step compiled, or
// CompiledOptimizerStep) records the update into the graph instead of running it, for SGD, Adam
// and AdamW: one graph updates every parameter of every group and its state in place, and each
// parameter's update fuses into one kernel. What a scheduler changes between calls (the learning
// rate, SGD's momentum, Adam's beta1 and its bias corrections) enters the graph as a 0-dim
// float64 tensor: the lr is the group's lr_tensor (Note [Tensor learning rate]), the others are
// filled by an effect (Note [Effects], src/capture/segment.h) before the graph runs, so a
// scheduler never causes a recompile. Every other hyperparameter, the groups' parameter lists and
// the identity of the state tensors are guarded: a change recompiles.
//
// The traced update reads state that must already exist. A step that would create it (the
// first), or one where a group's Adam parameters are at different step counts, runs the eager
// step as an effect instead, guarded on the state being missing, so the next call, which finds
// the state, takes a new branch with the compiled update. Optimizers without a traced form
// (RMSprop, Adagrad) always step eagerly as an effect: correct, not compiled.
//
// The arithmetic follows the eager steps (sgd.cpp, adam.cpp) op for op; generated kernels may
// contract a multiply and an add into one fused multiply-add, so results agree with eager to
// float rounding, not bit for bit. The optimizer must outlive the compiled function (as its
// modules must): effects and guards refer to it.
#include "src/optim/traced_step.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "kiln/autograd.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/creation.h"
#include "src/core/tracing_hooks.h"

namespace kiln::optim {
namespace {

enum class Kind { SGD, Adam, AdamW, Other };

Kind kind_of(const Optimizer& optimizer) {
  const std::string name = optimizer.name();
  if (name == "SGD") return Kind::SGD;
  if (name == "Adam") return Kind::Adam;
  if (name == "AdamW") return Kind::AdamW;
  return Kind::Other;
}

std::vector<Tensor> params_with_grad(const ParamGroup& group) {
  std::vector<Tensor> params;
  for (const Tensor& p : group.params)
    if (p.grad().defined()) params.push_back(p);
  return params;
}

std::vector<const char*> state_keys(Kind kind, const ParamGroup& group) {
  if (kind == Kind::SGD) {
    if (group.option("momentum") == 0) return {};
    return {"momentum_buffer"};
  }
  if (group.option("amsgrad") != 0) return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"step", "exp_avg", "exp_avg_sq"};
}

// True when every parameter with a gradient has the state the traced update reads, and each
// group's Adam parameters are at one step count (one bias correction per group).
bool state_ready(const Optimizer& optimizer, Kind kind) {
  for (const ParamGroup& group : optimizer.param_groups()) {
    const std::vector<const char*> keys = state_keys(kind, group);
    if (keys.empty()) continue;
    std::optional<double> step;
    for (const Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      const auto* state = optimizer.find_state(p);
      if (state == nullptr) return false;
      for (const char* key : keys)
        if (!state->contains(key)) return false;
      if (kind == Kind::SGD) continue;
      const double t = state->at("step").item<double>();
      if (step && *step != t) return false;
      step = t;
    }
  }
  return true;
}

// Everything about a group the traced update bakes in: its parameters (and which have a
// gradient), its state tensors, and the hyperparameters no scheduler changes.
struct GroupGuard {
  size_t group = 0;
  std::vector<Tensor> params;
  std::vector<bool> has_grad;
  std::vector<std::pair<std::string, double>> options;
  std::optional<bool> momentum_on;  // SGD: momentum on or off changes the graph
  std::vector<const char*> state_keys;
  std::vector<std::vector<const TensorImpl*>> state;  // per parameter with a gradient, per key

  bool holds(const Optimizer& optimizer) const {
    if (group >= optimizer.param_groups().size()) return false;
    const ParamGroup& g = optimizer.param_groups()[group];
    if (g.params.size() != params.size()) return false;
    for (const auto& [name, value] : options)
      if (g.option(name) != value) return false;
    if (momentum_on && (g.option("momentum") != 0) != *momentum_on) return false;
    size_t with_grad = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      if (g.params[i].impl() != params[i].impl() || g.params[i].grad().defined() != has_grad[i])
        return false;
      if (!has_grad[i]) continue;
      const auto* param_state = optimizer.find_state(params[i]);
      const std::vector<const TensorImpl*>& expected = state[with_grad++];
      for (size_t k = 0; k < state_keys.size(); ++k) {
        if (param_state == nullptr) return false;
        const auto it = param_state->find(state_keys[k]);
        if (it == param_state->end() || it->second.impl() != expected[k]) return false;
      }
    }
    return true;
  }
};

GroupGuard group_guard(const Optimizer& optimizer, Kind kind, size_t index,
                       const std::vector<std::string>& option_names) {
  const ParamGroup& group = optimizer.param_groups()[index];
  GroupGuard guard{.group = index, .params = group.params};
  for (const std::string& name : option_names) guard.options.emplace_back(name, group.option(name));
  if (kind == Kind::SGD) guard.momentum_on = group.option("momentum") != 0;
  guard.state_keys = state_keys(kind, group);
  for (const Tensor& p : group.params) {
    guard.has_grad.push_back(p.grad().defined());
    if (!p.grad().defined()) continue;
    std::vector<const TensorImpl*> tensors;
    for (const char* key : guard.state_keys)
      tensors.push_back(optimizer.find_state(p)->at(key).impl());
    guard.state.push_back(std::move(tensors));
  }
  return guard;
}

std::string describe_options(const GroupGuard& g) {
  std::string out;
  for (const auto& [name, value] : g.options)
    out += fmt::format("{}{} == {}", out.empty() ? "" : ", ", name, value);
  if (g.momentum_on) out += fmt::format(", momentum {}", *g.momentum_on ? "on" : "off");
  return out;
}

// The 0-dim float64 tensors a group's traced update reads, filled by its effect.
struct GroupScalars {
  Tensor momentum;                                 // SGD
  Tensor beta1, step_size, bias_correction2_sqrt;  // Adam(W)
};

void record_sgd_update(Optimizer& optimizer, size_t index, const GroupScalars& s,
                       TracingHooks& hooks) {
  const ParamGroup& group = optimizer.param_groups()[index];
  const Tensor& lr = group.lr_tensor;
  const double weight_decay = group.option("weight_decay");
  const double dampening = group.option("dampening");
  const bool nesterov = group.option("nesterov") != 0, maximize = group.option("maximize") != 0;
  const bool use_momentum = group.option("momentum") != 0;
  for (const Tensor& param : params_with_grad(group)) {
    const Tensor& grad = hooks.grad_of(param);
    Tensor direction = maximize ? grad.neg() : grad;
    if (weight_decay != 0) direction = direction.add(param, weight_decay);
    if (!use_momentum) {
      param.sub_(direction * lr);
      continue;
    }
    const Tensor& buffer = optimizer.state(param).at("momentum_buffer");
    hooks.name_state(param, "SGD.momentum_buffer", buffer);
    buffer.mul_(s.momentum).add_(direction, 1 - dampening);
    if (nesterov) {
      param.sub_(direction * lr);
      param.sub_(buffer * (lr * s.momentum));
    } else {
      param.sub_(buffer * lr);
    }
  }
}

void record_adam_update(Optimizer& optimizer, size_t index, bool decoupled, const GroupScalars& s,
                        TracingHooks& hooks) {
  const ParamGroup& group = optimizer.param_groups()[index];
  const Tensor& lr = group.lr_tensor;
  const double beta2 = group.option("beta2"), eps = group.option("eps");
  const double weight_decay = group.option("weight_decay");
  const bool amsgrad = group.option("amsgrad") != 0, maximize = group.option("maximize") != 0;
  for (const Tensor& param : params_with_grad(group)) {
    const Tensor& grad = hooks.grad_of(param);
    auto& state = optimizer.state(param);
    for (const auto& [key, tensor] : state)
      hooks.name_state(param, fmt::format("{}.{}", optimizer.name(), key), tensor);
    state.at("step").add_(1);
    if (decoupled && weight_decay != 0) param.mul_(1 - lr * weight_decay);
    Tensor direction = maximize ? grad.neg() : grad;
    if (!decoupled && weight_decay != 0) direction = direction.add(param, weight_decay);
    state.at("exp_avg").mul_(s.beta1).add_(direction * (1 - s.beta1));
    const Tensor& exp_avg_sq = state.at("exp_avg_sq");
    exp_avg_sq.mul_(beta2).addcmul_(direction, direction, 1 - beta2);
    Tensor denom;
    if (amsgrad) {
      const Tensor& max_exp_avg_sq = state.at("max_exp_avg_sq");
      denom = maximum(max_exp_avg_sq, exp_avg_sq);
      max_exp_avg_sq.copy_(denom);
      denom = denom.sqrt();
    } else {
      denom = exp_avg_sq.sqrt();
    }
    denom = denom / s.bias_correction2_sqrt + eps;
    param.sub_(state.at("exp_avg") / denom * s.step_size);
  }
}

// Fills a group's scalars from the optimizer as it is when the graph is about to run.
void fill_scalars(Optimizer& optimizer, Kind kind, size_t index, const GroupScalars& s) {
  ParamGroup& group = optimizer.param_groups()[index];
  // A rate written to the group's double (param_groups()[g].lr = 0) reaches the graph, which
  // reads the tensor (Note [Tensor learning rate]).
  const double lr = current_lr(group);
  if (group.lr_tensor.item<double>() != lr) group.lr_tensor.fill_(lr);
  group.lr = group.lr_agreed = lr;
  if (kind == Kind::SGD) {
    s.momentum.fill_(group.option("momentum"));
    return;
  }
  const std::vector<Tensor> params = params_with_grad(group);
  if (params.empty()) return;
  const double t = optimizer.find_state(params[0])->at("step").item<double>() + 1;
  const double beta1 = group.option("beta1"), beta2 = group.option("beta2");
  s.beta1.fill_(beta1);
  s.step_size.fill_(lr / (1 - std::pow(beta1, t)));
  s.bias_correction2_sqrt.fill_(std::sqrt(1 - std::pow(beta2, t)));
}

void trace_update(Optimizer& optimizer, Kind kind, TracingHooks& hooks) {
  const size_t groups = optimizer.param_groups().size();
  std::vector<GroupScalars> scalars(groups);
  hooks.run_untraced([&] {
    optimizer.use_tensor_lr();
    for (GroupScalars& s : scalars)
      for (Tensor* t : {&s.momentum, &s.beta1, &s.step_size, &s.bias_correction2_sqrt})
        *t = zeros({}, kFloat64);
  });
  const std::vector<std::string> baked =
      kind == Kind::SGD
          ? std::vector<std::string>{"weight_decay", "dampening", "nesterov", "maximize"}
          : std::vector<std::string>{"beta2", "eps", "weight_decay", "amsgrad", "maximize"};
  for (size_t g = 0; g < groups; ++g) {
    GroupGuard guard = group_guard(optimizer, kind, g, baked);
    const std::string what =
        fmt::format("{} group {}: its parameters, their gradients and state, and {}",
                    optimizer.name(), g, describe_options(guard));
    hooks.guard(what, [&optimizer, guard = std::move(guard)] { return guard.holds(optimizer); });
  }
  hooks.guard(fmt::format("{} has {} parameter groups", optimizer.name(), groups),
              [&optimizer, groups] { return optimizer.param_groups().size() == groups; });
  for (size_t g = 0; g < groups; ++g) {
    const std::string group = fmt::format("{}.param_groups[{}]", optimizer.name(), g);
    hooks.name_state(Tensor(), group + ".lr", optimizer.param_groups()[g].lr_tensor);
    hooks.name_state(Tensor(), group + ".momentum", scalars[g].momentum);
    hooks.name_state(Tensor(), group + ".beta1", scalars[g].beta1);
    hooks.name_state(Tensor(), group + ".step_size", scalars[g].step_size);
    hooks.name_state(Tensor(), group + ".bias_correction2_sqrt", scalars[g].bias_correction2_sqrt);
    for (const Tensor* t : {&scalars[g].momentum, &scalars[g].beta1, &scalars[g].step_size,
                            &scalars[g].bias_correction2_sqrt})
      hooks.filled_by_effect(*t);  // this trace's own, refilled by the effect below
  }
  // Effects first, then every update: an effect after recorded ops would split the graph.
  // SGD's effect reads only the group's options and fills this trace's own tensors and the
  // group's lr tensor, which no op before the step reads, so it needs no graph break after ops
  // recorded before the step (gradient clipping); Adam's reads the step counts, which a graph
  // before it could have changed.
  for (size_t g = 0; g < groups; ++g) {
    hooks.effect(
        fmt::format("{} group {}: scheduled hyperparameters into tensors", optimizer.name(), g),
        [&optimizer, kind, g, s = scalars[g]] { fill_scalars(optimizer, kind, g, s); },
        /*touches_traced_tensors=*/kind != Kind::SGD);
  }
  NoGradGuard no_grad;
  for (size_t g = 0; g < groups; ++g) {
    if (kind == Kind::SGD)
      record_sgd_update(optimizer, g, scalars[g], hooks);
    else
      record_adam_update(optimizer, g, kind == Kind::AdamW, scalars[g], hooks);
  }
}

}  // namespace

bool step_under_trace(Optimizer& optimizer) {
  TracingHooks* hooks = current_tracing_hooks();
  if (hooks == nullptr) return false;
  const Kind kind = kind_of(optimizer);
  if (kind != Kind::Other && state_ready(optimizer, kind)) {
    hooks->guard(
        fmt::format("{} has the state of every parameter with a gradient", optimizer.name()),
        [&optimizer, kind] { return state_ready(optimizer, kind); });
    trace_update(optimizer, kind, *hooks);
    return true;
  }
  if (kind != Kind::Other) {
    hooks->guard(fmt::format("{} lacks the state of a parameter (its first step runs eagerly)",
                             optimizer.name()),
                 [&optimizer, kind] { return !state_ready(optimizer, kind); });
  }
  hooks->effect(fmt::format("{}.step() (eager)", optimizer.name()),
                [&optimizer] { optimizer.step(); });
  return true;
}

bool defer_to_effect(std::string what, std::function<void()> fn) {
  TracingHooks* hooks = current_tracing_hooks();
  if (hooks == nullptr) return false;
  hooks->effect(std::move(what), std::move(fn));
  return true;
}

}  // namespace kiln::optim
