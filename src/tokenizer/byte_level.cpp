// Builds the byte-level alphabet once; both directions are table lookups.
#include "tokenizer/byte_level.h"

namespace kipp::byte_level {
namespace {

bool stands_for_itself(uint32_t byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct Alphabet {
  std::array<char32_t, 256> char_of_byte{};
  std::array<int16_t, 512> byte_of_char{};  // every stand-in is below U+0200; -1 where none

  Alphabet() {
    byte_of_char.fill(-1);
    char32_t next_stand_in = 0x100;
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const char32_t stand_in = stands_for_itself(byte) ? char32_t(byte) : next_stand_in++;
      char_of_byte[byte] = stand_in;
      byte_of_char[stand_in] = int16_t(byte);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet instance;
  return instance;
}

}  // namespace

const std::array<char32_t, 256>& char_of_byte() { return alphabet().char_of_byte; }

std::optional<uint8_t> byte_of_char(char32_t code_point) {
  if (code_point >= alphabet().byte_of_char.size()) return std::nullopt;
  const int16_t byte = alphabet().byte_of_char[code_point];
  if (byte < 0) return std::nullopt;
  return uint8_t(byte);
}

}  // namespace kipp::byte_level
