#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kiln/kiln.h"
#include "tests/io/file_helpers.h"

using namespace kiln;
using namespace kiln::data;
using namespace kiln::testing;

namespace {

const std::string kRoot(FashionMNIST::kDefaultRoot);

bool dataset_installed() { return std::filesystem::exists(kRoot + "/train-images-idx3-ubyte.gz"); }

// Facts computed from the same files with gzip + NumPy by
// tests/data/gen_fashion_mnist_reference.py.
const nlohmann::json& reference() {
  static const nlohmann::json json = [] {
    std::ifstream in(std::string(KILN_TEST_DATA_DIR) + "/fashion_mnist_reference.json");
    return nlohmann::json::parse(in);
  }();
  return json;
}

// A small Fashion-MNIST-like directory: `count` 28x28 images with pixel (i, r, c) = (i + r + c)
// % 256 and labels i % 10, as .gz files or uncompressed.
void write_small_dataset(const std::filesystem::path& dir, uint32_t count, bool compressed) {
  Bytes pixels, labels;
  for (uint32_t i = 0; i < count; ++i) {
    labels.push_back(static_cast<uint8_t>(i % 10));
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) pixels.push_back(static_cast<uint8_t>((i + r + c) % 256));
  }
  const Bytes images_file = idx_file(0x08, {count, 28, 28}, pixels);
  const Bytes labels_file = idx_file(0x08, {count}, labels);
  const std::string suffix = compressed ? ".gz" : "";
  write_file(dir / ("train-images-idx3-ubyte" + suffix),
             compressed ? gzip(images_file) : images_file);
  write_file(dir / ("train-labels-idx1-ubyte" + suffix),
             compressed ? gzip(labels_file) : labels_file);
}

}  // namespace

class RealFashionMNIST : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (dataset_installed()) train_ = new FashionMNIST();  // loaded once for the suite
  }
  static void TearDownTestSuite() {
    delete train_;
    train_ = nullptr;
  }
  void SetUp() override {
    if (!train_) {
      FAIL() << kRoot << " is missing: apt-get install dataset-fashion-mnist "
             << "(scripts/install-deps, which `make test` runs, installs it)";
    }
  }
  static FashionMNIST* train_;
};
FashionMNIST* RealFashionMNIST::train_ = nullptr;

TEST_F(RealFashionMNIST, TrainingSetHasTheReferenceShapesLabelsAndPixels) {
  const nlohmann::json& want = reference()["train"];
  const FashionMNIST& train = *train_;
  const int64_t count = want["count"];
  EXPECT_EQ(train.size(), count);
  EXPECT_EQ(train.images().dtype(), kFloat32);
  EXPECT_EQ(train.images().sizes().vec(), (std::vector<int64_t>{count, 1, 28, 28}));
  EXPECT_EQ(train.labels().dtype(), kInt64);
  EXPECT_EQ(train.labels().sizes().vec(), (std::vector<int64_t>{count}));

  const std::vector<int64_t> labels = train.labels().to_vector<int64_t>();
  const std::vector<int64_t> first(labels.begin(), labels.begin() + 20);
  EXPECT_EQ(first, want["first_labels"].get<std::vector<int64_t>>());
  std::vector<int64_t> class_counts(10);
  for (int64_t label : labels) ++class_counts.at(label);
  EXPECT_EQ(class_counts, want["class_counts"].get<std::vector<int64_t>>());

  EXPECT_EQ(train.images().min().item<float>(), 0.0f);
  EXPECT_EQ(train.images().max().item<float>(), 1.0f);
  for (const auto& [index, sum] : want["pixel_sums"].items()) {
    const double got = train.images()[std::stoll(index)].sum(kFloat64).item<double>() * 255.0;
    // float32 pixels (k / 255 rounded) add up to within 0.01 of the integer sum; a single wrong
    // pixel moves it by at least 1.
    EXPECT_NEAR(got, sum.get<double>(), 0.05) << "image " << index;
  }
  const std::vector<float> row = train.images()[0][0][14].to_vector<float>();
  const std::vector<int> want_row = want["image0_row14"].get<std::vector<int>>();
  for (int c = 0; c < 28; ++c) EXPECT_EQ(row[c], static_cast<float>(want_row[c]) / 255.0f) << c;
  EXPECT_NEAR(train.images().mean(kFloat64).item<double>(), want["mean"].get<double>(), 1e-7);
}

TEST_F(RealFashionMNIST, NormalizationConstantsAreTheTrainingSetStatistics) {
  EXPECT_DOUBLE_EQ(FashionMNIST::kTrainNormalize.mean, reference()["train"]["mean"].get<double>());
  EXPECT_DOUBLE_EQ(FashionMNIST::kTrainNormalize.std, reference()["train"]["std"].get<double>());
  FashionMNIST test(kRoot, /*train=*/false, FashionMNIST::kTrainNormalize);
  const nlohmann::json& want = reference()["test"];
  EXPECT_EQ(test.size(), want["count"].get<int64_t>());
  // The test set normalized with the training statistics: (mean - m) / s and std / s.
  const double m = FashionMNIST::kTrainNormalize.mean, s = FashionMNIST::kTrainNormalize.std;
  EXPECT_NEAR(test.images().mean(kFloat64).item<double>(), (want["mean"].get<double>() - m) / s,
              1e-6);
  EXPECT_NEAR(test.images().to(kFloat64).std({}, /*correction=*/0).item<double>(),
              want["std"].get<double>() / s, 1e-6);
  const std::vector<int64_t> labels = test.labels().to_vector<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(labels.begin(), labels.begin() + 20),
            want["first_labels"].get<std::vector<int64_t>>());
}

// Measures one shuffled epoch at the demo's batch size (printed, not asserted).
TEST_F(RealFashionMNIST, ShuffledEpochVisitsEveryImageOnce) {
  auto train = std::shared_ptr<const FashionMNIST>(train_, [](const FashionMNIST*) {});
  DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 1});
  EXPECT_EQ(loader.size(), 469);
  std::vector<int> seen_per_class(10);
  int64_t images = 0, batches = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto& batch : loader) {
    EXPECT_EQ(batch.data.size(1), 1);
    images += batch.data.size(0);
    ++batches;
    for (int64_t label : batch.target.to_vector<int64_t>()) ++seen_per_class[label];
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(images, 60000);
  EXPECT_EQ(batches, 469);
  EXPECT_EQ(seen_per_class, std::vector<int>(10, 6000));
  std::printf("[ measured ] one shuffled epoch, batch 128: %.1f ms (%.0f images/s)\n",
              seconds * 1e3, images / seconds);
}

// ---- files that are not the real dataset ----

TEST(FashionMNIST, MissingDirectoryNamesThePathAndThePackage) {
  TempDir dir;
  const std::string root = (dir / "absent").string();
  expect_error<IOError>([&] { FashionMNIST dataset(root); },
                        {root, "apt-get install dataset-fashion-mnist"});
}

TEST(FashionMNIST, MissingFileNamesThePathAndThePackage) {
  TempDir dir;
  write_small_dataset(dir.path(), 3, /*compressed=*/true);
  std::filesystem::remove(dir / "train-labels-idx1-ubyte.gz");
  expect_error<IOError>([&] { FashionMNIST dataset(dir.path().string()); },
                        {(dir / "train-labels-idx1-ubyte.gz").string(), "does not exist",
                         "apt-get install dataset-fashion-mnist"});
  expect_error<IOError>([&] { FashionMNIST dataset(dir.path().string(), /*train=*/false); },
                        {(dir / "t10k-images-idx3-ubyte.gz").string()});
}

TEST(FashionMNIST, TruncatedFileNamesThePathAndThePackage) {
  TempDir dir;
  write_small_dataset(dir.path(), 20, /*compressed=*/true);
  const auto images = dir / "train-images-idx3-ubyte.gz";
  Bytes bytes = read_file(images);
  bytes.resize(bytes.size() / 2);
  write_file(images, bytes);
  expect_error<ValueError>([&] { FashionMNIST dataset(dir.path().string()); },
                           {images.string(), "truncated", "dataset-fashion-mnist"});
}

TEST(FashionMNIST, ReadsUncompressedFilesAndScalesPixels) {
  TempDir dir;
  write_small_dataset(dir.path(), 3, /*compressed=*/false);
  FashionMNIST dataset(dir.path().string());
  EXPECT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.images().sizes().vec(), (std::vector<int64_t>{3, 1, 28, 28}));
  EXPECT_EQ(dataset.labels().to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  // Pixel (2, 0, 27, 5) = (2 + 27 + 5) % 256 = 34.
  EXPECT_EQ(dataset.images().index({2, 0, 27, 5}).item<float>(), 34.0f / 255.0f);

  FashionMNIST normalized(dir.path().string(), true, Normalize{0.5, 0.25});
  EXPECT_FLOAT_EQ(normalized.images().index({2, 0, 27, 5}).item<float>(),
                  (34.0f / 255.0f - 0.5f) / 0.25f);
  expect_error<ValueError>(
      [&] {
        FashionMNIST bad(dir.path().string(), true, Normalize{0.5, 0});
      },
      {"std"});
}

TEST(FashionMNIST, FilesOfTheWrongShapeOrLabelsAreValueErrors) {
  TempDir dir;
  write_small_dataset(dir.path(), 3, /*compressed=*/true);
  write_file(dir / "train-labels-idx1-ubyte.gz", gzip(idx_file(0x08, {3}, {1, 12, 3})));
  expect_error<ValueError>([&] { FashionMNIST dataset(dir.path().string()); },
                           {"labels", "up to 12"});
  write_file(dir / "train-labels-idx1-ubyte.gz", gzip(idx_file(0x08, {2}, {1, 2})));
  expect_error<ValueError>([&] { FashionMNIST dataset(dir.path().string()); },
                           {"labels", "uint8 [2] for 3 images"});
  write_file(dir / "train-images-idx3-ubyte.gz", gzip(idx_file(0x08, {2, 27}, Bytes(54))));
  expect_error<ValueError>([&] { FashionMNIST dataset(dir.path().string()); },
                           {"images", "uint8 [2, 27]", "expected uint8 [N, 28, 28]"});
}
