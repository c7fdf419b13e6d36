// UTF-8, for every layer that reads or writes text (the tokenizer, the GGUF vocabulary check, the
// grammar compilers, the server): strict validation (the first bad byte's offset is the error),
// one-step decoding that tells a complete character from an incomplete tail and from invalid
// bytes, encoding, and the lossy conversion the tokenizer's decode uses for bytes that are not
// UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace kipp::utf8 {

enum class StepKind : uint8_t {
  complete,    // a well-formed character of `length` bytes
  incomplete,  // the text ends inside a well-formed prefix of `length` bytes
  invalid,     // `length` bytes (the maximal ill-formed subpart, at least 1) are not UTF-8
};

struct Step {
  StepKind kind;
  uint32_t length;
  char32_t code_point;  // meaningful only when kind == complete
};

// Reads one character at the front of `bytes` (which must not be empty).
Step step(std::string_view bytes);

// Ok when every byte is well-formed UTF-8; otherwise names the offset of the first bad byte.
Status validate(std::string_view text);

// Appends the 1-4 byte encoding of a Unicode scalar value.
void append(char32_t code_point, std::string& out);

// Appends `bytes` with each maximal ill-formed subpart replaced by U+FFFD, and an incomplete
// tail replaced by one U+FFFD (the rule the reference's decoder applies).
void append_lossy(std::string_view bytes, std::string& out);

// Decodes one character of text already known to be valid UTF-8.
inline char32_t decode_valid(const unsigned char* p, uint32_t& length) {
  const unsigned char lead = p[0];
  if (lead < 0x80) {
    length = 1;
    return lead;
  }
  if (lead < 0xE0) {
    length = 2;
    return char32_t(lead & 0x1F) << 6 | (p[1] & 0x3F);
  }
  if (lead < 0xF0) {
    length = 3;
    return char32_t(lead & 0x0F) << 12 | char32_t(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
  }
  length = 4;
  return char32_t(lead & 0x07) << 18 | char32_t(p[1] & 0x3F) << 12 | char32_t(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
}

// The code points of text already known to be valid UTF-8 (a JSON string, a validated token).
std::vector<char32_t> code_points(std::string_view valid_text);

}  // namespace kipp::utf8
