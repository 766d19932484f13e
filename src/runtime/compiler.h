// The compiler driver and the code cache (DESIGN.md section 5, runtime).
//
// Generated C++ is compiled into a shared library, cached under cache_dir() by the content hash
// of (source, compiler, flags, compiler version), written by atomic rename and verified on load
// (Note [Code cache] in code_cache.cpp). A compiler failure raises kiln::CompileError naming the
// generated file and quoting the compiler's message.
#pragma once

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

struct CompilerOptions {
  std::string compiler = "g++";  // $KILN_CXX overrides the default
  // -O3 -march=native -fopenmp -shared -fPIC (+ the flags in $KILN_CXXFLAGS).
  std::vector<std::string> flags;
  std::vector<std::string> libraries;  // -lsleef (vector math), ...
  // false: the scalar-only build for CPUs without AVX2 (the generator emits no vector code and
  // the flags drop -march=native for -O3 only).
  bool vectorize = true;
};
// The defaults above, with the environment applied.
CompilerOptions default_compiler_options();

// $KILN_CACHE_DIR, else ~/.cache/kiln (created on first use).
std::filesystem::path cache_dir();

// A loaded shared library (dlopen'ed once per path for the life of the process).
class KernelLibrary {
 public:
  virtual ~KernelLibrary() = default;
  // The address of an exported symbol; ValueError naming the library if it has none.
  virtual void* symbol(const std::string& name) const = 0;
  // The address of an exported symbol, or nullptr when the library has none.
  virtual void* find_symbol(const std::string& name) const = 0;
  virtual const std::filesystem::path& path() const = 0;
  // The content hash the library was built from (its cache key).
  virtual const std::string& hash() const = 0;
};

// Content hash of what would be compiled (the cache key).
std::string source_hash(std::string_view source, const CompilerOptions& options);

// The library for `source`: loaded from the cache when a valid entry exists, otherwise compiled
// (into the cache) and loaded. Blocking. Thread-safe and process-safe.
std::shared_ptr<const KernelLibrary> compile_and_load(std::string_view source,
                                                      const CompilerOptions& options);
// The same on the background compile pool (one thread per core).
std::shared_future<std::shared_ptr<const KernelLibrary>> compile_async(std::string source,
                                                                       CompilerOptions options);
// A cached library by hash, or nullptr if there is no valid entry (warm start).
std::shared_ptr<const KernelLibrary> load_cached(const std::string& hash);

}  // namespace kiln::runtime
