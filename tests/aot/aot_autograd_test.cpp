// kiln::compile on graphs whose inputs require grad (src/aot): a compiled forward and backward
// joined by one autograd node (Note [Compiled autograd function]); gradients equal eager's.
#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::expect_equal;

CompileOptions options(const std::string& partitioner = "min_cut") {
  CompileOptions o;
  o.backend = "inductor";
  o.dynamic = false;
  o.partitioner = partitioner;
  return o;
}

std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Reads the trace that `body` writes: every artifact of that name, as records.
std::vector<trace::Record> artifacts(const std::string& name, const std::function<void()>& body) {
  const auto dir = std::filesystem::temp_directory_path() / "kiln_aot_test_trace";
  std::filesystem::remove_all(dir);
  trace::set_directory_for_testing(dir.string());
  body();
  trace::set_directory_for_testing(std::nullopt);
  std::vector<trace::Record> found;
  for (const std::string& file : trace::trace_files(dir.string()))
    for (trace::Record& r : trace::read_trace(file))
      if (r.kind == "artifact" && r.artifact_name() == name) found.push_back(std::move(r));
  std::filesystem::remove_all(dir);
  return found;
}

TEST(AotAutograd, SinOfCosGradientMatchesEagerWithEitherPartitioner) {
  for (const std::string partitioner : {"min_cut", "default"}) {
    SCOPED_TRACE(partitioner);
    auto fn = [](const Tensor& x) { return x.cos().sin(); };
    auto f = compile(fn, options(partitioner));
    Tensor x = randn({37}).requires_grad_();
    Tensor y = f(x);
    ASSERT_TRUE(y.grad_fn() != nullptr);
    EXPECT_EQ(y.grad_fn()->name(), "CompiledFunctionBackward");
    Tensor g = randn({37});
    y.backward(g);
    Tensor compiled_grad = x.grad().clone();
    x.grad().zero_();
    Tensor ye = fn(x);
    ye.backward(g);
    expect_equal(y.detach(), ye.detach());
    expect_equal(compiled_grad, x.grad());
  }
}

TEST(AotAutograd, MinCutSavesFewerBytesThanDefaultInTheTrace) {
  auto fn = [](const Tensor& x) { return x.cos().sin(); };
  auto saved_bytes = [&](const std::string& partitioner) {
    const auto records = artifacts("aot_partition", [&] {
      auto f = compile(fn, options(partitioner));
      f(randn({1000}).requires_grad_()).sum().backward();
    });
    EXPECT_EQ(records.size(), 1u);
    if (records.empty()) return int64_t{-1};
    const nlohmann::json j = nlohmann::json::parse(*records[0].payload);
    EXPECT_EQ(j["partitioner"], partitioner);
    return j["saved_bytes"].get<int64_t>();
  };
  EXPECT_EQ(saved_bytes("min_cut"), 4000);  // x
  EXPECT_EQ(saved_bytes("default"), 8000);  // x and cos(x)
}

TEST(AotAutograd, MlpParameterGradientsMatchEager) {
  nn::Sequential eager_model({std::make_shared<nn::Linear>(20, 16), std::make_shared<nn::GELU>(),
                              std::make_shared<nn::Linear>(16, 5)});
  auto loss_fn = [](nn::Module& m, const Tensor& x, const Tensor& target) {
    return nn::functional::cross_entropy(m(x), target);
  };
  auto f = compile(loss_fn, options());
  Tensor x = randn({8, 20}), target = randint(0, 5, {8});
  for (int step = 0; step < 2; ++step) {
    eager_model.zero_grad();
    Tensor loss = f(eager_model, x, target);
    loss.backward();
    std::vector<Tensor> compiled;
    for (const Tensor& p : eager_model.parameters()) compiled.push_back(p.grad().clone());
    eager_model.zero_grad();
    Tensor eager_loss = loss_fn(eager_model, x, target);
    eager_loss.backward();
    expect_equal(loss.detach(), eager_loss.detach());
    const std::vector<Tensor> params = eager_model.parameters();
    for (size_t i = 0; i < params.size(); ++i) expect_equal(compiled[i], params[i].grad());
  }
  EXPECT_EQ(f.stats().compiles, 1);  // the second step is a cache hit
}

TEST(AotAutograd, InputsThatDoNotRequireGradGetNoGradient) {
  auto f = compile([](const Tensor& w, const Tensor& x) { return (w * x).exp().sum(); }, options());
  Tensor w = randn({6}).requires_grad_(), x = randn({6});
  f(w, x).backward();
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  expect_equal(w.grad(), (w.detach() * x).exp() * x);
}

TEST(AotAutograd, SeveralOutputsSomeWithoutGradients) {
  auto fn = [](const Tensor& x) {
    Tensor t = x.tanh();
    return std::vector<Tensor>{t * 2, x.argmax(), t.exp()};
  };
  auto f = compile(fn, options());
  Tensor x = randn({3, 4}).requires_grad_();
  std::vector<Tensor> out = f(x);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[1].requires_grad());
  EXPECT_EQ(out[1].dtype(), kInt64);
  // Only the third output gets a gradient: the first's is zeros.
  out[2].sum().backward();
  Tensor compiled = x.grad().clone();
  x.grad().zero_();
  fn(x)[2].sum().backward();
  expect_equal(compiled, x.grad());
}

TEST(AotAutograd, RetainGraphAllowsASecondBackwardAndWithoutItRaises) {
  auto f = compile([](const Tensor& x) { return (x * x).sin().sum(); }, options());
  Tensor x = randn({5}).requires_grad_();
  Tensor y = f(x);
  y.backward(Tensor(), /*retain_graph=*/true);
  Tensor first = x.grad().clone();
  y.backward();
  expect_equal(x.grad(), first * 2);  // accumulated twice
  const std::string msg = error_message([&] { y.backward(); });
  EXPECT_NE(msg.find("saved tensors were freed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("retain_graph=true"), std::string::npos) << msg;
}

TEST(AotAutograd, DoubleBackwardRaisesAClearError) {
  auto f = compile([](const Tensor& x) { return (x * x * x).sum(); }, options());
  Tensor x = randn({4}).requires_grad_();
  Tensor y = f(x);
  const std::string msg =
      error_message([&] { kiln::grad({y}, {x}, {}, true, /*create_graph=*/true); });
  EXPECT_NE(msg.find("double backward"), std::string::npos) << msg;
  EXPECT_NE(msg.find("backend=\"eager\""), std::string::npos) << msg;
}

// Graphs AOT autograd does not take yet run through the eager engine, with the same results.
TEST(AotAutograd, AliasedOutputsAndMutationFallBackToTheEagerEngine) {
  auto view_out = compile(
      [](const Tensor& x) {
        return std::vector<Tensor>{x.view({2, 3}), x.exp()};
      },
      options());
  Tensor x = randn({6}).requires_grad_();
  std::vector<Tensor> out = view_out(x);
  (out[0].sum() + out[1].sum()).backward();
  expect_equal(x.grad(), x.detach().exp() + 1);

  auto mutating = compile(
      [](const Tensor& x) {
        Tensor t = x * 2;
        t.add_(1);
        return t.exp().sum();
      },
      options());
  Tensor z = randn({4}).requires_grad_();
  mutating(z).backward();
  expect_equal(z.grad(), (z.detach() * 2 + 1).exp() * 2);
}

TEST(AotAutograd, UnknownPartitionerIsRejectedAtCompile) {
  const std::string msg =
      error_message([] { compile([](const Tensor& x) { return x; }, options("greedy")); });
  EXPECT_NE(msg.find("unknown partitioner 'greedy'"), std::string::npos) << msg;
}

TEST(AotAutograd, NoGradCallsRunTheForwardOnly) {
  auto f = compile([](const Tensor& x) { return x.sigmoid() * 3; }, options());
  Tensor x = randn({9}).requires_grad_();
  Tensor y = f(x);
  EXPECT_TRUE(y.requires_grad());
  NoGradGuard no_grad;
  Tensor z = f(x);
  EXPECT_FALSE(z.requires_grad());
  expect_equal(z, x.detach().sigmoid() * 3);
}

}  // namespace
}  // namespace kiln
