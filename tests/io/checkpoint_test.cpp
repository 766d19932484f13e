#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "tests/io/file_helpers.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

std::map<std::string, StateDict> training_state() {
  manual_seed(7);
  StateDict model;
  model.tensors["conv1.weight"] = randn({8, 1, 3, 3});
  model.tensors["conv1.bias"] = zeros({8});
  model.tensors["bn.num_batches_tracked"] = scalar_tensor(int64_t{120}, kInt64);
  StateDict optimizer;
  optimizer.tensors["state.0.exp_avg"] = randn({8, 1, 3, 3}).to(kBFloat16);
  optimizer.tensors["state.0.step"] = scalar_tensor(120.0, kFloat32);
  optimizer.values["param_groups"] = R"([{"lr": 0.001, "betas": [0.9, 0.999], "params": [0, 1]}])";
  optimizer.values["type"] = "Adam";
  StateDict scheduler;
  scheduler.values["last_epoch"] = "4";
  scheduler.values["base_lrs"] = "[0.01]";
  return {{"model", model}, {"optimizer", optimizer}, {"scheduler", scheduler}, {"empty", {}}};
}

void expect_same_state(const std::map<std::string, StateDict>& got,
                       const std::map<std::string, StateDict>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [part, state] : want) {
    SCOPED_TRACE(part);
    ASSERT_TRUE(got.count(part));
    const StateDict& loaded = got.at(part);
    EXPECT_EQ(loaded.values, state.values);
    ASSERT_EQ(loaded.tensors.size(), state.tensors.size());
    for (const auto& [name, tensor] : state.tensors) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(loaded.tensors.count(name));
      EXPECT_EQ(loaded.tensors.at(name).dtype(), tensor.dtype());
      EXPECT_EQ(loaded.tensors.at(name).sizes().vec(), tensor.sizes().vec());
      EXPECT_EQ(tensor_bytes(loaded.tensors.at(name)), tensor_bytes(tensor));
    }
  }
}

// Names of the files in `dir` (to see that no temporary file is left behind).
std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST(Checkpoint, RoundTripsModelOptimizerAndSchedulerState) {
  TempDir dir;
  const auto state = training_state();
  io::save_checkpoint(dir / "ckpt.safetensors", state);
  expect_same_state(io::load_checkpoint(dir / "ckpt.safetensors"), state);
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"ckpt.safetensors"}));
}

TEST(Checkpoint, IsAPlainSafetensorsFileWithPrefixedNames) {
  TempDir dir;
  io::save_checkpoint(dir / "ckpt.safetensors", training_state());
  const io::SafetensorsFile file = io::load_safetensors(dir / "ckpt.safetensors");
  EXPECT_TRUE(file.tensors.count("model.conv1.weight"));
  EXPECT_TRUE(file.tensors.count("optimizer.state.0.exp_avg"));
  EXPECT_EQ(file.metadata.at("scheduler.last_epoch"), "4");
  EXPECT_EQ(file.metadata.at("optimizer.type"), "Adam");
  EXPECT_EQ(file.metadata.at("kiln_checkpoint_parts"),
            R"(["empty","model","optimizer","scheduler"])");
}

TEST(Checkpoint, SavingAgainReplacesTheOldCheckpoint) {
  TempDir dir;
  io::save_checkpoint(dir / "ckpt.safetensors", training_state());
  StateDict model;
  model.tensors["w"] = ones({2});
  io::save_checkpoint(dir / "ckpt.safetensors", {{"model", model}});
  expect_same_state(io::load_checkpoint(dir / "ckpt.safetensors"), {{"model", model}});
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"ckpt.safetensors"}));
}

// A write that fails halfway (here: the file size limit, as a full disk would) must leave the
// existing checkpoint byte for byte as it was, and no temporary file behind.
TEST(Checkpoint, WriteFailingHalfwayLeavesTheExistingCheckpointIntact) {
  TempDir dir;
  const auto path = dir / "ckpt.safetensors";
  io::save_checkpoint(path, training_state());
  const Bytes before = read_file(path);

  StateDict big;
  big.tensors["w"] = zeros({1 << 16});  // 256 KiB, past the limit below
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  auto* saved_handler = signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  try {
    io::save_checkpoint(path, {{"model", big}});
    ADD_FAILURE() << "a write past the file size limit succeeded";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unchanged"), std::string::npos) << e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, saved_handler);

  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"ckpt.safetensors"}));
  expect_same_state(io::load_checkpoint(path), training_state());
}

// A rename that fails (the target is a directory) leaves the target and no temporary file.
TEST(Checkpoint, FailedRenameLeavesTheTargetAndNoTemporaryFile) {
  TempDir dir;
  const auto target = dir / "ckpt";
  std::filesystem::create_directory(target);
  write_file(target / "keep", {1, 2, 3});
  expect_error<IOError>([&] { io::save_checkpoint(target, training_state()); },
                        {"cannot replace", target.string()});
  EXPECT_EQ(read_file(target / "keep"), (Bytes{1, 2, 3}));
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"ckpt"}));
}

TEST(Checkpoint, TruncatedCheckpointIsRejected) {
  TempDir dir;
  io::save_checkpoint(dir / "ckpt.safetensors", training_state());
  const Bytes good = read_file(dir / "ckpt.safetensors");
  for (size_t keep : {size_t{0}, size_t{7}, size_t{100}, good.size() / 2, good.size() - 1}) {
    SCOPED_TRACE(keep);
    write_file(dir / "cut.safetensors", Bytes(good.begin(), good.begin() + keep));
    expect_error<ValueError>([&] { io::load_checkpoint(dir / "cut.safetensors"); },
                             {(dir / "cut.safetensors").string()});
  }
  write_file(dir / "cut.safetensors", Bytes(good.begin(), good.end() - 1));
  expect_error<ValueError>([&] { io::load_checkpoint(dir / "cut.safetensors"); }, {"truncated"});
}

TEST(Checkpoint, PlainSafetensorsFileIsNotACheckpoint) {
  TempDir dir;
  io::save_safetensors(dir / "weights.safetensors", {{"w", zeros({2})}});
  expect_error<ValueError>([&] { io::load_checkpoint(dir / "weights.safetensors"); },
                           {"not a Kiln checkpoint", "load_safetensors"});
}

TEST(Checkpoint, EntriesOutsideTheListedPartsAreRejected) {
  TempDir dir;
  io::save_safetensors(dir / "odd.safetensors", {{"model.w", zeros({2})}, {"stray", zeros({1})}},
                       {{"kiln_checkpoint_parts", R"(["model"])"}});
  expect_error<ValueError>([&] { io::load_checkpoint(dir / "odd.safetensors"); },
                           {"'stray'", "none of the parts"});
  for (const std::string& parts :
       std::vector<std::string>{"{}", "[\"model\"", "[[\"model\"]]", std::string(1000000, '[')}) {
    SCOPED_TRACE(parts.substr(0, 20));
    io::save_safetensors(dir / "odd.safetensors", {}, {{"kiln_checkpoint_parts", parts}});
    expect_error<ValueError>([&] { io::load_checkpoint(dir / "odd.safetensors"); },
                             {"JSON list of part names"});
  }
}

TEST(Checkpoint, PartNamesMustBeNonEmptyWithoutDots) {
  TempDir dir;
  for (const char* part : {"", "model.ema"}) {
    SCOPED_TRACE(part);
    expect_error<ValueError>(
        [&] {
          io::save_checkpoint(dir / "ckpt.safetensors", {{part, StateDict{}}});
        },
        {"part name", "'.'"});
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt.safetensors"));
}
