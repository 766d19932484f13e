// IOError: the operating system refused a file operation (open, read, write, fsync, rename). A
// file that opens but holds bad contents (a wrong magic number, a truncated stream, invalid JSON)
// is a ValueError instead, so callers can tell "not there / not writable" from "corrupt".
#pragma once

#include "kiln/error.h"

namespace kiln {

class IOError : public Error {
  using Error::Error;
};

}  // namespace kiln
