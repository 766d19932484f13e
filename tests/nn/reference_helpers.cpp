#include "tests/nn/reference.h"

#include <cmath>
#include <fstream>

namespace kiln::nn::testing {

namespace {

const Json& reference_file() {
  static const Json file = [] {
    const std::string path = std::string(KILN_TEST_DATA_DIR) + "/nn_reference.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path + "; run tests/data/gen_nn.py");
    return Json::parse(in);
  }();
  return file;
}

}  // namespace

const Json& reference_case(const std::string& name) {
  const Json& cases = reference_file().at("cases");
  auto it = cases.find(name);
  if (it == cases.end()) throw std::runtime_error("no case '" + name + "' in nn_reference.json");
  return *it;
}

Tensor tensor_from_json(const Json& j) {
  const std::vector<int64_t> shape = j.at("shape").get<std::vector<int64_t>>();
  const std::string dtype = j.at("dtype").get<std::string>();
  if (dtype == "float64") {
    std::vector<double> values;
    for (const Json& v : j.at("data")) {
      // JSON has no infinities; the generator writes them as "inf", "-inf" and "nan".
      values.push_back(v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>());
    }
    return from_vector(values, shape);
  }
  if (dtype == "int64") return from_vector(j.at("data").get<std::vector<int64_t>>(), shape);
  if (dtype == "bool") {
    std::vector<int64_t> values;
    for (const Json& v : j.at("data")) values.push_back(v.get<bool>() ? 1 : 0);
    return from_vector(values, shape).to(kBool);
  }
  throw std::runtime_error("unknown dtype " + dtype);
}

StateDict state_from_json(const Json& j) {
  StateDict dict;
  for (const auto& [name, value] : j.items()) dict.tensors.emplace(name, tensor_from_json(value));
  return dict;
}

Tensor input(const Json& c, const std::string& name) {
  return tensor_from_json(c.at("inputs").at(name));
}

Tensor output(const Json& c, const std::string& name) {
  return tensor_from_json(c.at("outputs").at(name));
}

void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                  double tol) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << what;
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(e[i])) {
      EXPECT_EQ(a[i], e[i]) << what << " element " << i;
    } else {
      EXPECT_NEAR(a[i], e[i], tol * (1.0 + std::abs(e[i]))) << what << " element " << i;
    }
  }
}

std::map<std::string, Tensor> case_inputs(const Json& c) {
  std::map<std::string, Tensor> inputs;
  for (const auto& [name, value] : c.at("inputs").items()) {
    Tensor t = tensor_from_json(value);
    if (c.contains("grads") && c.at("grads").contains("input:" + name)) t.requires_grad_();
    inputs.emplace(name, t);
  }
  return inputs;
}

void expect_gradients(const Json& c, Module* m, const Tensor& y,
                      const std::map<std::string, Tensor>& inputs, bool scalar) {
  ASSERT_TRUE(c.contains("grads")) << "the case has no gradients";
  const Json& grads = c.at("grads");
  if (m != nullptr) m->zero_grad();
  for (const auto& [name, t] : inputs)
    if (t.requires_grad()) t.mutable_grad() = Tensor();
  (scalar ? y : (y * y).sum() * 0.5).backward();
  if (m != nullptr) {
    for (const auto& [name, p] : m->named_parameters()) {
      const std::string key = "param:" + name;
      if (grads.contains(key)) {
        ASSERT_TRUE(p.grad().defined()) << "no gradient for " << name;
        expect_close(p.grad(), tensor_from_json(grads.at(key)), "gradient of " + name, 1e-9);
      } else if (p.grad().defined()) {
        EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0) << name << " should get no gradient";
      }
    }
  }
  for (const auto& [key, expected] : grads.items()) {
    if (key.rfind("input:", 0) != 0) continue;
    const Tensor& t = inputs.at(key.substr(6));
    ASSERT_TRUE(t.grad().defined()) << "no gradient for " << key;
    expect_close(t.grad(), tensor_from_json(expected), "gradient of " + key, 1e-9);
  }
}

void load_case_state(Module& m, const Json& c) {
  m.to(kFloat64);
  m.load_state_dict(state_from_json(c.at("state")));
}

}  // namespace kiln::nn::testing
