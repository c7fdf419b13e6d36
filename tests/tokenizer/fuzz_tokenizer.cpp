// libFuzzer target for the tokenizer: any bytes are either rejected as invalid UTF-8 (exactly
// when the validator says so) or encoded; ids decode; the streaming decoder agrees with decode;
// ASCII text without added tokens survives the round trip. Built with KIPP_FUZZ=ON (clang).
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "real_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "util/utf8.h"

namespace {

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kipp::Tokenizer* tokenizer = [] {
    auto loaded = kipp::testing::real_tokenizer();
    check(loaded.ok(), "the real tokenizer did not load");
    return loaded.value();
  }();
  static kipp::EncodeWorkspace workspace;  // the word cache carries over between inputs, as in use
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto ids = tokenizer->encode(text, workspace);
  check(ids.ok() == kipp::utf8::validate(text).ok(), "encode and the UTF-8 validator disagree");

  // Ids made from the raw bytes: decode and the streaming decoder must agree on any sequence.
  std::vector<kipp::TokenId> arbitrary;
  for (size_t i = 0; i + 2 < size; i += 3)
    arbitrary.push_back((uint32_t(data[i]) << 16 | uint32_t(data[i + 1]) << 8 | data[i + 2]) % tokenizer->vocab_size());
  const std::vector<kipp::TokenId>& to_decode = ids.ok() ? ids.value() : arbitrary;
  auto decoded = tokenizer->decode(to_decode);
  check(decoded.ok(), "decode failed on ids inside the vocabulary");
  check(kipp::utf8::validate(decoded.value()).ok(), "decode produced invalid UTF-8");
  kipp::StreamDecoder stream(*tokenizer);
  std::string streamed;
  for (kipp::TokenId id : to_decode) check(stream.push(id, streamed).ok(), "stream push failed");
  stream.finish(streamed);
  check(streamed == decoded.value(), "streaming decode differs from decode");

  if (ids.ok()) {
    bool plain_ascii = true;
    for (unsigned char c : text) plain_ascii = plain_ascii && c < 0x80 && c != '<';
    if (plain_ascii) check(decoded.value() == text, "ASCII text did not survive encode and decode");
  }
  return 0;
}
