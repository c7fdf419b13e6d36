// Builds the per-code-point facts from utf8proc 15.0 (categories, combining classes, canonical
// decompositions) and the reference-alignment ranges of unicode_tables.h.
#include "tokenizer/char_table.h"

#include <utf8proc.h>

#include "tokenizer/unicode_tables.h"

namespace kipp {
namespace {

constexpr char32_t kWhitespace[] = {0x09, 0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,
                                    0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
constexpr char32_t kGeneralPunctuationSpacesFirst = 0x2000;
constexpr char32_t kGeneralPunctuationSpacesLast = 0x200A;
// Conjoining jamo that compose into Hangul syllables as a second part (vowels and trailing consonants).
constexpr char32_t kJamoVowelFirst = 0x1161, kJamoVowelLast = 0x1175;
constexpr char32_t kJamoTrailFirst = 0x11A8, kJamoTrailLast = 0x11C2;

CharClass class_from_category(utf8proc_category_t category) {
  switch (category) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return CharClass::letter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return CharClass::number;
    default: return CharClass::other;
  }
}

bool has_canonical_decomposition(const utf8proc_property_t& property) {
  return property.decomp_seqindex != UINT16_MAX && property.decomp_type == 0;
}

// True when utf8proc's NFC maps the single character to itself.
bool nfc_keeps(char32_t code_point) {
  utf8proc_int32_t buffer[32];
  const utf8proc_ssize_t length =
      utf8proc_decompose_char(utf8proc_int32_t(code_point), buffer, 32,
                              utf8proc_option_t(UTF8PROC_DECOMPOSE | UTF8PROC_STABLE), nullptr);
  if (length <= 0 || length > 32) return false;
  const utf8proc_ssize_t composed =
      utf8proc_normalize_utf32(buffer, length, utf8proc_option_t(UTF8PROC_COMPOSE | UTF8PROC_STABLE));
  return composed == 1 && buffer[0] == utf8proc_int32_t(code_point);
}

}  // namespace

const CharTable& CharTable::get() {
  static const CharTable table;
  return table;
}

CharTable::CharTable() : facts_(new uint8_t[kCodePoints]) {
  // Pass 1: the regex class and the combining-class part of the NFC boundary test.
  for (char32_t cp = 0; cp < kCodePoints; ++cp) {
    const utf8proc_property_t& property = *utf8proc_get_property(utf8proc_int32_t(cp));
    uint8_t facts = uint8_t(class_from_category(utf8proc_category_t(property.category)));
    if (property.combining_class == 0) facts |= kNfcBoundary;
    facts_[cp] = facts;
  }
  for (char32_t cp : kWhitespace) facts_[cp] = (facts_[cp] & ~kClassMask) | uint8_t(CharClass::whitespace);
  for (char32_t cp = kGeneralPunctuationSpacesFirst; cp <= kGeneralPunctuationSpacesLast; ++cp)
    facts_[cp] = (facts_[cp] & ~kClassMask) | uint8_t(CharClass::whitespace);
  for (const auto& range : unicode::letters_since_15_0())
    for (char32_t cp = range.first; cp <= range.last; ++cp)
      facts_[cp] = (facts_[cp] & ~kClassMask) | uint8_t(CharClass::letter);
  for (const auto& range : unicode::numbers_since_15_0())
    for (char32_t cp = range.first; cp <= range.last; ++cp)
      facts_[cp] = (facts_[cp] & ~kClassMask) | uint8_t(CharClass::number);

  // Pass 2: characters NFC changes, and every non-first part of a canonical decomposition (a
  // possible second half of a composition), are not boundaries.
  for (char32_t cp = 0; cp < kCodePoints; ++cp) {
    const utf8proc_property_t& property = *utf8proc_get_property(utf8proc_int32_t(cp));
    if (!has_canonical_decomposition(property)) continue;
    if (!nfc_keeps(cp)) facts_[cp] &= ~kNfcBoundary;
    utf8proc_int32_t parts[32];
    const utf8proc_ssize_t length =
        utf8proc_decompose_char(utf8proc_int32_t(cp), parts, 32,
                                utf8proc_option_t(UTF8PROC_DECOMPOSE | UTF8PROC_STABLE), nullptr);
    for (utf8proc_ssize_t i = 1; i < length && i < 32; ++i) facts_[char32_t(parts[i])] &= ~kNfcBoundary;
  }
  for (char32_t cp = kJamoVowelFirst; cp <= kJamoVowelLast; ++cp) facts_[cp] &= ~kNfcBoundary;
  for (char32_t cp = kJamoTrailFirst; cp <= kJamoTrailLast; ++cp) facts_[cp] &= ~kNfcBoundary;

  // The reference's normalizer treats these as plain starters: boundaries that NFC keeps.
  for (const auto& range : unicode::normalization_parts_since_9_0())
    for (char32_t cp = range.first; cp <= range.last; ++cp) facts_[cp] |= kNfcBoundary | kNormalizationFrozen;
}

}  // namespace kipp
