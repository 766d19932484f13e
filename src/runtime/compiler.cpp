// The compiler driver: options, the cache key, and running the C++ compiler as a child process.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "kiln/error.h"
#include "src/runtime/code_cache.h"
#include "src/trace/md5.h"

extern char** environ;

namespace kiln::runtime {

namespace {

std::vector<std::string> split_on_whitespace(const char* text) {
  std::vector<std::string> words;
  std::istringstream in(text == nullptr ? "" : text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// The compiler's file, found like execvp would: a name with a slash is a path, others are looked
// up in $PATH. Empty when there is none.
std::filesystem::path resolve_compiler(const std::string& compiler) {
  if (compiler.find('/') != std::string::npos) return compiler;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path == nullptr ? "/usr/bin:/bin" : path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate =
        std::filesystem::path(dir.empty() ? "." : dir) / compiler;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Note [Compiler identity in the cache key]
// A new compiler version can generate different code from the same source, so the cache key must
// change with the compiler. Asking it (`g++ --version`) costs a process start on every warm start;
// instead the key holds the compiler's real file (symlinks resolved: g++ -> g++-12), its size and
// its modification time, which change whenever the package is upgraded. Computed once per
// compiler name and process.
std::string compiler_identity(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> identities;
  std::lock_guard lock(mutex);
  auto it = identities.find(compiler);
  if (it != identities.end()) return it->second;
  std::string identity = compiler + " (not found)";
  const std::filesystem::path file = resolve_compiler(compiler);
  std::error_code error;
  const std::filesystem::path real = file.empty() ? file : std::filesystem::canonical(file, error);
  struct stat info {};
  if (!real.empty() && !error && ::stat(real.c_str(), &info) == 0) {
    identity = fmt::format("{} size={} mtime={}.{}", real.string(), info.st_size,
                           info.st_mtim.tv_sec, info.st_mtim.tv_nsec);
  }
  return identities.emplace(compiler, identity).first->second;
}

// -march=native code runs only on CPUs with the features of the one that compiled it; a cache
// directory shared between machines (an NFS home) must not hand it to another CPU.
std::string cpu_features() {
  std::string features;
  __builtin_cpu_init();
#define KILN_CPU_FEATURE(name) \
  if (__builtin_cpu_supports(name)) features += name " ";
  KILN_CPU_FEATURE("sse4.2")
  KILN_CPU_FEATURE("avx")
  KILN_CPU_FEATURE("avx2")
  KILN_CPU_FEATURE("fma")
  KILN_CPU_FEATURE("bmi2")
  KILN_CPU_FEATURE("avx512f")
  KILN_CPU_FEATURE("avx512bw")
  KILN_CPU_FEATURE("avx512vl")
  KILN_CPU_FEATURE("avx512dq")
#undef KILN_CPU_FEATURE
  return features;
}

// The flags as passed: without -march=native for the scalar-only build
// (CompilerOptions::vectorize).
std::vector<std::string> effective_flags(const CompilerOptions& options) {
  std::vector<std::string> flags;
  for (const std::string& flag : options.flags) {
    if (!options.vectorize && flag == "-march=native") continue;
    flags.push_back(flag);
  }
  return flags;
}

std::string library_flag(const std::string& library) {
  return library.starts_with("-") ? library : "-l" + library;
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string command_text(const std::vector<std::string>& command) {
  std::string text;
  for (const std::string& word : command) text += (text.empty() ? "" : " ") + word;
  return text;
}

// Runs `command` with stdout and stderr going to `log`; returns the exit status (or throws
// CompileError when the compiler cannot be started).
int run_process(const std::vector<std::string>& command, const std::filesystem::path& log,
                const std::filesystem::path& source) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  KILN_CHECK(spawn_error == 0, CompileError,
             "compile: cannot run the C++ compiler '{}' to compile {}: {}; install it or point "
             "$KILN_CXX at one",
             command[0], source.string(), std::strerror(spawn_error));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    KILN_CHECK(errno == EINTR, CompileError, "compile: waiting for '{}' compiling {} failed: {}",
               command[0], source.string(), std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

CompilerOptions default_compiler_options() {
  CompilerOptions options;
  const char* compiler = std::getenv("KILN_CXX");
  if (compiler != nullptr && compiler[0] != '\0') options.compiler = compiler;
  // The prelude's scalar semantics (src/numerics/scalar_ops.inc) need C++17; GNU mode keeps
  // floating multiply-adds contracted, as the compilers' default dialects do.
  options.flags = {"-std=gnu++17", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"};
  for (std::string& flag : split_on_whitespace(std::getenv("KILN_CXXFLAGS")))
    options.flags.push_back(std::move(flag));
  options.libraries = {"sleef"};
  return options;
}

std::string source_hash(std::string_view source, const CompilerOptions& options) {
  // Every part is followed by a NUL so that no two different inputs concatenate alike.
  std::string key = "kiln code cache v1";
  key += '\0';
  key += compiler_identity(options.compiler);
  key += '\0';
  for (const std::string& flag : effective_flags(options)) key += flag + '\0';
  key += "libraries";
  key += '\0';
  for (const std::string& library : options.libraries) key += library + '\0';
  const auto& flags = options.flags;
  if (options.vectorize && std::find(flags.begin(), flags.end(), "-march=native") != flags.end())
    key += cpu_features();
  key += '\0';
  key += source;
  return trace::md5_hex(key);
}

std::vector<std::string> compiler_command(const CompilerOptions& options,
                                          const std::filesystem::path& source,
                                          const std::filesystem::path& output) {
  std::vector<std::string> command = {options.compiler};
  for (const std::string& flag : effective_flags(options)) command.push_back(flag);
  // A shared library whatever the flags say (a user's $KILN_CXXFLAGS need not repeat them).
  for (const char* required : {"-shared", "-fPIC"}) {
    if (std::find(command.begin(), command.end(), required) == command.end())
      command.push_back(required);
  }
  command.insert(command.end(), {"-o", output.string(), source.string()});
  // Libraries after the source: the linker resolves left to right.
  for (const std::string& library : options.libraries) command.push_back(library_flag(library));
  return command;
}

void run_compiler(const CompilerOptions& options, const std::filesystem::path& source,
                  const std::filesystem::path& output) {
  const std::vector<std::string> command = compiler_command(options, source, output);
  const std::filesystem::path log = output.string() + ".log";
  const int status = run_process(command, log, source);
  std::string message = read_text_file(log);
  std::error_code ignored;
  std::filesystem::remove(log, ignored);
  if (status == 0 && std::filesystem::exists(output)) return;
  constexpr size_t kMaxMessage = 16000;  // a runaway error cascade stays readable
  if (message.size() > kMaxMessage)
    message = message.substr(0, kMaxMessage) + "\n... (compiler output truncated)";
  throw CompileError(fmt::format(
      "compile: the C++ compiler failed (exit status {}) on the generated file {}\ncommand: "
      "{}\n{}",
      status, source.string(), command_text(command), message));
}

}  // namespace kiln::runtime
