#include "src/trace/md5.h"

#include <md5.h>  // libmd

namespace kiln::trace {

std::string md5_hex(std::string_view bytes) {
  MD5_CTX context;
  MD5Init(&context);
  MD5Update(&context, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  uint8_t digest[MD5_DIGEST_LENGTH];
  MD5Final(digest, &context);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(2 * MD5_DIGEST_LENGTH, '0');
  for (int i = 0; i < MD5_DIGEST_LENGTH; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace kiln::trace
