// MD5 digests of trace payloads (the `has_payload` field; Note [Structured trace format] in
// src/trace/trace.h). The digest comes from libmd (Debian's libmd-dev), not from Kiln.
#pragma once

#include <string>
#include <string_view>

namespace kiln::trace {

// The lowercase hex MD5 of `bytes`: 32 characters, what Python's hashlib.md5().hexdigest() gives.
std::string md5_hex(std::string_view bytes);

}  // namespace kiln::trace
