// The content-addressed cache of compiled kernel libraries and the process-wide registry of
// loaded ones.
//
// Note [Code cache]
// An entry is three files in cache_dir()/code, named by the cache key (source_hash: the source,
// the compiler's identity, the flags, the CPU's features):
//   <hash>.cpp   the generated source (written first: the compiler's errors point into it),
//   <hash>.so    the library, ending in a checksum trailer (below),
//   <hash>.lock  a lock file: a process compiling the entry holds flock(LOCK_EX) on it.
// Writing: the compiler writes a uniquely named temporary file in the same directory; its bytes
// plus the trailer are written to a second temporary and renamed over <hash>.so (an atomic
// replace, Note [Atomic file replacement] in src/util/atomic_file.cpp). A reader sees no library,
// or a complete one.
// Checking: a crash, a full disk or an outside hand can still leave a damaged file (a rename
// whose data never reached the disk; a truncated copy). So every load first reads the file and
// checks its trailer, `<md5 of the bytes before it, 32 hex digits>KILNSO01`; a file that fails is
// never dlopen'ed: it is compiled again and replaced. Keeping the checksum inside the file (not
// in a sidecar) makes library and checksum one atomic unit: two writers can never pair one's
// library with the other's checksum. The loader ignores bytes past the ELF program's segments.
// Concurrency: threads of one process share one build per key (the registry's in-flight map);
// processes serialize on the lock file, and the second one finds the first one's library when
// it gets the lock. The lock is only an optimization (no duplicate compiles): correctness comes
// from the atomic rename, so a process that cannot lock (a filesystem without flock) just
// compiles. Lock files stay (an empty file per entry); removing them would race with a process
// waiting on one.
// Loading: dlopen(RTLD_NOW | RTLD_LOCAL) (missing symbols fail at load, kernels of different
// graphs never interpose); a library stays loaded for the life of the process, one handle per
// key.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/error.h"
#include "kiln/io/io_error.h"
#include "src/runtime/code_cache.h"
#include "src/trace/md5.h"
#include "src/util/atomic_file.h"

namespace kiln::runtime {

namespace {

constexpr std::string_view kTrailerMagic = "KILNSO01";
constexpr size_t kDigestSize = 32;  // hex md5
constexpr size_t kTrailerSize = kDigestSize + 8;

std::atomic<int64_t> compile_count{0};

class SharedLibrary final : public KernelLibrary {
 public:
  SharedLibrary(void* handle, std::filesystem::path path, std::string hash)
      : handle_(handle), path_(std::move(path)), hash_(std::move(hash)) {}
  // No dlclose: kernels may be running on other threads, and code addresses are handed out.

  void* symbol(const std::string& name) const override {
    void* address = ::dlsym(handle_, name.c_str());
    KILN_CHECK(address != nullptr, ValueError,
               "KernelLibrary::symbol: the library {} exports no symbol '{}'; the program and "
               "its generated source disagree (regenerate both)",
               path_.string(), name);
    return address;
  }
  void* find_symbol(const std::string& name) const override {
    return ::dlsym(handle_, name.c_str());
  }
  const std::filesystem::path& path() const override { return path_; }
  const std::string& hash() const override { return hash_; }

 private:
  void* handle_;
  std::filesystem::path path_;
  std::string hash_;
};

std::string read_file(const std::filesystem::path& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  *ok = static_cast<bool>(in) || in.eof();
  return bytes.str();
}

void check_hash(const std::string& hash, std::string_view caller) {
  bool valid = !hash.empty() && hash.size() <= 128;
  for (char c : hash) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) != 0);
  KILN_CHECK(valid, ValueError,
             "{}: '{}' is not a code cache key (expected the hex digits source_hash returns)",
             caller, hash);
}

// dlopen's the library at `path`, or nullptr with dlerror's message in `error`.
std::shared_ptr<const KernelLibrary> open_library(const std::filesystem::path& path,
                                                  const std::string& hash, std::string* error) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* message = ::dlerror();
    *error = message == nullptr ? "unknown dlopen error" : message;
    return nullptr;
  }
  return std::make_shared<SharedLibrary>(handle, path, hash);
}

// Holds flock(LOCK_EX) on a file while alive (Note [Code cache]: an optimization only).
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Compiles `source` into the entry `hash` (Note [Code cache], "Writing").
void compile_into_cache(std::string_view source, const CompilerOptions& options,
                        const std::string& hash) {
  const std::filesystem::path source_file = source_path(hash);
  const std::span<const std::byte> source_bytes(reinterpret_cast<const std::byte*>(source.data()),
                                                source.size());
  util::write_file_atomically(source_file, std::span(&source_bytes, 1), "compile");

  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path temporary =
      code_dir() / fmt::format(".{}.build-{}-{}.so", hash, ::getpid(), counter.fetch_add(1));
  struct RemoveOnExit {
    std::filesystem::path path;
    ~RemoveOnExit() {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    }
  } remove_temporary{temporary};
  run_compiler(options, source_file, temporary);
  compile_count.fetch_add(1);

  bool ok = false;
  const std::string library = read_file(temporary, &ok);
  KILN_CHECK(ok && !library.empty(), IOError,
             "compile: cannot read the library {} the compiler wrote for {}", temporary.string(),
             source_file.string());
  const std::string trailer = trace::md5_hex(library) + std::string(kTrailerMagic);
  const std::span<const std::byte> chunks[] = {
      std::as_bytes(std::span(library.data(), library.size())),
      std::as_bytes(std::span(trailer.data(), trailer.size()))};
  util::write_file_atomically(library_path(hash), chunks, "compile");
}

// The registry of loaded libraries (one per key) and of builds in flight in this process.
class LibraryRegistry {
 public:
  using Future = std::shared_future<std::shared_ptr<const KernelLibrary>>;

  static LibraryRegistry& instance() {
    static LibraryRegistry registry;
    return registry;
  }

  std::shared_ptr<const KernelLibrary> find_loaded(const std::string& hash) {
    std::lock_guard lock(mutex_);
    auto it = loaded_.find(hash);
    return it == loaded_.end() ? nullptr : it->second;
  }
  // Keeps the first library registered under `hash` (a racing load of the same key dlopen'ed the
  // same path; the loser's handle just stays open).
  std::shared_ptr<const KernelLibrary> add_loaded(std::shared_ptr<const KernelLibrary> library) {
    std::lock_guard lock(mutex_);
    return loaded_.emplace(library->hash(), std::move(library)).first->second;
  }

  // The future of the build of `hash`. When `*builder` comes back non-null, the caller builds:
  // it must call finish() with the result.
  Future claim(const std::string& hash,
               std::shared_ptr<std::promise<std::shared_ptr<const KernelLibrary>>>* builder) {
    std::lock_guard lock(mutex_);
    if (auto it = loaded_.find(hash); it != loaded_.end()) {
      std::promise<std::shared_ptr<const KernelLibrary>> ready;
      ready.set_value(it->second);
      return ready.get_future().share();
    }
    if (auto it = in_flight_.find(hash); it != in_flight_.end()) return it->second;
    *builder = std::make_shared<std::promise<std::shared_ptr<const KernelLibrary>>>();
    Future future = (*builder)->get_future().share();
    in_flight_.emplace(hash, future);
    return future;
  }
  void finish(const std::string& hash, std::promise<std::shared_ptr<const KernelLibrary>>& builder,
              std::shared_ptr<const KernelLibrary> library, std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (library != nullptr) library = loaded_.emplace(hash, std::move(library)).first->second;
    in_flight_.erase(hash);  // a failed build is retried by the next request
    if (error)
      builder.set_exception(error);
    else
      builder.set_value(std::move(library));
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const KernelLibrary>> loaded_;
  std::unordered_map<std::string, Future> in_flight_;
};

// The library of a valid cache entry, loaded; nullptr when the entry is absent, damaged or does
// not load (the caller rebuilds it).
std::shared_ptr<const KernelLibrary> load_valid_entry(const std::string& hash) {
  const std::filesystem::path path = library_path(hash);
  if (!is_valid_library_file(path)) return nullptr;
  std::string ignored;
  return open_library(path, hash, &ignored);
}

std::shared_ptr<const KernelLibrary> build_and_load(std::string_view source,
                                                    const CompilerOptions& options,
                                                    const std::string& hash) {
  if (auto library = load_valid_entry(hash)) return library;
  const std::filesystem::path path = build_library(source, options, hash);
  std::string error;
  auto library = open_library(path, hash, &error);
  KILN_CHECK(library != nullptr, CompileError,
             "compile: the library {} compiled from {} does not load: {}", path.string(),
             source_path(hash).string(), error);
  return library;
}

}  // namespace

std::filesystem::path cache_dir() {
  std::filesystem::path dir;
  const char* configured = std::getenv("KILN_CACHE_DIR");
  if (configured != nullptr && configured[0] != '\0') {
    dir = configured;
  } else {
    const char* home = std::getenv("HOME");
    dir = (home != nullptr && home[0] != '\0')
              ? std::filesystem::path(home) / ".cache" / "kiln"
              : std::filesystem::temp_directory_path() / fmt::format("kiln-cache-{}", ::getuid());
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  KILN_CHECK(!error, IOError,
             "cache_dir: cannot create the Kiln cache directory {}: {}; set $KILN_CACHE_DIR to a "
             "writable directory",
             dir.string(), error.message());
  return dir;
}

std::filesystem::path code_dir() {
  const std::filesystem::path dir = cache_dir() / "code";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  KILN_CHECK(!error, IOError,
             "cache_dir: cannot create {}: {}; set $KILN_CACHE_DIR to a writable directory",
             dir.string(), error.message());
  return dir;
}

std::filesystem::path source_path(const std::string& hash) { return code_dir() / (hash + ".cpp"); }
std::filesystem::path library_path(const std::string& hash) { return code_dir() / (hash + ".so"); }

bool is_valid_library_file(const std::filesystem::path& path) {
  bool ok = false;
  const std::string bytes = read_file(path, &ok);
  if (!ok || bytes.size() <= kTrailerSize) return false;
  const std::string_view all(bytes);
  const std::string_view body = all.substr(0, bytes.size() - kTrailerSize);
  const std::string_view digest = all.substr(body.size(), kDigestSize);
  const std::string_view magic = all.substr(body.size() + kDigestSize);
  return magic == kTrailerMagic && digest == trace::md5_hex(body);
}

std::filesystem::path build_library(std::string_view source, const CompilerOptions& options,
                                    const std::string& hash) {
  const std::filesystem::path path = library_path(hash);
  if (is_valid_library_file(path)) return path;
  FileLock lock(code_dir() / (hash + ".lock"));
  // Another process may have compiled it while this one waited for the lock.
  if (is_valid_library_file(path)) return path;
  compile_into_cache(source, options, hash);
  return path;
}

int64_t compiles_in_this_process() { return compile_count.load(); }

std::shared_ptr<const KernelLibrary> compile_and_load(std::string_view source,
                                                      const CompilerOptions& options) {
  const std::string hash = source_hash(source, options);
  std::shared_ptr<std::promise<std::shared_ptr<const KernelLibrary>>> builder;
  auto future = LibraryRegistry::instance().claim(hash, &builder);
  if (builder == nullptr) return future.get();  // loaded, or being built by another thread
  std::shared_ptr<const KernelLibrary> library;
  std::exception_ptr error;
  try {
    library = build_and_load(source, options, hash);
  } catch (...) {
    error = std::current_exception();
  }
  LibraryRegistry::instance().finish(hash, *builder, std::move(library), error);
  return future.get();  // the registered library, or the build's exception
}

std::shared_future<std::shared_ptr<const KernelLibrary>> compile_async(std::string source,
                                                                       CompilerOptions options) {
  std::string hash = source_hash(source, options);
  std::shared_ptr<std::promise<std::shared_ptr<const KernelLibrary>>> builder;
  auto future = LibraryRegistry::instance().claim(hash, &builder);
  if (builder == nullptr) return future;
  submit_to_compile_pool([source = std::move(source), options = std::move(options),
                          hash = std::move(hash), builder = std::move(builder)] {
    std::shared_ptr<const KernelLibrary> library;
    std::exception_ptr error;
    try {
      library = build_and_load(source, options, hash);
    } catch (...) {
      error = std::current_exception();
    }
    LibraryRegistry::instance().finish(hash, *builder, library, error);
  });
  return future;
}

std::shared_ptr<const KernelLibrary> load_cached(const std::string& hash) {
  check_hash(hash, "load_cached");
  if (auto library = LibraryRegistry::instance().find_loaded(hash)) return library;
  auto library = load_valid_entry(hash);
  if (library == nullptr) return nullptr;
  return LibraryRegistry::instance().add_loaded(std::move(library));
}

// The pool's tasks use the registry: constructing it first destroys it last at exit.
void ensure_registry_outlives_pool() { LibraryRegistry::instance(); }

}  // namespace kiln::runtime
