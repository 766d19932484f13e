// Internals of the code cache shared by compiler.cpp, code_cache.cpp and compile_pool.cpp (and
// the tests, which corrupt cache entries on purpose). See Note [Code cache] in code_cache.cpp.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/runtime/compiler.h"

namespace kiln::runtime {

// ---- compiler.cpp ----
// The command line that compiles `source` into the shared library `output`.
std::vector<std::string> compiler_command(const CompilerOptions& options,
                                          const std::filesystem::path& source,
                                          const std::filesystem::path& output);
// Runs compiler_command; CompileError naming `source` and quoting the compiler's output when the
// compiler cannot be started or fails.
void run_compiler(const CompilerOptions& options, const std::filesystem::path& source,
                  const std::filesystem::path& output);

// ---- code_cache.cpp ----
// The directory of compiled libraries: cache_dir()/code (created on first use).
std::filesystem::path code_dir();
std::filesystem::path source_path(const std::string& hash);   // <code_dir>/<hash>.cpp
std::filesystem::path library_path(const std::string& hash);  // <code_dir>/<hash>.so
// True when `path` is a complete library written by the cache (its checksum trailer matches).
bool is_valid_library_file(const std::filesystem::path& path);
// Makes sure a valid library for `source` is in the cache (compiling it under the entry's file
// lock unless one is there) and returns its path; does not load it. `hash` is
// source_hash(source, options).
std::filesystem::path build_library(std::string_view source, const CompilerOptions& options,
                                    const std::string& hash);
// Libraries compiled by this process (a test checks that two processes compile a source once).
int64_t compiles_in_this_process();
// Constructs the registry of loaded libraries; the pool calls it before it starts its threads so
// that the registry, used by the pool's tasks, is destroyed after the pool at exit.
void ensure_registry_outlives_pool();

// ---- compile_pool.cpp ----
// Runs `task` on the background compile pool (one thread per core).
void submit_to_compile_pool(std::function<void()> task);

}  // namespace kiln::runtime
