// The byte-level alphabet of GPT-2-style BPE: every byte value has one printable stand-in
// character, so token texts are printable strings. Printable Latin-1 bytes stand for themselves;
// the other 68 bytes take U+0100 onwards in byte order.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace kipp::byte_level {

// The stand-in character of each byte.
const std::array<char32_t, 256>& char_of_byte();

// The byte a stand-in character stands for; nothing for a character outside the alphabet.
std::optional<uint8_t> byte_of_char(char32_t code_point);

}  // namespace kipp::byte_level
