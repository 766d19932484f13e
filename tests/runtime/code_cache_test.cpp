// The compiler driver and the code cache (Note [Code cache] in src/runtime/code_cache.cpp). Each
// compile costs the C++ compiler's start-up (~0.3-1 s): the tests compile about ten sources.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "kiln/error.h"
#include "runtime_test_helpers.h"
#include "src/runtime/code_cache.h"
#include "src/runtime/compiler.h"

extern char** environ;

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using testing::ScopedCacheDir;
using testing::ScopedEnv;

// A header-free source exporting `long <name>()` returning `value`.
std::string constant_source(const std::string& name, long value) {
  return "extern \"C\" long " + name + "() { return " + std::to_string(value) + "; }\n";
}

long call_constant(const KernelLibrary& library, const std::string& name) {
  return reinterpret_cast<long (*)()>(library.symbol(name))();
}

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CodeCache, CompilesLoadsAndReusesALibrary) {
  ScopedCacheDir dir;
  const std::string source = constant_source("answer", 42);
  const CompilerOptions options = default_compiler_options();
  const int64_t compiles = compiles_in_this_process();
  auto library = compile_and_load(source, options);
  EXPECT_EQ(compiles_in_this_process(), compiles + 1);
  EXPECT_EQ(call_constant(*library, "answer"), 42);
  EXPECT_EQ(library->hash(), source_hash(source, options));
  EXPECT_EQ(library->path(), dir.path() / "code" / (library->hash() + ".so"));
  EXPECT_TRUE(is_valid_library_file(library->path()));
  // The generated source is kept next to the library (compiler errors point into it).
  std::ifstream kept(dir.path() / "code" / (library->hash() + ".cpp"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), source);

  // Same source again: the same loaded library, no compile, one handle per path.
  EXPECT_EQ(compile_and_load(source, options), library);
  EXPECT_EQ(load_cached(library->hash()), library);
  EXPECT_EQ(compiles_in_this_process(), compiles + 1);
  // No temporary files are left behind.
  for (const auto& file : files_in(dir.path() / "code"))
    EXPECT_NE(file.filename().string()[0], '.') << "a temporary file was left: " << file;

  try {
    library->symbol("no_such_kernel");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no_such_kernel"));
    EXPECT_THAT(e.what(), HasSubstr(library->path().string()));
  }
}

TEST(CodeCache, CompilerFailureNamesTheGeneratedFileAndQuotesTheCompiler) {
  ScopedCacheDir dir;
  const std::string source = "extern \"C\" long broken() { return undeclared_identifier_xyz; }\n";
  const CompilerOptions options = default_compiler_options();
  const std::string hash = source_hash(source, options);
  try {
    compile_and_load(source, options);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string path = (dir.path() / "code" / (hash + ".cpp")).string();
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("undeclared_identifier_xyz"));  // the compiler's message
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "code" / (hash + ".so")));
  EXPECT_EQ(load_cached(hash), nullptr);
}

TEST(CodeCache, MissingCompilerIsACompileError) {
  ScopedCacheDir dir;
  CompilerOptions options = default_compiler_options();
  options.compiler = "kiln-no-such-compiler";
  try {
    compile_and_load(constant_source("never", 1), options);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_THAT(e.what(), HasSubstr("kiln-no-such-compiler"));
    EXPECT_THAT(e.what(), HasSubstr("KILN_CXX"));
  }
}

TEST(CodeCache, DamagedLibraryIsRebuiltNeverLoaded) {
  ScopedCacheDir dir;
  const std::string source = constant_source("rebuilt", 7);
  const CompilerOptions options = default_compiler_options();
  const std::string hash = source_hash(source, options);
  const std::filesystem::path path = build_library(source, options, hash);  // compiled, not loaded
  ASSERT_TRUE(is_valid_library_file(path));

  // One flipped byte in the middle, in place: dlopen would take such a file (and run whatever
  // the byte now encodes); the cache must not.
  const auto flip_middle_byte = [](const std::filesystem::path& file) {
    const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(file) / 2);
    std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
    char byte = 0;
    stream.seekg(middle);
    stream.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    stream.seekp(middle);
    stream.write(&byte, 1);
  };
  flip_middle_byte(path);
  EXPECT_FALSE(is_valid_library_file(path));
  EXPECT_EQ(load_cached(hash), nullptr);
  const int64_t compiles = compiles_in_this_process();
  auto library = compile_and_load(source, options);
  EXPECT_EQ(compiles_in_this_process(), compiles + 1);  // rebuilt
  EXPECT_EQ(call_constant(*library, "rebuilt"), 7);
  EXPECT_TRUE(is_valid_library_file(path));

  // Truncated (what a crash before the data reached the disk leaves), or absent: not valid.
  const std::filesystem::path copy = dir.path() / "copy.so";
  std::filesystem::copy_file(path, copy);
  std::filesystem::resize_file(copy, std::filesystem::file_size(copy) - 100);
  EXPECT_FALSE(is_valid_library_file(copy));
  std::filesystem::resize_file(copy, 10);
  EXPECT_FALSE(is_valid_library_file(copy));
  EXPECT_FALSE(is_valid_library_file(dir.path() / "absent.so"));
}

TEST(CodeCache, WarmStartLoadsByHash) {
  ScopedCacheDir dir;
  const std::string source = constant_source("warm", 11);
  const CompilerOptions options = default_compiler_options();
  const std::string hash = source_hash(source, options);
  EXPECT_EQ(load_cached(hash), nullptr);
  build_library(source, options, hash);
  const int64_t compiles = compiles_in_this_process();
  auto library = load_cached(hash);
  ASSERT_NE(library, nullptr);
  EXPECT_EQ(call_constant(*library, "warm"), 11);
  EXPECT_EQ(compile_and_load(source, options), library);
  EXPECT_EQ(compiles_in_this_process(), compiles);
  EXPECT_THROW(load_cached("../escape"), ValueError);
}

TEST(CodeCache, CompileAsyncBuildsOnThePoolAndSharesInFlightBuilds) {
  ScopedCacheDir dir;
  const CompilerOptions options = default_compiler_options();
  const std::string a = constant_source("async_a", 1), b = constant_source("async_b", 2);
  auto first = compile_async(a, options);
  auto again = compile_async(a, options);  // same key while in flight or loaded: one build
  auto second = compile_async(b, options);
  auto blocking = compile_and_load(a, options);
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(first.get(), blocking);
  EXPECT_EQ(call_constant(*first.get(), "async_a"), 1);
  EXPECT_EQ(call_constant(*second.get(), "async_b"), 2);

  auto failing = compile_async("this is not C++", options);
  EXPECT_THROW(failing.get(), CompileError);
}

TEST(CodeCache, ClangWorks) {
  // scripts/install-deps installs clang 14: a missing clang++ is a failed install, not a skip.
  ASSERT_EQ(std::system("clang++ --version > /dev/null 2>&1"), 0) << "clang++ is not installed";
  ScopedCacheDir dir;
  CompilerOptions options = default_compiler_options();
  options.compiler = "clang++";
  const std::string source = constant_source("from_clang", 5);
  EXPECT_NE(source_hash(source, options), source_hash(source, default_compiler_options()));
  EXPECT_EQ(call_constant(*compile_and_load(source, options), "from_clang"), 5);
}

TEST(CompilerOptions, EnvironmentAndOptionsChangeTheCommandAndTheKey) {
  const std::string source = constant_source("k", 1);
  {
    ScopedEnv cxx("KILN_CXX", "clang++");
    ScopedEnv flags("KILN_CXXFLAGS", " -DKILN_A=1   -g ");
    const CompilerOptions options = default_compiler_options();
    EXPECT_EQ(options.compiler, "clang++");
    const std::vector<std::string> command = compiler_command(options, "in.cpp", "out.so");
    EXPECT_EQ(command.front(), "clang++");
    EXPECT_NE(std::find(command.begin(), command.end(), "-DKILN_A=1"), command.end());
    EXPECT_NE(std::find(command.begin(), command.end(), "-g"), command.end());
  }
  const CompilerOptions defaults = default_compiler_options();
  EXPECT_EQ(defaults.compiler, "g++");
  const std::vector<std::string> command = compiler_command(defaults, "in.cpp", "out.so");
  for (const char* flag : {"-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-lsleef"})
    EXPECT_NE(std::find(command.begin(), command.end(), flag), command.end()) << flag;
  // Libraries come after the source (the linker resolves left to right).
  EXPECT_GT(std::find(command.begin(), command.end(), "-lsleef"),
            std::find(command.begin(), command.end(), "in.cpp"));

  CompilerOptions scalar = defaults;
  scalar.vectorize = false;
  const std::vector<std::string> scalar_command = compiler_command(scalar, "in.cpp", "out.so");
  EXPECT_EQ(std::find(scalar_command.begin(), scalar_command.end(), "-march=native"),
            scalar_command.end());
  // -shared and -fPIC are added when the flags lack them.
  CompilerOptions bare = defaults;
  bare.flags = {"-O1"};
  const std::vector<std::string> bare_command = compiler_command(bare, "in.cpp", "out.so");
  EXPECT_NE(std::find(bare_command.begin(), bare_command.end(), "-shared"), bare_command.end());

  // The key changes with everything that changes the library.
  const std::string key = source_hash(source, defaults);
  EXPECT_EQ(key, source_hash(source, defaults));
  EXPECT_NE(key, source_hash(source + " ", defaults));
  EXPECT_NE(key, source_hash(source, scalar));
  EXPECT_NE(key, source_hash(source, bare));
  CompilerOptions other_library = defaults;
  other_library.libraries.push_back("m");
  EXPECT_NE(key, source_hash(source, other_library));
}

TEST(CodeCache, CacheDirFollowsTheEnvironment) {
  const std::filesystem::path dir = testing::test_cache_root() / "nested" / "cache";
  ScopedEnv env("KILN_CACHE_DIR", dir.string());
  EXPECT_EQ(cache_dir(), dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
}

// ---- two processes compiling the same source at once ----

constexpr const char* kChildVariable = "KILN_RUNTIME_TEST_CHILD";
constexpr int kChildCompiled = 10, kChildLoaded = 11;

std::string shared_source() { return constant_source("shared_by_processes", 99); }

// The child's side of TwoProcessesCompileTheSameSourceAtOnce: waits for the parent's start
// signal, compiles (or loads) the shared source, and reports which by its exit status.
TEST(CodeCacheChild, CompileSharedSource) {
  const char* go = std::getenv(kChildVariable);
  if (go == nullptr)
    GTEST_SKIP() << "runs only as a child of CodeCache.TwoProcessesCompileTheSameSourceAtOnce";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(go)) {
    if (std::chrono::steady_clock::now() > deadline) std::_Exit(2);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  int status = 3;
  try {
    auto library = compile_and_load(shared_source(), default_compiler_options());
    if (call_constant(*library, "shared_by_processes") == 99)
      status = compiles_in_this_process() == 1 ? kChildCompiled : kChildLoaded;
  } catch (const std::exception& e) {
    fprintf(stderr, "child failed: %s\n", e.what());
  }
  std::_Exit(status);  // the parent reads the status; no gtest summary needed
}

pid_t spawn_child() {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=CodeCacheChild.CompileSharedSource";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  pid_t pid = 0;
  const int error = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

int wait_for(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CodeCache, TwoProcessesCompileTheSameSourceAtOnce) {
  ScopedCacheDir dir;
  const std::filesystem::path go = dir.path() / "go";
  pid_t first = -1, second = -1;
  {
    ScopedEnv child(kChildVariable, go.string());
    first = spawn_child();
    second = spawn_child();
  }
  ASSERT_GT(first, 0);
  ASSERT_GT(second, 0);
  std::ofstream(go).put('1');  // both start together
  std::vector<int> statuses = {wait_for(first), wait_for(second)};
  std::sort(statuses.begin(), statuses.end());
  // Both got a working library; one compiled it, the other waited on the entry's lock and loaded
  // the first one's library.
  EXPECT_EQ(statuses, (std::vector<int>{kChildCompiled, kChildLoaded}));

  const std::string hash = source_hash(shared_source(), default_compiler_options());
  EXPECT_TRUE(is_valid_library_file(dir.path() / "code" / (hash + ".so")));
  EXPECT_EQ(files_in(dir.path() / "code").size(), 3u);  // <hash>.cpp, <hash>.so, <hash>.lock
  for (const auto& file : files_in(dir.path() / "code"))
    EXPECT_NE(file.filename().string()[0], '.') << "a temporary file was left: " << file;
  // This process finds the entry without compiling.
  const int64_t compiles = compiles_in_this_process();
  auto library = load_cached(hash);
  ASSERT_NE(library, nullptr);
  EXPECT_EQ(call_constant(*library, "shared_by_processes"), 99);
  EXPECT_EQ(compiles_in_this_process(), compiles);
}

}  // namespace
}  // namespace kiln::runtime
