// A LibTorch program in the shape of pytorch/examples cpp/mnist: a small CNN trained with SGD on
// an MNIST-format data set (here Fashion-MNIST), then evaluated on the test split.
//
//   mnist DATA_ROOT [EPOCHS] [MAX_TRAIN_BATCHES]
//
// DATA_ROOT must hold the four IDX files uncompressed, named as torch::data::datasets::MNIST
// expects: train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte. Debian's dataset-fashion-mnist ships them gzipped in
// /usr/share/datasets/fashion-mnist, so a test harness first runs
// `tests/libtorch/prepare-fashion-mnist BUILD_DIR/fashion-mnist` (CMakeLists.txt does this).
//
// EPOCHS defaults to 1. MAX_TRAIN_BATCHES (default 0 = every batch) stops each training epoch
// after that many batches; the test pass always covers all 10000 test images.
//
// The last line printed is machine readable:
//   RESULT test_accuracy=<float> test_loss=<float> epoch_seconds=<float>
// test_accuracy is a fraction in [0, 1], test_loss the mean negative log likelihood over the test
// set after the last epoch, epoch_seconds the mean wall time of one training epoch (training
// loop only, without the test pass).
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr int64_t kTrainBatchSize = 64;
constexpr int64_t kTestBatchSize = 1000;
constexpr int64_t kLogInterval = 100;

}  // namespace

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    // [N, 1, 28, 28] -> [N, 10, 12, 12] -> [N, 20, 4, 4] -> [N, 320]
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

// The model's forward as train() and test() call it: a function value, so that one line can hand
// it to a compiler (see main).
using Forward = std::function<torch::Tensor(NetImpl&, torch::Tensor)>;

template <typename DataLoader>
double train(size_t epoch, Net& model, const Forward& forward, torch::Device device,
             DataLoader& data_loader, torch::optim::Optimizer& optimizer, size_t dataset_size,
             size_t max_batches) {
  model->train();
  const auto start = std::chrono::steady_clock::now();
  size_t batch_idx = 0;
  size_t seen = 0;
  for (auto& batch : data_loader) {
    if (max_batches != 0 && batch_idx == max_batches) {
      break;
    }
    auto data = batch.data.to(device);
    auto targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = forward(*model, data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    seen += static_cast<size_t>(batch.data.size(0));

    if (batch_idx++ % kLogInterval == 0) {
      std::printf("Train Epoch: %zu [%5zu/%5zu] Loss: %.4f\n", epoch, seen, dataset_size,
                  loss.template item<float>());
      std::fflush(stdout);
    }
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::printf("Train Epoch: %zu done, %zu batches in %.2f s\n", epoch, batch_idx, elapsed.count());
  return elapsed.count();
}

struct TestResult {
  double loss = 0;
  double accuracy = 0;
};

template <typename DataLoader>
TestResult test(Net& model, const Forward& forward, torch::Device device, DataLoader& data_loader,
                size_t dataset_size) {
  torch::NoGradGuard no_grad;
  model->eval();
  double test_loss = 0;
  int64_t correct = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device);
    auto targets = batch.target.to(device);
    auto output = forward(*model, data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum)
                     .template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
  }
  TestResult result;
  result.loss = test_loss / static_cast<double>(dataset_size);
  result.accuracy = static_cast<double>(correct) / static_cast<double>(dataset_size);
  std::printf("Test set: Average loss: %.4f | Accuracy: %.4f (%lld/%zu)\n", result.loss,
              result.accuracy, static_cast<long long>(correct), dataset_size);
  return result;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::cerr << "usage: " << argv[0] << " DATA_ROOT [EPOCHS] [MAX_TRAIN_BATCHES]\n";
    return 2;
  }
  const std::string data_root = argv[1];
  const size_t epochs = argc > 2 ? std::stoul(argv[2]) : 1;
  const size_t max_train_batches = argc > 3 ? std::stoul(argv[3]) : 0;

  try {
    torch::manual_seed(1);

    torch::DeviceType device_type;
    if (torch::cuda::is_available()) {
      std::cout << "CUDA available! Training on GPU." << std::endl;
      device_type = torch::kCUDA;
    } else {
      std::cout << "Training on CPU." << std::endl;
      device_type = torch::kCPU;
    }
    torch::Device device(device_type);
    std::cout << "Threads: " << torch::get_num_threads() << std::endl;

    Net model;
    model->to(device);
    Forward forward = [](NetImpl& net, torch::Tensor x) { return net.forward(x); };
#ifdef KILN_COMPILE
    forward = torch::compile(forward);  // the one line a compiled run adds (Kiln's kiln::compile)
#endif

    auto train_dataset = torch::data::datasets::MNIST(data_root)
                             .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                             .map(torch::data::transforms::Stack<>());
    const size_t train_dataset_size = train_dataset.size().value();
    auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        std::move(train_dataset),
        torch::data::DataLoaderOptions().batch_size(kTrainBatchSize).workers(2));

    auto test_dataset =
        torch::data::datasets::MNIST(data_root, torch::data::datasets::MNIST::Mode::kTest)
            .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
            .map(torch::data::transforms::Stack<>());
    const size_t test_dataset_size = test_dataset.size().value();
    auto test_loader = torch::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

    double total_seconds = 0;
    TestResult result;
    for (size_t epoch = 1; epoch <= epochs; ++epoch) {
      total_seconds += train(epoch, model, forward, device, *train_loader, optimizer,
                             train_dataset_size, max_train_batches);
      result = test(model, forward, device, *test_loader, test_dataset_size);
    }
    const double epoch_seconds = epochs == 0 ? 0.0 : total_seconds / static_cast<double>(epochs);
    std::printf("RESULT test_accuracy=%.4f test_loss=%.4f epoch_seconds=%.3f\n", result.accuracy,
                result.loss, epoch_seconds);
  } catch (const c10::Error& e) {
    std::cerr << "mnist: " << e.what() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "mnist: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
