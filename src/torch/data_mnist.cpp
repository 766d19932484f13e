// torch::data::datasets::MNIST (kiln/torch/data_mnist.h), over Kiln's IDX reader.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/dtype.h"
#include "kiln/io/idx.h"
#include "kiln/io/io_error.h"
#include "kiln/torch/data_mnist.h"

namespace torch::data::datasets {

namespace {

constexpr int64_t kSide = 28;
constexpr std::string_view kWhatToDo =
    "pass as root a directory that holds MNIST's four IDX files, named as LibTorch names them "
    "(train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
    "t10k-labels-idx1-ubyte), uncompressed or gzipped with a .gz suffix; Debian's "
    "dataset-fashion-mnist package installs Fashion-MNIST's in /usr/share/datasets/fashion-mnist";

// root/name, or root/name.gz when only that one is there. Kiln's IDX reader decompresses a .gz
// file itself; its errors keep their kind (IOError: unreadable; ValueError: not an IDX file) and
// gain what to do.
Tensor read_file(const std::filesystem::path& root, const std::string& name) {
  const std::filesystem::path plain = root / name;
  const std::filesystem::path gzipped = root / (name + ".gz");
  std::error_code ignored;
  const bool has_plain = std::filesystem::exists(plain, ignored);
  KILN_CHECK(has_plain || std::filesystem::exists(gzipped, ignored), IOError,
             "MNIST: neither {} nor {} exists; {}", plain.string(), gzipped.string(), kWhatToDo);
  const std::filesystem::path& path = has_plain ? plain : gzipped;
  try {
    return kiln::io::read_idx(path);
  } catch (const kiln::IOError& e) {
    throw kiln::IOError(fmt::format("MNIST: {}; {}", e.what(), kWhatToDo));
  } catch (const kiln::ValueError& e) {
    throw kiln::ValueError(fmt::format("MNIST: {}; {}", e.what(), kWhatToDo));
  }
}

std::string describe(const Tensor& t) {
  return fmt::format("{} [{}]", kiln::dtype_name(t.dtype()), fmt::join(t.sizes(), ", "));
}

}  // namespace

MNIST::MNIST(const std::string& root, Mode mode) : train_(mode == Mode::kTrain) {
  const std::filesystem::path dir(root);
  std::error_code ignored;
  KILN_CHECK(std::filesystem::is_directory(dir, ignored), IOError,
             "MNIST: the directory {} does not exist; {}", root, kWhatToDo);
  const std::string prefix = train_ ? "train" : "t10k";
  const Tensor images = read_file(dir, prefix + "-images-idx3-ubyte");
  const Tensor labels = read_file(dir, prefix + "-labels-idx1-ubyte");
  KILN_CHECK(images.dtype() == kiln::kUInt8 && images.dim() == 3 && images.size(1) == kSide &&
                 images.size(2) == kSide,
             ValueError, "MNIST: the images in {} are {}, expected uint8 [N, 28, 28]; {}", root,
             describe(images), kWhatToDo);
  KILN_CHECK(
      labels.dtype() == kiln::kUInt8 && labels.dim() == 1 && labels.size(0) == images.size(0),
      ValueError, "MNIST: the labels in {} are {} for {} images, expected uint8 [{}]; {}", root,
      describe(labels), images.size(0), images.size(0), kWhatToDo);
  // As LibTorch: pixels scaled to [0, 1] once, here, so get() only takes a view.
  images_ = images.to(kiln::kFloat32).div_(255.0).view({images.size(0), 1, kSide, kSide});
  targets_ = labels.to(kiln::kInt64);
}

Example<> MNIST::get(size_t index) {
  const auto i = static_cast<int64_t>(index);
  return {images_[i], targets_[i]};
}

optional<size_t> MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

bool MNIST::is_train() const noexcept { return train_; }

const Tensor& MNIST::images() const { return images_; }

const Tensor& MNIST::targets() const { return targets_; }

}  // namespace torch::data::datasets
