// Every op in the table, called with each of its tensor arguments undefined (a default-constructed
// Tensor), raises a kiln::Error that names the op, and for a required argument (`Tensor`, or an
// element of a `Tensor[]`) a ValueError that also names the argument; never a crash (the suite
// runs under ASan). An optional argument (`Tensor?`) may be left undefined: the call may succeed.
// See Note [An undefined Tensor] in include/kiln/tensor.h.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

// The schema's argument types and names, in order (as the dispatcher reads them).
std::vector<std::pair<std::string, std::string>> schema_arguments(const std::string& schema) {
  std::vector<std::pair<std::string, std::string>> out;
  const size_t open = schema.find('('), close = schema.rfind(") ->");
  size_t start = open + 1;
  while (start < close) {
    size_t end = std::min(schema.find(',', start), close);
    std::string arg = schema.substr(start, end - start);
    arg.erase(0, arg.find_first_not_of(' '));
    if (!arg.empty() && arg != "*") {
      const size_t space = arg.find(' ');
      std::string name = arg.substr(space + 1);
      out.emplace_back(arg.substr(0, space), name.substr(0, name.find('=')));
    }
    start = end + 1;
  }
  return out;
}

bool is_required(const std::string& type) {
  return type.starts_with("Tensor") && !type.ends_with("?") && !type.ends_with("?[]");
}

class UndefinedArgument : public ::testing::TestWithParam<std::string> {};

TEST_P(UndefinedArgument, RaisesAnErrorNamingTheOpAndTheArgument) {
  const std::string& name = GetParam();
  const OpInfo* info = find_op_info(name);
  if (info == nullptr) GTEST_SKIP() << "no OpInfo: " << exemption_reason(name);
  const OpDef& op = OpRegistry::instance().get(op_id(name));
  const std::string op_name = name.substr(0, name.find('.'));
  const auto arguments = schema_arguments(op.schema);
  std::mt19937_64 rng(std::hash<std::string>{}(name));
  ScalarType dtype = kFloat32;
  if (!op.dtypes.contains(dtype))
    for (ScalarType t : kAllScalarTypes)
      if (op.dtypes.contains(t)) {
        dtype = t;
        break;
      }
  const std::vector<SampleInput> samples = info->samples(dtype, rng);
  if (samples.empty()) GTEST_SKIP() << name << " has no sample for " << dtype_name(dtype);
  const Stack& sample = samples.front().args;
  int tried = 0;
  for (size_t i = 0; i < sample.size(); ++i) {
    if (!sample[i].is_tensor() && !sample[i].is_tensor_list()) continue;
    if (sample[i].is_tensor_list() && sample[i].tensor_list().empty()) continue;
    Stack args = copy_args(sample);
    if (args[i].is_tensor()) {
      args[i] = Tensor();
    } else {
      std::vector<Tensor> list = args[i].tensor_list();
      list.back() = Tensor();
      args[i] = list;
    }
    const bool required = i < arguments.size() && is_required(arguments[i].first);
    const std::string argument = i < arguments.size() ? arguments[i].second : "?";
    SCOPED_TRACE(fmt::format("{} with argument {} (`{}`) undefined", name, i, argument));
    ++tried;
    try {
      dispatch::call(op.id, args);
      EXPECT_FALSE(required) << name << " accepted an undefined `" << argument << "`";
    } catch (const ValueError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(op_name), std::string::npos) << message;
      if (required) {
        EXPECT_NE(message.find("`" + argument + "`"), std::string::npos) << message;
      }
    } catch (const Error& e) {
      EXPECT_FALSE(required) << "a required argument gives ValueError, got: " << e.what();
      EXPECT_NE(std::string(e.what()).find(op_name), std::string::npos) << e.what();
    }
  }
  if (tried == 0) GTEST_SKIP() << name << " takes no tensor argument";
}

INSTANTIATE_TEST_SUITE_P(AllOps, UndefinedArgument, ::testing::ValuesIn(all_op_names()),
                         [](const auto& info) { return op_test_name(info.param); });

TEST(UndefinedTensor, AccessorsRaiseInsteadOfCrashing) {
  const Tensor undefined;
  auto expect_value_error = [](auto&& f, std::string_view accessor) {
    try {
      f();
      ADD_FAILURE() << accessor << " on an undefined tensor did not raise";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(accessor), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("undefined"), std::string::npos) << e.what();
    }
  };
  expect_value_error([&] { (void)undefined.sizes(); }, "sizes");
  expect_value_error([&] { (void)undefined.dim(); }, "dim");
  expect_value_error([&] { (void)undefined.dtype(); }, "dtype");
  expect_value_error([&] { (void)undefined.numel(); }, "numel");
  expect_value_error([&] { (void)undefined.strides(); }, "strides");
  expect_value_error([&] { (void)undefined.data_ptr(); }, "data_ptr");
  expect_value_error([&] { (void)undefined.data_ptr<float>(); }, "data_ptr");
  expect_value_error([&] { (void)undefined.is_contiguous(); }, "is_contiguous");
  expect_value_error([&] { (void)undefined.size(0); }, "sym_sizes");
  expect_value_error([&] { (void)ones({2}).is_alias_of(undefined); }, "is_alias_of");
  expect_value_error([&] { undefined.requires_grad_(); }, "undefined");
  EXPECT_FALSE(undefined.requires_grad());
  EXPECT_FALSE(undefined.grad().defined());
  EXPECT_EQ(undefined.str(), "tensor(undefined)");
}

TEST(UndefinedTensor, OpsNameTheOpAndTheArgument) {
  const Tensor x = ones({2, 3});
  try {
    (void)(x + Tensor());
    ADD_FAILURE() << "x + Tensor() did not raise";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("`other`"), std::string::npos) << e.what();
  }
  try {
    (void)cat({x, Tensor()});
    ADD_FAILURE() << "cat with an undefined element did not raise";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("cat"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("element 1"), std::string::npos) << e.what();
  }
}

TEST(UndefinedTensor, AModuleNamesItselfAndItsInput) {
  nn::Linear linear(3, 2);
  for (auto call : {+[](nn::Linear& m) { return m.forward(Tensor()); },
                    +[](nn::Linear& m) { return m(Tensor()); }}) {
    try {
      (void)call(linear);
      ADD_FAILURE() << "Linear on an undefined input did not raise";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("Linear"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("input"), std::string::npos) << e.what();
    }
  }
}

TEST(TensorOptionsRequiresGrad, EveryFactoryHonoursIt) {
  const TensorOptions grad = TensorOptions().requires_grad(true);
  const std::vector<std::pair<std::string, Tensor>> made = {
      {"empty", empty({2}, grad)},
      {"zeros", zeros({2}, grad)},
      {"ones", ones({2}, grad)},
      {"full", full({2}, 3.0, grad)},
      {"arange", arange(0.0, 3.0, 1.0, grad)},
      {"linspace", linspace(0, 1, 5, grad)},
      {"eye", eye(3, std::nullopt, grad)},
      {"rand", rand({2}, grad)},
      {"randn", randn({2}, grad)},
      {"randn float64", randn({2}, grad.dtype(kFloat64))}};
  for (const auto& [what, t] : made) {
    EXPECT_TRUE(t.requires_grad()) << what;
    EXPECT_TRUE(t.is_leaf()) << what;
  }
  const Tensor w = ones({3}, grad);
  (w * 2).sum().backward();
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_FALSE(zeros({2}).requires_grad());
  // As PyTorch: only floating tensors can require gradients.
  EXPECT_THROW(zeros({2}, grad.dtype(kInt64)), DTypeError);
  EXPECT_THROW(randint(0, 5, {2}, TensorOptions(kInt64).requires_grad(true)), DTypeError);
}

}  // namespace
}  // namespace kiln::testing
