#include "kiln/optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "kiln/autograd.h"
#include "kiln/ops/creation.h"
#include "src/core/shape.h"
#include "src/core/tracing_hooks.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {

double ParamGroup::option(const std::string& name) const {
  auto it = options.find(name);
  KILN_CHECK(it != options.end(), ValueError, "optimizer: the parameter group has no option '{}'",
             name);
  return it->second;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, double default_lr,
                     std::map<std::string, double> defaults)
    : default_lr_(default_lr), defaults_(std::move(defaults)) {
  KILN_CHECK(!groups.empty(), ValueError, "optimizer: got no parameter groups; pass parameters");
  for (ParamGroup& g : groups) append_group(std::move(g));
}

std::vector<ParamGroup> Optimizer::single_group(std::vector<Tensor> params) {
  std::vector<ParamGroup> groups(1);
  groups.front().params = std::move(params);
  return groups;
}

void Optimizer::append_group(ParamGroup group) {
  KILN_CHECK(!group.params.empty(), ValueError,
             "optimizer: parameter group {} is empty; pass at least one parameter", groups_.size());
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    KILN_CHECK(p.defined() && p.is_leaf(), ValueError,
               "optimizer: can't optimize a non-leaf tensor (group {}); pass parameters, not "
               "results computed from them",
               groups_.size());
    KILN_CHECK(p.is_floating_point(), DTypeError,
               "optimizer: parameter {} of group {} has dtype {}; only floating-point tensors "
               "can be optimized",
               i, groups_.size(), dtype_name(p.dtype()));
    auto same = [&](const Tensor& q) { return q.is_same(p); };
    bool repeated = std::any_of(group.params.begin(), group.params.begin() + i, same);
    for (const ParamGroup& other : groups_)
      repeated = repeated || std::any_of(other.params.begin(), other.params.end(), same);
    KILN_CHECK(!repeated, ValueError,
               "optimizer: some parameters appear more than once (parameter {} of group {}); "
               "pass each parameter once",
               i, groups_.size());
  }
  if (std::isnan(group.lr)) group.lr = default_lr_;
  for (const auto& [name, value] : defaults_) group.options.try_emplace(name, value);
  if (!groups_.empty() && groups_.front().lr_tensor.defined() && !group.lr_tensor.defined()) {
    group.lr_tensor = full({}, group.lr, kFloat64);
    group.lr_agreed = group.lr;
  }
  groups_.push_back(std::move(group));
}

void Optimizer::add_param_group(ParamGroup group) {
  append_group(std::move(group));
  try {
    check_group(groups_.back(), groups_.size() - 1);
  } catch (...) {
    groups_.pop_back();
    throw;
  }
}

void Optimizer::check_group(const ParamGroup& group, size_t index) const {
  KILN_CHECK(group.lr >= 0, ValueError,
             "{}: invalid learning rate {} in parameter group {} (must be >= 0)", name(), group.lr,
             index);
}

void Optimizer::check_groups() const {
  for (size_t g = 0; g < groups_.size(); ++g) check_group(groups_[g], g);
}

void Optimizer::check_option(bool ok, const ParamGroup& group, size_t index,
                             std::string_view option, std::string_view requirement) const {
  KILN_CHECK(ok, ValueError, "{}: invalid {} {} in parameter group {} (must be {})", name(), option,
             group.option(std::string(option)), index, requirement);
}

void Optimizer::zero_grad(bool set_to_none) {
  if (defer_to_effect(name() + ".zero_grad()", [this, set_to_none] { zero_grad(set_to_none); }))
    return;
  for (ParamGroup& g : groups_) {
    for (const Tensor& p : g.params) {
      Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        grad = Tensor();
      } else {
        NoGradGuard no_grad;
        grad = grad.detach();
        grad.zero_();
      }
    }
  }
}

void Optimizer::set_lr(size_t group, double lr) {
  // A rate set while tracing would be baked into the graph; schedulers step as effects instead
  // (Note [Optimizer steps under a trace]).
  KILN_CHECK(current_tracing_hooks() == nullptr, NotImplementedError,
             "{}.set_lr: setting a learning rate inside a compiled function is not supported; "
             "call it (or the scheduler's step()) outside the compiled function",
             name());
  ParamGroup& g = groups_.at(group);
  g.lr = lr;
  g.lr_agreed = lr;
  if (g.lr_tensor.defined()) {
    NoGradGuard no_grad;
    g.lr_tensor.fill_(lr);
  }
}

void Optimizer::use_tensor_lr() {
  for (ParamGroup& g : groups_)
    if (!g.lr_tensor.defined()) {
      g.lr_tensor = full({}, g.lr, kFloat64);
      g.lr_agreed = g.lr;
    }
}

double current_lr(const ParamGroup& group) {
  if (!group.lr_tensor.defined()) return group.lr;
  const double tensor = group.lr_tensor.item<double>();
  if (tensor == group.lr) return tensor;
  return group.lr != group.lr_agreed ? group.lr : tensor;  // the one that was written
}

double Optimizer::step_lr(const ParamGroup& group) const { return current_lr(group); }

std::map<std::string, Tensor>& Optimizer::state(const Tensor& param) {
  return state_[param.impl()];
}

const std::map<std::string, Tensor>* Optimizer::find_state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

StateDict Optimizer::state_dict() const {
  StateDict dict;
  size_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& group = groups_[g];
    std::string indices;
    for (const Tensor& p : group.params) {
      if (!indices.empty()) indices += ",";
      indices += std::to_string(index);
      if (const auto* s = find_state(p)) {
        for (const auto& [name, t] : *s) dict.tensors[fmt::format("state.{}.{}", index, name)] = t;
      }
      ++index;
    }
    const std::string prefix = fmt::format("param_groups.{}.", g);
    dict.values[prefix + "params"] = indices;
    dict.values[prefix + "lr"] = fmt::format("{}", group.lr);
    for (const auto& [name, value] : group.options)
      dict.values[prefix + name] = fmt::format("{}", value);
  }
  return dict;
}

void Optimizer::load_state_dict(const StateDict& dict) {
  // Validate everything first so a bad dict leaves the optimizer unchanged.
  size_t dict_groups = 0;
  while (dict.values.count(fmt::format("param_groups.{}.params", dict_groups))) ++dict_groups;
  KILN_CHECK(dict_groups == groups_.size(), ValueError,
             "{}.load_state_dict: the state has {} parameter groups but this optimizer has {}; "
             "build the optimizer with the same parameter groups as the saved one",
             name(), dict_groups, groups_.size());
  size_t index = 0;
  size_t loaded_entries = 0;
  std::map<const TensorImpl*, std::map<std::string, Tensor>> new_state;
  std::vector<ParamGroup> new_groups = groups_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = fmt::format("param_groups.{}.", g);
    auto params_it = dict.values.find(prefix + "params");
    KILN_CHECK(params_it != dict.values.end(), ValueError,
               "{}.load_state_dict: the state has no parameter group {} (this optimizer has {})",
               name(), g, groups_.size());
    size_t count =
        params_it->second.empty()
            ? 0
            : static_cast<size_t>(
                  std::count(params_it->second.begin(), params_it->second.end(), ',') + 1);
    KILN_CHECK(count == groups_[g].params.size(), ValueError,
               "{}.load_state_dict: parameter group {} has {} parameters in the state but {} "
               "here",
               name(), g, count, groups_[g].params.size());
    for (const auto& [key, text] : dict.values) {
      if (key.rfind(prefix, 0) != 0) continue;
      const std::string option = key.substr(prefix.size());
      if (option == "params") continue;
      double value = 0;
      try {
        value = std::stod(text);
      } catch (const std::exception&) {
        throw ValueError(
            fmt::format("{}.load_state_dict: '{}' is not a number: '{}'", name(), key, text));
      }
      if (option == "lr") {
        new_groups[g].lr = value;
      } else {
        new_groups[g].options[option] = value;
      }
    }
    for (const Tensor& p : groups_[g].params) {
      const std::string state_prefix = fmt::format("state.{}.", index);
      for (auto it = dict.tensors.lower_bound(state_prefix);
           it != dict.tensors.end() && it->first.rfind(state_prefix, 0) == 0; ++it) {
        const std::string entry = it->first.substr(state_prefix.size());
        const Tensor& t = it->second;
        KILN_CHECK(t.dim() == 0 || t.sizes() == p.sizes(), ShapeError,
                   "{}.load_state_dict: state '{}' has shape {} but parameter {} has shape {}",
                   name(), it->first, shape_str(t.sizes()), index, shape_str(p.sizes()));
        new_state[p.impl()][entry] = t.dim() == 0 ? t.clone() : t.to(p.dtype(), /*copy=*/true);
        ++loaded_entries;
      }
      ++index;
    }
  }
  const size_t state_entries = static_cast<size_t>(
      std::count_if(dict.tensors.begin(), dict.tensors.end(),
                    [](const auto& entry) { return entry.first.rfind("state.", 0) == 0; }));
  KILN_CHECK(loaded_entries == state_entries, ValueError,
             "{}.load_state_dict: the state has entries for parameters beyond the {} this "
             "optimizer has",
             name(), index);
  for (size_t g = 0; g < groups_.size(); ++g) {
    new_groups[g].lr_tensor = groups_[g].lr_tensor;
    check_group(new_groups[g], g);
  }
  groups_ = std::move(new_groups);
  state_ = std::move(new_state);
  for (size_t g = 0; g < groups_.size(); ++g) set_lr(g, groups_[g].lr);
}

}  // namespace kiln::optim
