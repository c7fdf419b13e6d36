// The few places where the reference tokenizer's Unicode data differs from utf8proc 15.0, the
// library Kipp links: its split regex classifies code points by Unicode 16.0, and its NFC
// normalizer carries Unicode 9.0 data (docs/TOKENIZER.md, "Unicode versions").
#pragma once

#include <span>

namespace kipp::unicode {

struct CodePointRange {
  char32_t first;
  char32_t last;  // inclusive
};

// General_Category L* (and N*) code points that Unicode 15.1 and 16.0 assigned: letters and
// digits to the reference's \p{L} (\p{N}), unassigned to utf8proc 15.0.
std::span<const CodePointRange> letters_since_15_0();
std::span<const CodePointRange> numbers_since_15_0();

// Code points assigned after Unicode 9.0 that take part in normalization in later versions:
// non-starters (canonical combining class > 0) and the parts of the one canonical composition
// added since (U+11935 U+11930 -> U+11938, Unicode 13.0). The reference's normalizer knows none
// of them, so for it they are plain starters that neither reorder nor compose.
std::span<const CodePointRange> normalization_parts_since_9_0();

}  // namespace kipp::unicode
