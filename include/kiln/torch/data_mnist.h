// torch::data::datasets::MNIST: LibTorch's reader of the MNIST files, which also reads
// Fashion-MNIST (the same format and file names). See Note [torch::data] in kiln/torch/data.h.
//
//   auto train = torch::data::datasets::MNIST("/path/to/mnist");            // 60000 examples
//   auto test = torch::data::datasets::MNIST(root, MNIST::Mode::kTest);     // 10000
#pragma once

#include <cstddef>
#include <string>

#include "kiln/torch/data_datasets.h"
#include "kiln/torch/data_example.h"
#include "kiln/torch/types.h"

namespace torch::data::datasets {

class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };

  // Reads root/train-images-idx3-ubyte and root/train-labels-idx1-ubyte (kTrain) or the t10k-
  // files (kTest), as LibTorch names them; a file may also be gzipped, named with a .gz suffix
  // (as Debian's dataset-fashion-mnist installs them). Raises kiln::IOError naming the file when
  // one is missing or unreadable, and kiln::ValueError when one is not an MNIST file.
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  // Image `index` as float32 [1, 28, 28] with pixels in [0, 1] (a view of images()), and its
  // label as an int64 0-dim tensor.
  Example<> get(size_t index) override;
  optional<size_t> size() const override;
  bool is_train() const noexcept;
  // float32 [N, 1, 28, 28] in [0, 1].
  const Tensor& images() const;
  // int64 [N].
  const Tensor& targets() const;

 private:
  Tensor images_, targets_;
  bool train_;
};

}  // namespace torch::data::datasets
