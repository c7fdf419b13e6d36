// One byte of facts per Unicode code point, as the tokenizer needs them: the split regex's class
// (letter \p{L}, number \p{N}, whitespace \s, other) and whether NFC can leave the character and
// everything before it alone. Built once from utf8proc plus unicode_tables.h; immutable after.
#pragma once

#include <cstdint>
#include <memory>

namespace kipp {

enum class CharClass : uint8_t { other = 0, letter = 1, number = 2, whitespace = 3 };

class CharTable {
 public:
  // The process-wide table, built on first use (a few milliseconds) and shared by every tokenizer.
  static const CharTable& get();

  CharClass char_class(char32_t code_point) const { return CharClass(facts_[code_point] & kClassMask); }

  // True when NFC (as the reference applies it) keeps this character unchanged and nothing
  // before it can reorder or compose across it: combining class 0, not the second part of any
  // canonical composition, and unchanged by NFC on its own.
  bool nfc_boundary(char32_t code_point) const { return facts_[code_point] & kNfcBoundary; }

  // True for the code points unicode::normalization_parts_since_9_0() lists.
  bool normalization_frozen(char32_t code_point) const { return facts_[code_point] & kNormalizationFrozen; }

  static constexpr char32_t kCodePoints = 0x110000;

 private:
  CharTable();

  static constexpr uint8_t kClassMask = 0x3;
  static constexpr uint8_t kNfcBoundary = 0x4;
  static constexpr uint8_t kNormalizationFrozen = 0x8;

  std::unique_ptr<uint8_t[]> facts_;
};

}  // namespace kipp
