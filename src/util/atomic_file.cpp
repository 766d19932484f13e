#include "src/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "kiln/io/io_error.h"

namespace kiln::util {

// Note [Atomic file replacement]
// A checkpoint is only useful if it is complete: a crash, a full disk or a kill in the middle of
// writing must not leave a half-written file where the last good checkpoint was. So the bytes go
// to a temporary file in the same directory (rename is only atomic within one filesystem), which
// is fsync'ed, then rename(2)d over the target (atomic on POSIX: a reader sees the old or the new
// inode, never a mix), and the directory is fsync'ed so the rename itself survives a power loss.
// Any failure before the rename removes the temporary file and leaves the target untouched. A
// crash (not an error) before the rename can leave the hidden temporary file behind, never a
// damaged target.
namespace {

std::string errno_text(int error) { return std::strerror(error); }

// Removes the temporary file unless release()d after a successful rename.
class TemporaryFile {
 public:
  TemporaryFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Closes the descriptor; returns 0 or an errno value (close can report a failed write-back).
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }
  void release() { path_.clear(); }

 private:
  std::string path_;
  int fd_;
};

TemporaryFile create_temporary_next_to(const std::filesystem::path& target,
                                       std::string_view caller) {
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  for (int attempt = 0;; ++attempt) {
    const std::string name =
        fmt::format(".{}.tmp-{}-{}", target.filename().string(), ::getpid(), counter.fetch_add(1));
    const std::string path = (dir / name).string();
    // 0666 minus the umask: the permissions a plain open() of the target would give.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return TemporaryFile(path, fd);
    const int error = errno;
    if (error == EEXIST && attempt < 100) continue;  // a leftover of a crashed process
    throw IOError(fmt::format("{}: cannot write {}: cannot create a temporary file in {}: {}",
                              caller, target.string(), dir.string(), errno_text(error)));
  }
}

void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& target,
               std::string_view caller) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    KILN_CHECK(written > 0, IOError, "{}: cannot write {}: {}; the existing file is unchanged",
               caller, target.string(), errno_text(written < 0 ? errno : EIO));
    bytes = bytes.subspan(static_cast<size_t>(written));
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path,
                           std::span<const std::span<const std::byte>> chunks,
                           std::string_view caller) {
  KILN_CHECK(path.has_filename(), IOError, "{}: cannot write {}: the path names no file", caller,
             path.string());
  TemporaryFile temporary = create_temporary_next_to(path, caller);
  for (std::span<const std::byte> chunk : chunks) write_all(temporary.fd(), chunk, path, caller);
  KILN_CHECK(::fsync(temporary.fd()) == 0, IOError,
             "{}: cannot write {}: fsync failed: {}; the existing file is unchanged", caller,
             path.string(), errno_text(errno));
  const int close_error = temporary.close();
  KILN_CHECK(close_error == 0, IOError,
             "{}: cannot write {}: close failed: {}; the existing file is unchanged", caller,
             path.string(), errno_text(close_error));
  KILN_CHECK(::rename(temporary.path().c_str(), path.c_str()) == 0, IOError,
             "{}: cannot replace {}: {}; the existing file is unchanged", caller, path.string(),
             errno_text(errno));
  temporary.release();

  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  KILN_CHECK(dir_fd >= 0, IOError, "{}: wrote {} but cannot open its directory to sync it: {}",
             caller, path.string(), errno_text(errno));
  // Some filesystems cannot sync a directory (EINVAL); the rename is then as durable as they get.
  const int sync_error = ::fsync(dir_fd) == 0 ? 0 : errno;
  ::close(dir_fd);
  KILN_CHECK(sync_error == 0 || sync_error == EINVAL, IOError,
             "{}: wrote {} but syncing its directory failed: {}", caller, path.string(),
             errno_text(sync_error));
}

}  // namespace kiln::util
