// Fashion-MNIST (Xiao et al., 2017): 28x28 grayscale images of clothing in 10 classes, 60000 for
// training and 10000 for testing, in the MNIST file format. Debian ships it as the package
// dataset-fashion-mnist (apt-get install dataset-fashion-mnist), in
// /usr/share/datasets/fashion-mnist.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/data/dataset.h"

namespace kiln::data {

// x -> (x - mean) / std, applied after scaling pixels to [0, 1].
struct Normalize {
  double mean;
  double std;
};

class FashionMNIST : public TensorDataset {
 public:
  static constexpr std::string_view kDefaultRoot = "/usr/share/datasets/fashion-mnist";
  // Mean and standard deviation of the training images' pixels scaled to [0, 1], over all 47M
  // pixels (computed with NumPy from the Debian package's files); pass them as Normalize to
  // center the inputs as most Fashion-MNIST training scripts do.
  static constexpr Normalize kTrainNormalize{0.2860405969887955, 0.35302424451492237};
  static constexpr int64_t kNumClasses = 10;
  static constexpr std::array<std::string_view, kNumClasses> kClassNames = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

  // Loads the training set (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz) or the test
  // set (t10k-...) from `root`; an uncompressed file of the same name without ".gz" is used when
  // the .gz one is not there. Images: float32 [N, 1, 28, 28] with pixels scaled to [0, 1], then
  // normalized when `normalize` is given; labels: int64 [N] in [0, 10).
  //
  // A missing directory or file is an IOError, and a truncated or corrupt file a ValueError; both
  // name the path and say how to (re)install the dataset-fashion-mnist package.
  explicit FashionMNIST(const std::string& root = std::string(kDefaultRoot), bool train = true,
                        std::optional<Normalize> normalize = std::nullopt);

  const Tensor& images() const { return data(); }
  const Tensor& labels() const { return targets(); }
};

}  // namespace kiln::data
