// Strict UTF-8 stepping per the Unicode standard's table of well-formed byte sequences
// (no overlongs, no surrogates, nothing above U+10FFFF).
#include "util/utf8.h"

#include <cstring>

namespace kipp::utf8 {
namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// The range the second byte must fall in after a given lead byte (the first byte's table row).
struct LeadRule {
  uint32_t length;
  unsigned char second_low;
  unsigned char second_high;
};

bool lead_rule(unsigned char lead, LeadRule& rule) {
  if (lead >= 0xC2 && lead <= 0xDF) rule = {2, 0x80, 0xBF};
  else if (lead == 0xE0) rule = {3, 0xA0, 0xBF};
  else if (lead == 0xED) rule = {3, 0x80, 0x9F};
  else if (lead >= 0xE1 && lead <= 0xEF) rule = {3, 0x80, 0xBF};
  else if (lead == 0xF0) rule = {4, 0x90, 0xBF};
  else if (lead >= 0xF1 && lead <= 0xF3) rule = {4, 0x80, 0xBF};
  else if (lead == 0xF4) rule = {4, 0x80, 0x8F};
  else return false;
  return true;
}

}  // namespace

Step step(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (p[0] < 0x80) return {StepKind::complete, 1, p[0]};
  LeadRule rule{};
  if (!lead_rule(p[0], rule)) return {StepKind::invalid, 1, 0};
  uint32_t have = 1;
  for (; have < rule.length; ++have) {
    if (have == bytes.size()) return {StepKind::incomplete, have, 0};
    const unsigned char byte = p[have];
    const bool fits = have == 1 ? (byte >= rule.second_low && byte <= rule.second_high) : is_continuation(byte);
    if (!fits) return {StepKind::invalid, have, 0};
  }
  uint32_t length = 0;
  return {StepKind::complete, rule.length, decode_valid(p, length)};
}

Status validate(std::string_view text) {
  size_t offset = 0;
  while (offset < text.size()) {
    // ASCII runs are the common case: check eight bytes at a time.
    while (offset + 8 <= text.size()) {
      uint64_t word = 0;
      std::memcpy(&word, text.data() + offset, 8);
      if (word & 0x8080808080808080ull) break;
      offset += 8;
    }
    if (offset == text.size()) break;
    const Step one = step(text.substr(offset));
    if (one.kind == StepKind::invalid)
      return fail("invalid UTF-8 at byte offset ", offset, " (byte 0x", std::hex, unsigned(uint8_t(text[offset])), ")");
    if (one.kind == StepKind::incomplete)
      return fail("invalid UTF-8 at byte offset ", offset, ": the text ends inside a multi-byte character");
    offset += one.length;
  }
  return {};
}

void append(char32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += char(code_point);
  } else if (code_point < 0x800) {
    out += char(0xC0 | (code_point >> 6));
    out += char(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += char(0xE0 | (code_point >> 12));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  } else {
    out += char(0xF0 | (code_point >> 18));
    out += char(0x80 | ((code_point >> 12) & 0x3F));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  }
}

void append_lossy(std::string_view bytes, std::string& out) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  size_t offset = 0;
  while (offset < bytes.size()) {
    const Step one = step(bytes.substr(offset));
    if (one.kind == StepKind::complete) out.append(bytes.substr(offset, one.length));
    else out.append(kReplacement);
    offset += one.length;
  }
}

std::vector<char32_t> code_points(std::string_view valid_text) {
  std::vector<char32_t> out;
  const auto* p = reinterpret_cast<const unsigned char*>(valid_text.data());
  for (size_t offset = 0; offset < valid_text.size();) {
    uint32_t length = 0;
    out.push_back(decode_valid(p + offset, length));
    offset += length;
  }
  return out;
}

}  // namespace kipp::utf8
