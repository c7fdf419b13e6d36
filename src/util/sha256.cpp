#include "util/sha256.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdio>
#include <vector>

namespace kipp {
namespace {

std::string to_hex(const unsigned char* bytes, unsigned size) {
  static const char digits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (unsigned i = 0; i < size; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

// One EVP digest context; finishing it yields lowercase hex.
class Digest {
 public:
  explicit Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, md, nullptr); }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void update(const void* data, size_t size) { EVP_DigestUpdate(ctx_, data, size); }
  std::string finish() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned size = 0;
    EVP_DigestFinal_ex(ctx_, out, &size);
    return to_hex(out, size);
  }

 private:
  EVP_MD_CTX* ctx_;
};

Result<std::string> digest_file(const std::string& path, Digest& digest) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return fail(path, ": cannot open for hashing");
  std::vector<unsigned char> buffer(1 << 20);
  size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) digest.update(buffer.data(), got);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return fail(path, ": read error while hashing");
  return digest.finish();
}

}  // namespace

struct Sha256::State {
  Digest digest{EVP_sha256()};
};

Sha256::Sha256() : state_(std::make_unique<State>()) {}
Sha256::~Sha256() = default;
void Sha256::update(const void* data, size_t size) { state_->digest.update(data, size); }
std::string Sha256::hex_digest() { return state_->digest.finish(); }

bool same_secret(std::string_view offered, std::string_view expected) {
  const std::string a = sha256_hex(offered), b = sha256_hex(expected);
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex_digest();
}

Result<std::string> sha256_file(const std::string& path) {
  Digest digest(EVP_sha256());
  return digest_file(path, digest);
}

Result<std::string> git_blob_sha1_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return fail(path, ": cannot open for hashing");
  std::fseek(file, 0, SEEK_END);
  long size = std::ftell(file);
  std::fclose(file);
  if (size < 0) return fail(path, ": cannot determine size");
  Digest digest(EVP_sha1());
  std::string header = "blob " + std::to_string(size);
  digest.update(header.data(), header.size() + 1);  // the header ends with a NUL byte
  return digest_file(path, digest);
}

}  // namespace kipp
