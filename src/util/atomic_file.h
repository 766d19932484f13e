// Replacing a file so that readers (and a process restarted after a crash) see either the old
// file or the complete new one. See Note [Atomic file replacement].
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace kiln::util {

// Writes the concatenation of `chunks` to `path`, replacing it atomically. `caller` names the
// public function in error messages. IOError when any step fails; the old file is then untouched
// and the temporary file removed.
void write_file_atomically(const std::filesystem::path& path,
                           std::span<const std::span<const std::byte>> chunks,
                           std::string_view caller);

}  // namespace kiln::util
