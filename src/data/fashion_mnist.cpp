#include "kiln/data/fashion_mnist.h"

#include <filesystem>

#include <fmt/ranges.h>

#include "kiln/io/idx.h"

namespace kiln::data {

namespace {

constexpr std::string_view kInstallHint =
    "install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist), "
    "which puts the files in /usr/share/datasets/fashion-mnist, or pass the directory that holds "
    "them as root";
constexpr std::string_view kReinstallHint =
    "reinstall Debian's dataset-fashion-mnist package (apt-get install --reinstall "
    "dataset-fashion-mnist)";

// Reads root/<name>.gz, or root/<name> when only the uncompressed file is there. Errors keep
// their kind and gain the hint on how to get good files.
Tensor read_dataset_file(const std::filesystem::path& root, const std::string& name) {
  const std::filesystem::path compressed = root / (name + ".gz");
  const std::filesystem::path uncompressed = root / name;
  std::error_code ignored;
  const std::filesystem::path& path = !std::filesystem::exists(compressed, ignored) &&
                                              std::filesystem::exists(uncompressed, ignored)
                                          ? uncompressed
                                          : compressed;
  KILN_CHECK(std::filesystem::exists(path, ignored), IOError, "FashionMNIST: {} does not exist; {}",
             compressed.string(), kInstallHint);
  try {
    return io::read_idx(path);
  } catch (const IOError& e) {
    throw IOError(fmt::format("FashionMNIST: {}; {}", e.what(), kReinstallHint));
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("FashionMNIST: {}; {}", e.what(), kReinstallHint));
  }
}

}  // namespace

FashionMNIST::FashionMNIST(const std::string& root, bool train, std::optional<Normalize> normalize)
    : TensorDataset([&] {
        KILN_CHECK(!normalize || normalize->std > 0, ValueError,
                   "FashionMNIST: Normalize.std must be > 0, got {}", normalize->std);
        const std::filesystem::path dir(root);
        std::error_code ignored;
        KILN_CHECK(std::filesystem::is_directory(dir, ignored), IOError,
                   "FashionMNIST: the directory {} does not exist; {}", root, kInstallHint);
        const std::string prefix = train ? "train" : "t10k";
        Tensor images = read_dataset_file(dir, prefix + "-images-idx3-ubyte");
        Tensor labels = read_dataset_file(dir, prefix + "-labels-idx1-ubyte");
        const auto shape_text = [](const Tensor& t) {
          return fmt::format("{} [{}]", dtype_name(t.dtype()), fmt::join(t.sizes(), ", "));
        };
        KILN_CHECK(images.dtype() == kUInt8 && images.dim() == 3 && images.size(1) == 28 &&
                       images.size(2) == 28,
                   ValueError,
                   "FashionMNIST: the images in {} are {}, expected uint8 [N, 28, 28]; {}", root,
                   shape_text(images), kReinstallHint);
        KILN_CHECK(
            labels.dtype() == kUInt8 && labels.dim() == 1 && labels.size(0) == images.size(0),
            ValueError,
            "FashionMNIST: the labels in {} are {} for {} images, expected uint8 [{}]; {}", root,
            shape_text(labels), images.size(0), images.size(0), kReinstallHint);
        KILN_CHECK(labels.numel() == 0 || labels.max().item<int64_t>() < kNumClasses, ValueError,
                   "FashionMNIST: the labels in {} go up to {}, expected classes 0..{}; {}", root,
                   labels.max().item<int64_t>(), kNumClasses - 1, kReinstallHint);
        const int64_t count = images.size(0);
        Tensor pixels = images.to(kFloat32).div_(255.0);
        if (normalize) pixels.sub_(normalize->mean).div_(normalize->std);
        return TensorDataset(pixels.view({count, 1, 28, 28}), labels.to(kInt64));
      }()) {}

}  // namespace kiln::data
