// Note [Compiled optimizer step] (include/kiln/compile.h): SGD's and Adam(W)'s updates written
// once more against kiln::compile's argument list, with every value a scheduler may change each
// step passed as a 0-dim tensor. The arithmetic follows the eager steps (src/optim/sgd.cpp,
// src/optim/adam.cpp) op for op; the compiled kernels may contract a multiply and an add into
// one fused multiply-add, so results agree with eager to float rounding, not bit for bit.
#include <fmt/format.h>

#include <cmath>

#include "kiln/autograd.h"
#include "kiln/compile.h"
#include "kiln/error.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/creation.h"
#include "kiln/optim/optimizer.h"

namespace kiln {
namespace {

using capture::ArgValue;
using capture::CompiledFunction;

enum class Kind { SGD, Adam, AdamW };

const Tensor& tensor_arg(const std::vector<ArgValue>& a, size_t i) {
  return std::get<Tensor>(a[i]);
}
double double_arg(const std::vector<ArgValue>& a, size_t i) { return std::get<double>(a[i]); }
bool bool_arg(const std::vector<ArgValue>& a, size_t i) { return std::get<bool>(a[i]); }

// SGD: args = [lr, momentum, weight_decay, dampening, nesterov, maximize, use_momentum, n,
//              params..., grads..., momentum buffers (when use_momentum)...].
std::vector<Tensor> sgd_body(const std::vector<ArgValue>& a) {
  const Tensor& lr = tensor_arg(a, 0);
  const Tensor& momentum = tensor_arg(a, 1);
  const double weight_decay = double_arg(a, 2), dampening = double_arg(a, 3);
  const bool nesterov = bool_arg(a, 4), maximize = bool_arg(a, 5), use_momentum = bool_arg(a, 6);
  const auto n = static_cast<size_t>(std::get<int64_t>(a[7]));
  for (size_t i = 0; i < n; ++i) {
    const Tensor& param = tensor_arg(a, 8 + i);
    const Tensor& grad = tensor_arg(a, 8 + n + i);
    Tensor direction = maximize ? grad.neg() : grad;
    if (weight_decay != 0) direction = direction.add(param, weight_decay);
    if (!use_momentum) {
      param.sub_(direction * lr);
      continue;
    }
    const Tensor& buffer = tensor_arg(a, 8 + 2 * n + i);
    buffer.mul_(momentum).add_(direction, 1 - dampening);
    if (nesterov) {
      param.sub_(direction * lr);
      param.sub_(buffer * (lr * momentum));
    } else {
      param.sub_(buffer * lr);
    }
  }
  return {};
}

// Adam(W): args = [lr, step_size, bias_correction2_sqrt, beta1, beta2, eps, weight_decay,
//                  amsgrad, maximize, decoupled, n, params..., grads..., steps..., exp_avgs...,
//                  exp_avg_sqs..., (amsgrad) max_exp_avg_sqs...].
std::vector<Tensor> adam_body(const std::vector<ArgValue>& a) {
  const Tensor& lr = tensor_arg(a, 0);
  const Tensor& step_size = tensor_arg(a, 1);
  const Tensor& bias_correction2_sqrt = tensor_arg(a, 2);
  const double beta1 = double_arg(a, 3), beta2 = double_arg(a, 4), eps = double_arg(a, 5);
  const double weight_decay = double_arg(a, 6);
  const bool amsgrad = bool_arg(a, 7), maximize = bool_arg(a, 8), decoupled = bool_arg(a, 9);
  const auto n = static_cast<size_t>(std::get<int64_t>(a[10]));
  const size_t base = 11;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& param = tensor_arg(a, base + i);
    const Tensor& grad = tensor_arg(a, base + n + i);
    const Tensor& step = tensor_arg(a, base + 2 * n + i);
    const Tensor& exp_avg = tensor_arg(a, base + 3 * n + i);
    const Tensor& exp_avg_sq = tensor_arg(a, base + 4 * n + i);
    step.add_(1);
    if (decoupled && weight_decay != 0) param.mul_(1 - lr * weight_decay);
    Tensor direction = maximize ? grad.neg() : grad;
    if (!decoupled && weight_decay != 0) direction = direction.add(param, weight_decay);
    exp_avg.mul_(beta1).add_(direction, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(direction, direction, 1 - beta2);
    Tensor denom;
    if (amsgrad) {
      const Tensor& max_exp_avg_sq = tensor_arg(a, base + 5 * n + i);
      denom = maximum(max_exp_avg_sq, exp_avg_sq);
      max_exp_avg_sq.copy_(denom);
      denom = denom.sqrt();
    } else {
      denom = exp_avg_sq.sqrt();
    }
    denom = denom / bias_correction2_sqrt + eps;
    param.sub_(exp_avg / denom * step_size);
  }
  return {};
}

}  // namespace

struct CompiledOptimizerStep::State {
  optim::Optimizer* optimizer = nullptr;
  Kind kind = Kind::SGD;
  CompileOptions options;
  std::vector<std::unique_ptr<CompiledFunction>> per_group;
  // Per group, the 0-dim hyperparameter tensors, filled in place before each call.
  std::vector<std::vector<Tensor>> scalars;
  int eager_steps = 0;

  CompiledFunction& function(size_t group) {
    if (per_group.size() <= group) per_group.resize(group + 1);
    if (!per_group[group]) {
      CompileOptions o = options;
      o.dynamic = false;
      if (o.name.empty()) o.name = fmt::format("{}.step (group {})", optimizer->name(), group);
      per_group[group] = std::make_unique<CompiledFunction>(
          kind == Kind::SGD ? sgd_body : adam_body, o, std::source_location::current());
    }
    return *per_group[group];
  }
  Tensor& scalar(size_t group, size_t index, double value) {
    if (scalars.size() <= group) scalars.resize(group + 1);
    std::vector<Tensor>& s = scalars[group];
    while (s.size() <= index) s.push_back(zeros({}, kFloat64));
    s[index].fill_(value);
    return s[index];
  }
};

CompiledOptimizerStep::CompiledOptimizerStep(optim::Optimizer& optimizer, CompileOptions options)
    : state_(std::make_shared<State>()) {
  const std::string name = optimizer.name();
  KILN_CHECK(name == "SGD" || name == "Adam" || name == "AdamW", NotImplementedError,
             "CompiledOptimizerStep: {} has no compiled step yet (SGD, Adam and AdamW do); call "
             "its step() instead",
             name);
  state_->optimizer = &optimizer;
  state_->kind = name == "SGD" ? Kind::SGD : name == "Adam" ? Kind::Adam : Kind::AdamW;
  state_->options = std::move(options);
  optimizer.use_tensor_lr();  // Note [Tensor learning rate]
}

int CompiledOptimizerStep::compiles() const {
  int n = 0;
  for (const auto& f : state_->per_group)
    if (f) n += f->stats().compiles;
  return n;
}

int CompiledOptimizerStep::eager_steps() const { return state_->eager_steps; }

void CompiledOptimizerStep::step() {
  State& s = *state_;
  optim::Optimizer& opt = *s.optimizer;
  NoGradGuard no_grad;
  // The state the compiled update reads must exist: the first step (or a parameter seen with a
  // gradient for the first time) runs the eager step, which creates it.
  auto state_of = [&](const Tensor& p) { return opt.find_state(p); };
  for (size_t g = 0; g < opt.param_groups().size(); ++g) {
    const optim::ParamGroup& group = opt.param_groups()[g];
    for (const Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      const bool needs_state = s.kind != Kind::SGD || group.option("momentum") != 0;
      if (needs_state && state_of(p) == nullptr) {
        opt.step();
        s.eager_steps += 1;
        return;
      }
    }
  }
  for (size_t g = 0; g < opt.param_groups().size(); ++g) {
    const optim::ParamGroup& group = opt.param_groups()[g];
    std::vector<Tensor> params, grads;
    for (const Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    const auto n = static_cast<int64_t>(params.size());
    std::vector<ArgValue> args;
    if (s.kind == Kind::SGD) {
      const double momentum = group.option("momentum");
      args = {group.lr_tensor,
              s.scalar(g, 0, momentum),
              group.option("weight_decay"),
              group.option("dampening"),
              group.option("nesterov") != 0,
              group.option("maximize") != 0,
              momentum != 0,
              n};
      for (const Tensor& p : params) args.emplace_back(p);
      for (const Tensor& gr : grads) args.emplace_back(gr);
      if (momentum != 0)
        for (const Tensor& p : params) args.emplace_back(state_of(p)->at("momentum_buffer"));
    } else {
      // Every parameter of the group must be at the same step for one bias correction.
      const double t = state_of(params[0])->at("step").item<double>() + 1;
      for (const Tensor& p : params) {
        if (state_of(p)->at("step").item<double>() + 1 != t) {
          opt.step();
          s.eager_steps += 1;
          return;
        }
      }
      const double lr = group.lr_tensor.item<double>();
      const double beta1 = group.option("beta1"), beta2 = group.option("beta2");
      const bool amsgrad = group.option("amsgrad") != 0;
      args = {group.lr_tensor,
              s.scalar(g, 0, lr / (1 - std::pow(beta1, t))),
              s.scalar(g, 1, std::sqrt(1 - std::pow(beta2, t))),
              beta1,
              beta2,
              group.option("eps"),
              group.option("weight_decay"),
              amsgrad,
              group.option("maximize") != 0,
              s.kind == Kind::AdamW,
              n};
      for (const Tensor& p : params) args.emplace_back(p);
      for (const Tensor& gr : grads) args.emplace_back(gr);
      for (const char* key : {"step", "exp_avg", "exp_avg_sq"})
        for (const Tensor& p : params) args.emplace_back(state_of(p)->at(key));
      if (amsgrad)
        for (const Tensor& p : params) args.emplace_back(state_of(p)->at("max_exp_avg_sq"));
    }
    s.function(g).call(args);
  }
}

}  // namespace kiln
