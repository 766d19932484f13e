#include "runtime_test_helpers.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace kiln::runtime::testing {

namespace {

// A child process started by a test (CodeCache.TwoProcessesCompileTheSameSourceAtOnce) inherits
// its parent's cache directory and must not create (or delete) one of its own.
constexpr const char* kChildVariable = "KILN_RUNTIME_TEST_CHILD";

std::filesystem::path& root() {
  static std::filesystem::path path;
  return path;
}

class TemporaryCacheRoot : public ::testing::Environment {
 public:
  void SetUp() override {
    if (std::getenv(kChildVariable) != nullptr) return;
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-runtime-test-XXXXXX");
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root() = pattern;
    ::setenv("KILN_CACHE_DIR", root().c_str(), 1);
  }
  void TearDown() override {
    if (root().empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(root(), ignored);
  }
};

[[maybe_unused]] ::testing::Environment* const environment =
    ::testing::AddGlobalTestEnvironment(new TemporaryCacheRoot);

}  // namespace

std::filesystem::path test_cache_root() { return root(); }

ScopedCacheDir::ScopedCacheDir() {
  static std::atomic<int> counter{0};
  path_ = root() / ("scoped-" + std::to_string(counter.fetch_add(1)));
  std::filesystem::create_directories(path_);
  const char* previous = std::getenv("KILN_CACHE_DIR");
  previous_ = previous == nullptr ? "" : previous;
  ::setenv("KILN_CACHE_DIR", path_.c_str(), 1);
}

ScopedCacheDir::~ScopedCacheDir() { ::setenv("KILN_CACHE_DIR", previous_.c_str(), 1); }

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
  if (const char* previous = std::getenv(name)) previous_ = previous;
  ::setenv(name, value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (previous_)
    ::setenv(name_, previous_->c_str(), 1);
  else
    ::unsetenv(name_);
}

}  // namespace kiln::runtime::testing
