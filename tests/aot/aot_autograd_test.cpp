// kiln::compile on graphs whose inputs require grad (src/aot): a compiled forward and backward
// joined by one autograd node (Note [Compiled autograd function]); gradients equal eager's.
#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"
#include "tests/aot/aot_test_options.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::expect_equal;

using testing::error_message;

CompileOptions options(const std::string& partitioner = "min_cut") {
  return testing::aot_options(partitioner);
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

// The check on the benchmark models (small sizes): min-cut saves strictly fewer bytes
// than the default partitioner, and both give eager's gradients.
struct PartitionRun {
  int64_t saved_bytes = -1;
  std::vector<Tensor> grads;
};

template <typename MakeModel, typename Loss>
PartitionRun run_with(const std::string& partitioner, MakeModel make, Loss loss, const Tensor& x,
                      const Tensor& y) {
  PartitionRun run;
  std::shared_ptr<nn::Module> model = make();
  const auto records = artifacts("aot_partition", [&] {
    auto f = compile(loss, options(partitioner));
    f(*model, x, y).backward();
  });
  if (records.size() == 1) {
    const nlohmann::json j = nlohmann::json::parse(*records[0].payload);
    run.saved_bytes = j.at("saved_bytes").get<int64_t>();
  }
  for (const Tensor& p : model->parameters()) run.grads.push_back(p.grad().clone());
  return run;
}

template <typename MakeModel, typename Loss>
void check_partitioners(MakeModel make, Loss loss, const Tensor& x, const Tensor& y) {
  PartitionRun min_cut = run_with("min_cut", make, loss, x, y);
  PartitionRun by_default = run_with("default", make, loss, x, y);
  std::shared_ptr<nn::Module> eager = make();
  loss(*eager, x, y).backward();
  const std::vector<Tensor> params = eager->parameters();
  ASSERT_GT(min_cut.saved_bytes, 0);
  EXPECT_LT(min_cut.saved_bytes, by_default.saved_bytes);
  ASSERT_EQ(min_cut.grads.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    for (const PartitionRun* run : {&min_cut, &by_default}) {
      const auto a = run->grads[i].to_vector<double>(), e = params[i].grad().to_vector<double>();
      for (size_t k = 0; k < a.size(); ++k)
        ASSERT_NEAR(a[k], e[k], 1e-4 + 1e-3 * std::abs(e[k]))
            << "parameter " << i << " [" << k << "]";
    }
  }
}

// Note [Batch norm's running statistics, functionalized]: a training batch norm's backward is
// the closed form, two per-channel sums over (N, H, W) shared by the input's and the parameters'
// gradients, not autograd through the decomposed mean and variance (four).
TEST(AotAutograd, BatchNormBackwardIsTheClosedForm) {
  nn::BatchNorm2d bn(3);
  bn.train();
  const auto records = artifacts("aot_backward_graph", [&] {
    auto f = compile([](nn::Module& m, const Tensor& x) { return m(x).sum(); }, options());
    f(bn, randn({4, 3, 5, 5}).requires_grad_()).backward();
  });
  ASSERT_EQ(records.size(), 1u);
  const std::string& text = *records[0].payload;
  int channel_sums = 0;
  for (size_t at = text.find("[0, 2, 3]"); at != std::string::npos;
       at = text.find("[0, 2, 3]", at + 1))
    ++channel_sums;
  EXPECT_EQ(channel_sums, 2) << text;
}

TEST(AotAutograd, MinCutSavesLessOnTheBenchmarkModelsWithEagersGradients) {
  {
    SCOPED_TRACE("cnn");
    auto make = [] {
      manual_seed(0);
      return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
          std::make_shared<nn::Conv2d>(1, 4, 3, nn::ConvOptions<2>{.padding = int64_t{1}}),
          std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
          std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
          std::make_shared<nn::Linear>(4 * 4 * 4, 10)});
    };
    auto loss = [](nn::Module& m, const Tensor& x, const Tensor& y) {
      return nn::functional::cross_entropy(m(x), y);
    };
    check_partitioners(make, loss, randn({6, 1, 8, 8}), randint(0, 10, {6}));
  }
  {
    SCOPED_TRACE("transformer");
    auto make = [] {
      manual_seed(0);
      nn::TransformerEncoderLayerOptions o{
          .dim_feedforward = 64, .dropout = 0.0, .batch_first = true};
      return std::make_shared<nn::TransformerEncoderLayer>(32, 4, o);
    };
    auto loss = [](nn::Module& m, const Tensor& x, const Tensor& y) {
      return nn::functional::mse_loss(m(x), y);
    };
    check_partitioners(make, loss, randn({2, 8, 32}), randn({2, 8, 32}));
  }
}

// Runs a loss function compiled (`f`) and eagerly on `model`; the losses and the parameters'
// gradients must be equal. Returns the compiled loss.
template <typename Compiled, typename LossFn>
Tensor loss_and_grads_match_eager(Compiled& f, const LossFn& loss_fn, nn::Module& model,
                                  const Tensor& x, const Tensor& target) {
  model.zero_grad();
  Tensor loss = f(model, x, target);
  loss.backward();
  std::vector<Tensor> compiled;
  for (const Tensor& p : model.parameters()) compiled.push_back(p.grad().clone());
  model.zero_grad();
  Tensor eager_loss = loss_fn(model, x, target);
  eager_loss.backward();
  expect_equal(loss.detach(), eager_loss.detach());
  const std::vector<Tensor> params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) expect_equal(compiled[i], params[i].grad());
  return loss;
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
    loss_and_grads_match_eager(f, loss_fn, eager_model, x, target);
  }
  EXPECT_EQ(f.stats().compiles, 1);  // the second step is a cache hit
}

// Note [AOT autograd with symbolic sizes]: with every dim symbolic, one compile serves every
// batch size: the forward and the backward are both compiled (no fallback to the eager engine in
// the trace), the gradients equal eager's, and the saved bytes are counted at the first call's
// sizes.
TEST(AotAutograd, SymbolicBatchSizesCompileTheBackwardOnce) {
  nn::Sequential model({std::make_shared<nn::Linear>(20, 16), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(16, 5)});
  auto loss_fn = [](nn::Module& m, const Tensor& x, const Tensor& target) {
    return nn::functional::cross_entropy(m(x).tanh() * 3, target);
  };
  CompileOptions o = options();
  o.dynamic = true;
  auto f = compile(loss_fn, o);
  int fallbacks = 0;
  const auto partitions = artifacts("aot_partition", [&] {
    for (int64_t batch : {8, 13, 5, 32}) {
      SCOPED_TRACE(batch);
      Tensor x = randn({batch, 20}), target = randint(0, 5, {batch});
      const Tensor loss = loss_and_grads_match_eager(f, loss_fn, model, x, target);
      ASSERT_TRUE(loss.grad_fn() != nullptr);
      if (loss.grad_fn()->name() != "CompiledFunctionBackward") ++fallbacks;
    }
  });
  EXPECT_EQ(fallbacks, 0);
  EXPECT_EQ(f.stats().compiles, 1);
  ASSERT_EQ(partitions.size(), 1u);
  EXPECT_GT(nlohmann::json::parse(*partitions[0].payload)["saved_bytes"].get<int64_t>(), 0);
}

// The same with two outputs of which the backward reaches only one (Note [Absent tangents]):
// the missing tangent is zeros of the output's size at that call.
TEST(AotAutograd, SymbolicSizesWithAnAbsentTangent) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor h = matmul(x, w).sigmoid();
    return std::vector<Tensor>{h * 2, (h * x.sum({1}, true)).exp()};
  };
  CompileOptions o = options();
  o.dynamic = true;
  auto f = compile(fn, o);
  for (int64_t n : {6, 11}) {
    SCOPED_TRACE(n);
    Tensor x = randn({n, 7}).requires_grad_(), w = randn({7, n + 2}).requires_grad_();
    std::vector<Tensor> out = f(x, w);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].grad_fn()->name(), "CompiledFunctionBackward");
    out[1].sum().backward();
    Tensor gx = x.grad().clone(), gw = w.grad().clone();
    x.grad().zero_();
    w.grad().zero_();
    fn(x, w)[1].sum().backward();
    expect_equal(gx, x.grad());
    expect_equal(gw, w.grad());
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// A guard a backward formula adds while the joint graph is traced (layer_norm's backward reads
// its input's sizes as integers) joins the compiled entry's guards: another size recompiles
// instead of reusing a backward made for the first.
TEST(AotAutograd, GuardsFromTheBackwardTraceJoinTheEntry) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    return nn::functional::layer_norm(x * w, {x.size(1)}).tanh().sum();
  };
  CompileOptions o = options();
  o.dynamic = true;
  auto f = compile(fn, o);
  for (int64_t n : {5, 7, 5}) {
    SCOPED_TRACE(n);
    Tensor x = randn({n, 6}).requires_grad_(), w = randn({n, 6}).requires_grad_();
    f(x, w).backward();
    Tensor gx = x.grad().clone(), gw = w.grad().clone();
    x.grad().zero_();
    w.grad().zero_();
    fn(x, w).backward();
    expect_equal(gx, x.grad());
    expect_equal(gw, w.grad());
  }
  EXPECT_EQ(f.stats().compiles, 2);  // 5, then 7; the second 5 is a cache hit
}

// sum's backward only expands the gradient [s0] back to [s0, s1]: no input of the backward has
// s1 as a size, so the graph runs through the eager engine (with eager's gradient) and the trace
// says why.
TEST(AotAutograd, ABackwardNeedingASymbolNoInputCarriesRunsEagerly) {
  auto fn = [](const Tensor& x) { return x.sum({1}) * 2; };
  CompileOptions o = options();
  o.dynamic = true;
  auto f = compile(fn, o);
  const auto fallbacks = artifacts("inductor_fallback", [&] {
    Tensor x = randn({4, 6}).requires_grad_();
    Tensor y = f(x);
    EXPECT_NE(y.grad_fn()->name(), "CompiledFunctionBackward");
    y.sum().backward();
    expect_equal(x.grad(), full({4, 6}, 2.0));
  });
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_NE(fallbacks[0].payload->find("needs the value of s1"), std::string::npos)
      << *fallbacks[0].payload;
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
  // Only the third output gets a gradient: the first's branch is left out (Note [Absent
  // tangents]).
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
