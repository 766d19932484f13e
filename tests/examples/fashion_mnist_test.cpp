// The Fashion-MNIST example end to end on a slice of the data: it learns, and its checkpoint
// restores the model, optimizer and scheduler state. (The full run is `make demo`.)
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "examples/fashion_mnist.h"

namespace kiln::examples {
namespace {

std::filesystem::path temp_checkpoint() {
  return std::filesystem::temp_directory_path() /
         ("kiln_fmnist_test_" + std::to_string(getpid()) + ".safetensors");
}

TEST(FashionMnistExample, LearnsAndSavesACheckpoint) {
  FashionMnistOptions options;
  options.epochs = 2;
  options.train_limit = 1024;
  options.test_limit = 500;
  options.batch_size = 64;
  options.checkpoint = temp_checkpoint().string();
  std::ostringstream log;
  FashionMnistResult result = train_fashion_mnist(options, log);
  EXPECT_LT(result.final_train_loss, result.first_train_loss) << log.str();
  // Ten classes: chance is 10%; 1024 images and two epochs already give far more.
  EXPECT_GT(result.test_accuracy, 0.55) << log.str();
  EXPECT_NE(log.str().find("epoch 2/2"), std::string::npos);
  EXPECT_NE(log.str().find("test accuracy"), std::string::npos);

  auto parts = io::load_checkpoint(options.checkpoint);
  ASSERT_TRUE(parts.count("model") && parts.count("optimizer") && parts.count("scheduler"));
  FashionCNN restored;
  restored.load_state_dict(parts["model"]);  // strict: every parameter and buffer is there
  FashionCNN fresh;
  optim::SGD optimizer(fresh.parameters(), {.lr = 0.01, .momentum = 0.9});
  optimizer.load_state_dict(parts["optimizer"]);
  EXPECT_FALSE(optimizer.state(fresh.parameters()[0]).empty());  // momentum buffers came back
  EXPECT_EQ(parts["run"].values.at("epochs"), "2");
  std::filesystem::remove(options.checkpoint);
}

// `kiln demo --compile`: the whole training step compiled: forward, loss and backward (AOT
// autograd, BatchNorm's running statistics functionalized) and the optimizer step. Same seed, same
// data order: the same accuracy as eager within noise (the compiled kernels sum in another order,
// so the runs drift apart slowly).
TEST(FashionMnistExample, CompiledTrainingMatchesEagerAccuracy) {
  FashionMnistOptions options;
  options.epochs = 2;
  options.train_limit = 1024;  // 16 full batches: one compile, no tail batch
  options.test_limit = 500;
  options.batch_size = 64;
  options.checkpoint = "";
  options.progress = false;
  options.compare_step_times = 2;
  std::ostringstream eager_log, compiled_log;
  FashionMnistResult eager = train_fashion_mnist(options, eager_log);
  options.compile_backend = "inductor";
  FashionMnistResult compiled = train_fashion_mnist(options, compiled_log);
  // The whole step: one trace with the eager first optimizer step (it creates the momentum
  // buffers), one with the compiled update, and no more although OneCycleLR changes lr and
  // momentum every step.
  EXPECT_EQ(compiled.compiles, 2) << compiled_log.str();
  EXPECT_LT(compiled.final_train_loss, compiled.first_train_loss) << compiled_log.str();
  EXPECT_NEAR(compiled.first_train_loss, eager.first_train_loss, 0.05) << compiled_log.str();
  EXPECT_NEAR(compiled.test_accuracy, eager.test_accuracy, 0.05) << compiled_log.str();
  EXPECT_GT(compiled.eager_step_ms, 0);
  EXPECT_GT(compiled.compiled_step_ms, 0);
  EXPECT_NE(compiled_log.str().find("training step, batch 64: eager"), std::string::npos)
      << compiled_log.str();
}

TEST(FashionMnistExample, BadOptionsAreErrors) {
  FashionMnistOptions options;
  options.scheduler = "sometimes";
  options.checkpoint = "";
  options.train_limit = 128;
  std::ostringstream log;
  EXPECT_THROW(train_fashion_mnist(options, log), ValueError);
  options.scheduler = "none";
  options.data_dir = "/nonexistent/fashion-mnist";
  try {
    train_fashion_mnist(options, log);
    FAIL() << "expected an error for a missing dataset";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::examples
