// Streaming SHA-256 (and the git blob SHA-1 the hub reports for small files), via OpenSSL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "util/error.h"

namespace kipp {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  std::string hex_digest();  // finishes the hash; lowercase hex, 64 characters

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256_hex(std::string_view bytes);

// Whether an offered secret (an API key) equals the expected one, in time that depends on
// neither: their SHA-256 digests, of equal length whatever the inputs, are compared with
// OpenSSL's constant-time CRYPTO_memcmp.
bool same_secret(std::string_view offered, std::string_view expected);

// SHA-256 of a whole file, read in chunks.
Result<std::string> sha256_file(const std::string& path);

// The git blob id of a file: SHA-1 of "blob <size>\0" followed by the content.
Result<std::string> git_blob_sha1_file(const std::string& path);

}  // namespace kipp
