// Every optimizer against PyTorch: parameter trajectories recorded by tests/data/gen_optim.py
// (torch.optim, float64, fixed gradients set by hand) in tests/data/optim_reference.json. Each
// case runs twice: with plain learning rates and with tensor learning rates (Note [Tensor
// learning rate]); cases with "lr_changes" change the rates between steps through set_lr.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "kiln/kiln.h"

namespace kiln::optim {
namespace {

using nlohmann::json;

const json& reference() {
  static const json data = [] {
    const std::string path = std::string(KILN_TEST_DATA_DIR) + "/optim_reference.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing " + path + "; run tests/data/gen_optim.py");
    return json::parse(in);
  }();
  return data;
}

double number(const json& value) {
  return value.is_boolean() ? (value.get<bool>() ? 1.0 : 0.0) : value.get<double>();
}

// Overwrites `field` with options[key] when the case sets it.
template <typename T>
void read(const json& options, const char* key, T& field) {
  if (!options.contains(key)) return;
  if constexpr (std::is_same_v<T, bool>) {
    field = number(options[key]) != 0;
  } else {
    field = number(options[key]);
  }
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& type, const json& o,
                                          std::vector<ParamGroup> groups) {
  if (type == "SGD") {
    SGDOptions s;
    read(o, "lr", s.lr), read(o, "momentum", s.momentum), read(o, "dampening", s.dampening);
    read(o, "weight_decay", s.weight_decay), read(o, "nesterov", s.nesterov);
    read(o, "maximize", s.maximize);
    return std::make_unique<SGD>(std::move(groups), s);
  }
  if (type == "Adam") {
    AdamOptions s;
    read(o, "lr", s.lr), read(o, "beta1", s.betas.first), read(o, "beta2", s.betas.second);
    read(o, "eps", s.eps), read(o, "weight_decay", s.weight_decay), read(o, "amsgrad", s.amsgrad);
    read(o, "maximize", s.maximize);
    return std::make_unique<Adam>(std::move(groups), s);
  }
  if (type == "AdamW") {
    AdamWOptions s;
    read(o, "lr", s.lr), read(o, "beta1", s.betas.first), read(o, "beta2", s.betas.second);
    read(o, "eps", s.eps), read(o, "weight_decay", s.weight_decay), read(o, "amsgrad", s.amsgrad);
    read(o, "maximize", s.maximize);
    return std::make_unique<AdamW>(std::move(groups), s);
  }
  if (type == "RMSprop") {
    RMSpropOptions s;
    read(o, "lr", s.lr), read(o, "alpha", s.alpha), read(o, "eps", s.eps);
    read(o, "weight_decay", s.weight_decay), read(o, "momentum", s.momentum);
    read(o, "centered", s.centered), read(o, "maximize", s.maximize);
    return std::make_unique<RMSprop>(std::move(groups), s);
  }
  if (type == "Adagrad") {
    AdagradOptions s;
    read(o, "lr", s.lr), read(o, "lr_decay", s.lr_decay), read(o, "eps", s.eps);
    read(o, "weight_decay", s.weight_decay);
    read(o, "initial_accumulator_value", s.initial_accumulator_value);
    read(o, "maximize", s.maximize);
    return std::make_unique<Adagrad>(std::move(groups), s);
  }
  throw std::runtime_error("unknown optimizer " + type);
}

Tensor from_json(const json& values, const json& shape) {
  return from_vector(values.get<std::vector<double>>(), shape.get<std::vector<int64_t>>());
}

// The case's groups: one with every parameter, or the listed ones with their own lr/options.
std::vector<ParamGroup> make_groups(const json& c, const std::vector<Tensor>& params) {
  if (!c.contains("groups")) return {ParamGroup{.params = params}};
  std::vector<ParamGroup> groups;
  for (const json& g : c["groups"]) {
    ParamGroup group;
    for (const auto& [key, value] : g.items()) {
      if (key == "params") {
        for (const json& i : value) group.params.push_back(params.at(i.get<size_t>()));
      } else if (key == "lr") {
        group.lr = number(value);
      } else {
        group.options[key] = number(value);
      }
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

struct ReferenceCase {
  size_t index;
  bool tensor_lr;
};

void PrintTo(const ReferenceCase& c, std::ostream* os) {
  *os << reference()["cases"][c.index]["name"].get<std::string>()
      << (c.tensor_lr ? " with a tensor lr" : "");
}

class OptimizerReference : public ::testing::TestWithParam<ReferenceCase> {};

TEST_P(OptimizerReference, MatchesTorchOptimTrajectory) {
  const json& data = reference();
  const json& c = data["cases"][GetParam().index];
  const json& shapes = data["shapes"];
  std::vector<Tensor> params;
  for (size_t i = 0; i < shapes.size(); ++i)
    params.push_back(from_json(data["initial"][i], shapes[i]).requires_grad_());
  std::unique_ptr<Optimizer> opt =
      make_optimizer(c["optimizer"], c["options"], make_groups(c, params));
  if (GetParam().tensor_lr) opt->use_tensor_lr();

  const json& steps = c["steps"];
  for (size_t step = 0; step < steps.size(); ++step) {
    const std::string key = std::to_string(step);
    if (c.contains("lr_changes") && c["lr_changes"].contains(key)) {
      const json& lrs = c["lr_changes"][key];
      for (size_t g = 0; g < lrs.size(); ++g) opt->set_lr(g, lrs[g].get<double>());
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const json& grad = data["grads"][step][i];
      params[i].mutable_grad() = grad.is_null() ? Tensor() : from_json(grad, shapes[i]);
    }
    opt->step();
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<double> got = params[i].to_vector<double>();
      std::vector<double> expected = steps[step][i].get<std::vector<double>>();
      ASSERT_EQ(got.size(), expected.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_NEAR(got[k], expected[k], 1e-10 * std::abs(expected[k]) + 1e-15)
            << "step " << step << ", parameter " << i << ", element " << k;
      }
    }
  }
}

std::vector<ReferenceCase> all_cases() {
  std::vector<ReferenceCase> cases;
  for (size_t i = 0; i < reference()["cases"].size(); ++i) {
    cases.push_back({i, false});
    cases.push_back({i, true});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    TorchOptim, OptimizerReference, ::testing::ValuesIn(all_cases()),
    [](const ::testing::TestParamInfo<ReferenceCase>& info) {
      return reference()["cases"][info.param.index]["name"].get<std::string>() +
             (info.param.tensor_lr ? "_tensor_lr" : "");
    });

TEST(OptimizerReferenceData, CoversEveryOptimizerWithGroupsAndLrChanges) {
  std::map<std::string, int> cases, grouped, changed;
  for (const json& c : reference()["cases"]) {
    const std::string type = c["optimizer"];
    ++cases[type];
    if (c.contains("groups") && c["groups"].size() > 1) ++grouped[type];
    if (c.contains("lr_changes")) ++changed[type];
  }
  for (const char* type : {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad"}) {
    EXPECT_GE(cases[type], 4) << type;
    EXPECT_GE(grouped[type], 1) << type;
    EXPECT_GE(changed[type], 1) << type;
  }
}

}  // namespace
}  // namespace kiln::optim
