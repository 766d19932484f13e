// Shared by the runtime tests: every test process compiles into a temporary cache directory
// (never the user's ~/.cache/kiln), removed when the process ends.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace kiln::runtime::testing {

// The process's temporary cache root ($KILN_CACHE_DIR while the tests run).
std::filesystem::path test_cache_root();

// Points $KILN_CACHE_DIR at a fresh, empty directory under the root while alive.
class ScopedCacheDir {
 public:
  ScopedCacheDir();
  ~ScopedCacheDir();
  ScopedCacheDir(const ScopedCacheDir&) = delete;
  ScopedCacheDir& operator=(const ScopedCacheDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::string previous_;
};

// Sets an environment variable while alive (restoring or unsetting it after).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

}  // namespace kiln::runtime::testing
