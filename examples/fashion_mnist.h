// Training a small CNN on Fashion-MNIST in eager mode: the canonical example of Kiln's training
// API (modules, autograd, optimizer, LR scheduler, data loader, checkpoints). `kiln demo` runs it.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "kiln/kiln.h"

namespace kiln::examples {

// Two conv blocks (3x3 conv, BatchNorm, ReLU, 2x2 max pool) and a linear classifier:
// [N, 1, 28, 28] -> [N, 10] logits.
class FashionCNN : public nn::Module {
 public:
  FashionCNN();
  Tensor forward(const Tensor& images) override;

 private:
  std::shared_ptr<nn::Sequential> features_;
  std::shared_ptr<nn::Linear> classifier_;
};

struct FashionMnistOptions {
  int64_t epochs = 3;
  int64_t batch_size = 128;
  double lr = 0.05;                    // peak learning rate (SGD with Nesterov momentum 0.9)
  std::string scheduler = "onecycle";  // onecycle, cosine, step or none
  uint64_t seed = 0;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string checkpoint = "fashion_mnist.safetensors";  // empty: do not save
  int64_t train_limit = 0;  // use only the first n training images (0: all)
  int64_t test_limit = 0;   // evaluate on the first n test images (0: all)
  bool progress = true;     // a progress bar per epoch
  // Non-empty: each training step (zero_grad, forward, loss, backward, optimizer step) runs
  // through kiln::compile with this backend ("inductor": forward, backward and the optimizer
  // update compiled; "eager": the captured graphs interpreted).
  std::string compile_backend;
  // With compile_backend: after training, time this many eager and compiled steps (0: don't).
  int64_t compare_step_times = 10;
};

struct FashionMnistResult {
  double test_accuracy = 0;     // fraction in [0, 1]
  double final_train_loss = 0;  // mean loss of the last epoch
  double first_train_loss = 0;  // mean loss of the first epoch
  double seconds = 0;           // wall time of the training epochs
  double images_per_second = 0;
  int compiles = 0;  // traces of the compiled training step (with compile_backend)
  double eager_step_ms = 0, compiled_step_ms = 0;  // compare_step_times medians
};

// Trains, evaluates on the test set, saves a checkpoint (model, optimizer and scheduler state);
// progress and results go to `out`.
FashionMnistResult train_fashion_mnist(const FashionMnistOptions& options, std::ostream& out);

}  // namespace kiln::examples
