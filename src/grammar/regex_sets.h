// The code point sets a pattern names (regex.h lists them): the class escapes, `.`, and the
// Unicode properties of \p{..} from utf8proc's data. Every set is normalized: sorted, merged,
// without surrogates (no UTF-8 text holds one). Private to the pattern compiler.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "grammar/regex.h"

namespace kipp::grammar::pattern {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// `ranges` sorted, merged and without surrogates.
CodePointRanges normalized(CodePointRanges ranges);
// Every code point outside `set` (a normalized set); the result is normalized too.
CodePointRanges complement(const CodePointRanges& set);
const CodePointRanges& digit_set();  // \d
const CodePointRanges& word_set();   // \w
const CodePointRanges& space_set();  // \s: ECMA-262 WhiteSpace (with every Space_Separator) and LineTerminator
const CodePointRanges& dot_set();    // `.`
// The value of \p{text}: a General_Category value, or one of the binary properties that need no
// data beyond the categories; nullopt for a name not known.
std::optional<CodePointRanges> property(std::string_view text);

}  // namespace kipp::grammar::pattern
