// A user-defined data set and transform fed through LibTorch's data loader, plus the everyday
// tensor API a C++ program leans on (options, accessors, printing, grad mode, in-place random
// fills, serialization of a tensor).
//
//   custom_dataset
//
// Writes custom_dataset-tensor.pt into the working directory. Prints RESULT ok at the end;
// any failed check throws c10::Error and the program exits 1.
#include <torch/torch.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr size_t kDatasetSize = 50;
constexpr size_t kBatchSize = 8;
constexpr double kNoise = 0.01;

}  // namespace

// Example i is the pair (i, 2i) as a float tensor of shape [2]; its target is i as an int64
// scalar tensor.
class PairDataset : public torch::data::datasets::Dataset<PairDataset> {
 public:
  explicit PairDataset(size_t size) : size_(size) {}

  torch::data::Example<> get(size_t index) override {
    const auto value = static_cast<float>(index);
    torch::Tensor data = torch::tensor({value, 2.0f * value});
    torch::Tensor target = torch::tensor(static_cast<int64_t>(index), torch::kInt64);
    return {data, target};
  }

  torch::optional<size_t> size() const override { return size_; }

 private:
  size_t size_;
};

// Adds uniform noise in [0, amplitude) to each example's data.
struct AddNoise : torch::data::transforms::TensorTransform<torch::Tensor> {
  explicit AddNoise(double amplitude) : amplitude_(amplitude) {}

  torch::Tensor operator()(torch::Tensor input) override {
    return input + torch::empty_like(input).uniform_(0.0, amplitude_);
  }

 private:
  double amplitude_;
};

template <typename T>
std::string to_string(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void check_data_loader() {
  auto dataset =
      PairDataset(kDatasetSize).map(AddNoise(kNoise)).map(torch::data::transforms::Stack<>());
  TORCH_CHECK(dataset.size().has_value() && *dataset.size() == kDatasetSize,
              "mapped dataset lost its size");
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(kBatchSize).workers(2));

  std::vector<int64_t> first_epoch_order;
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int> seen(kDatasetSize, 0);
    std::vector<int64_t> order;
    size_t batches = 0;
    for (torch::data::Example<>& batch : *loader) {
      ++batches;
      const int64_t n = batch.data.size(0);
      if (batches == 1) {
        std::cout << "batch data sizes " << batch.data.sizes() << " dtype " << batch.data.dtype()
                  << " device " << batch.data.device() << "; target sizes " << batch.target.sizes()
                  << " dtype " << batch.target.dtype() << std::endl;
      }
      AT_ASSERT(batch.data.dim() == 2);
      TORCH_CHECK(batch.data.size(1) == 2, "data width ", batch.data.size(1));
      TORCH_CHECK(batch.target.dim() == 1 && batch.target.size(0) == n, "target shape ",
                  batch.target.sizes());
      TORCH_CHECK(n == static_cast<int64_t>(kBatchSize) ||
                      (n == static_cast<int64_t>(kDatasetSize % kBatchSize) &&
                       batches == kDatasetSize / kBatchSize + 1),
                  "unexpected batch size ", n, " in batch ", batches);
      TORCH_CHECK(batch.data.dtype() == torch::kFloat32, "data dtype ", batch.data.dtype());
      TORCH_CHECK(batch.target.dtype() == torch::kInt64, "target dtype ", batch.target.dtype());

      auto data = batch.data.accessor<float, 2>();
      auto target = batch.target.accessor<int64_t, 1>();
      for (int64_t row = 0; row < n; ++row) {
        const int64_t index = target[row];
        TORCH_CHECK(index >= 0 && index < static_cast<int64_t>(kDatasetSize), "bad index ", index);
        ++seen[static_cast<size_t>(index)];
        order.push_back(index);
        const double d0 = data[row][0] - static_cast<double>(index);
        const double d1 = data[row][1] - 2.0 * static_cast<double>(index);
        TORCH_CHECK(d0 >= 0 && d0 < kNoise + 1e-5 && d1 >= 0 && d1 < kNoise + 1e-5, "example ",
                    index, " has data (", data[row][0], ", ", data[row][1], ")");
      }
    }
    TORCH_CHECK(batches == (kDatasetSize + kBatchSize - 1) / kBatchSize, "got ", batches,
                " batches");
    for (size_t i = 0; i < kDatasetSize; ++i) {
      TORCH_CHECK(seen[i] == 1, "example ", i, " seen ", seen[i], " times in epoch ", epoch);
    }
    bool sequential = true;
    for (size_t i = 0; i < order.size(); ++i) {
      sequential = sequential && order[i] == static_cast<int64_t>(i);
    }
    TORCH_CHECK(!sequential, "RandomSampler gave the examples in order");
    if (epoch == 0) {
      first_epoch_order = order;
    } else {
      TORCH_CHECK(order != first_epoch_order, "both epochs gave the same order");
    }
  }
  std::cout << "data loader: ok" << std::endl;
}

void check_tensors() {
  // Options: dtype and requires_grad on the factories.
  auto options = torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true);
  torch::Tensor ones = torch::ones({2, 3}, options);
  torch::Tensor zeros = torch::zeros({2, 3}, options);
  torch::Tensor randn = torch::randn({2, 3}, options);
  for (const torch::Tensor& t : {ones, zeros, randn}) {
    TORCH_CHECK(t.requires_grad(), "factory ignored requires_grad(true)");
    TORCH_CHECK(t.dtype() == torch::kFloat32, "factory ignored dtype");
    TORCH_CHECK(t.is_leaf(), "factory tensor is not a leaf");
  }
  TORCH_CHECK(!torch::ones({2, 3}).requires_grad(), "requires_grad defaults to true");

  torch::Tensor ints = torch::zeros({2, 3}, torch::kInt64);
  TORCH_CHECK(ints.dtype() == torch::kInt64 && ints.scalar_type() == torch::kLong,
              "zeros(kInt64) has dtype ", ints.dtype());
  TORCH_CHECK(ints.sum().item<int64_t>() == 0, "zeros are not zero");

  // Printing sizes, dtype and device.
  std::cout << "sizes " << ones.sizes() << " dtype " << ones.dtype() << " device " << ones.device()
            << std::endl;
  TORCH_CHECK(to_string(ones.sizes()) == "[2, 3]", "sizes print as ", ones.sizes());
  TORCH_CHECK(to_string(ones.dtype()) == "float", "float32 prints as ", ones.dtype());
  TORCH_CHECK(to_string(ints.dtype()) == "long int", "int64 prints as ", ints.dtype());
  TORCH_CHECK(to_string(ones.device()) == "cpu", "device prints as ", ones.device());
  std::cout << ints << std::endl;

  // Accessors read and write in place.
  torch::Tensor grid = torch::arange(6, torch::kFloat32).view({2, 3});
  auto acc = grid.accessor<float, 2>();
  TORCH_CHECK(acc.size(0) == 2 && acc.size(1) == 3, "accessor sizes");
  float total = 0;
  for (int64_t i = 0; i < acc.size(0); ++i) {
    for (int64_t j = 0; j < acc.size(1); ++j) {
      total += acc[i][j];
    }
  }
  TORCH_CHECK(total == 15.0f, "accessor sum ", total);
  acc[1][2] = 42.0f;
  TORCH_CHECK(grid[1][2].item<float>() == 42.0f, "accessor write not seen");

  // Grad mode.
  {
    torch::AutoGradMode enable_grad(false);
    TORCH_CHECK(!torch::GradMode::is_enabled(), "AutoGradMode(false) left grad mode on");
    torch::Tensor y = ones * 2;
    TORCH_CHECK(!y.requires_grad(), "op under AutoGradMode(false) requires grad");
  }
  TORCH_CHECK(torch::GradMode::is_enabled(), "grad mode not restored");
  {
    torch::Tensor y = (ones * 2 + zeros).sum();
    TORCH_CHECK(y.requires_grad(), "op on requires_grad inputs does not require grad");
    y.backward();
    TORCH_CHECK(torch::allclose(ones.grad(), torch::full({2, 3}, 2.0)), "wrong gradient");
  }

  // In-place random fills.
  torch::manual_seed(0);
  torch::Tensor u = torch::empty({10000}).uniform_(-2.0, 3.0);
  TORCH_CHECK(u.min().item<float>() >= -2.0f && u.max().item<float>() <= 3.0f,
              "uniform_ out of range");
  TORCH_CHECK(std::abs(u.mean().item<float>() - 0.5f) < 0.1f, "uniform_ mean ",
              u.mean().item<float>());
  torch::Tensor g = torch::empty({10000}).normal_(1.0, 2.0);
  TORCH_CHECK(std::abs(g.mean().item<float>() - 1.0f) < 0.1f, "normal_ mean ",
              g.mean().item<float>());
  TORCH_CHECK(std::abs(g.std().item<float>() - 2.0f) < 0.1f, "normal_ std ", g.std().item<float>());

  // Serialization of a plain tensor.
  torch::Tensor saved = torch::randn({3, 4});
  torch::save(saved, "custom_dataset-tensor.pt");
  torch::Tensor loaded;
  torch::load(loaded, "custom_dataset-tensor.pt");
  TORCH_CHECK(loaded.sizes() == saved.sizes() && loaded.dtype() == saved.dtype(),
              "loaded tensor has sizes ", loaded.sizes());
  TORCH_CHECK(torch::equal(saved, loaded), "loaded tensor differs");
  std::cout << "tensors: ok" << std::endl;
}

int main() {
  try {
    torch::manual_seed(1);
    check_data_loader();
    check_tensors();
  } catch (const c10::Error& e) {
    std::cerr << "custom_dataset: " << e.what() << std::endl;
    return 1;
  }
  std::cout << "RESULT ok" << std::endl;
  return 0;
}
