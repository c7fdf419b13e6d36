// JSON Schema's `pattern` regular expressions (ECMA-262, Unicode mode) compiled into grammar rules.
//
// A regular expression over code points is a regular language, so it compiles into the grammar
// form exactly: the rule accepts precisely the whole strings that the pattern accepts. A pattern
// is a search, as JSON Schema uses it: the text must *contain* a match, so an alternative that is
// not anchored by ^ (or $) is taken with any text before (after) it. Characters are not spelled
// out here: every set of code points goes through a CharRule, which writes it as the surrounding
// text encodes characters (inside a JSON string: raw UTF-8 or JSON escapes). Within one call, each
// distinct set is asked for once and identical groups become one rule; across calls, sharing is
// the CharRule's to do (by memoizing).
//
// The subset compiled, each construct with its ECMA-262 meaning (Unicode mode: the pattern and
// the text are sequences of code points, not UTF-16 units):
//   literals          any code point other than ^ $ \ . * + ? ( ) [ ] { } |
//   escapes           \\ \/ \- and \ before any of the characters above (\- outside a class as
//                     Annex B reads it: '-'); \n \r \t \f \v; \0 (not before a digit);
//                     \cA..\cZ \ca..\cz; \xHH; \uHHHH (a high and a low surrogate written one
//                     after the other are one code point; a lone surrogate matches nothing, as no
//                     UTF-8 text holds one); \u{H..H}
//   classes           \d \D \w \W (ASCII: [0-9], [A-Za-z0-9_]); \s \S (WhiteSpace and
//                     LineTerminator: U+0009 U+000A U+000B U+000C U+000D U+0020 U+00A0 U+1680
//                     U+2000..U+200A U+2028 U+2029 U+202F U+205F U+3000 U+FEFF); `.` (any code
//                     point but U+000A U+000D U+2028 U+2029); [...] and [^...] with ranges and
//                     the escapes above (\b inside a class is U+0008); [] matches nothing, [^]
//                     any code point
//   properties        \p{..} \P{..} for a General_Category value (gc=V, General_Category=V or V
//                     alone, in the names and aliases ECMA-262 lists) and the binary properties
//                     Any, ASCII and Assigned, from utf8proc's Unicode data (its version:
//                     utf8proc_unicode_version())
//   groups            (...), (?:...), (?<name>...) with an ASCII identifier, each name once
//   alternation       |
//   quantifiers       * + ? {n} {n,} {n,m} and their lazy forms (the same language); counts
//                     up to kMaxRepeatCount
//   anchors           ^ as the first and $ as the last thing of a top-level alternative
// Limits: at most kMaxPatternCodePoints code points, groups nested at most kMaxPatternGroupDepth
// deep, quantifier counts up to kMaxRepeatCount (below).
// Everything else is refused with an error naming the construct and its offset (in code points
// from 0): backreferences, lookaround, \b \B, other property escapes, anchors elsewhere, inline
// modifiers, and what Unicode mode makes a syntax error (a lone { } or ], an unknown escape).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "util/error.h"

namespace kipp::grammar {

// What a pattern may cost, so that one request cannot exhaust the stack, memory or time of the
// server that compiles it; each is refused with an error naming the limit.
// The largest count a quantifier may name: bounded repetition is written out copy by copy.
inline constexpr uint32_t kMaxRepeatCount = 1000;
// The longest pattern, in code points (the longest in JSONSchemaBench's schemas is under 100).
inline constexpr size_t kMaxPatternCodePoints = 8192;
// The deepest nesting of groups: the parser and the writer recurse once per level.
inline constexpr size_t kMaxPatternGroupDepth = 64;
// The nodes that making repeated optional parts non-empty may copy (see without_empty).
inline constexpr size_t kMaxRewrittenNodes = 100'000;

using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive
// Turns a set of code points into a rule matching one of them *as the surrounding text encodes
// it* (inside a JSON string: raw UTF-8 or the JSON escapes; elsewhere: plain UTF-8).
using CharRule = std::function<RuleId(GrammarBuilder&, const CodePointRanges& ranges, bool negated)>;
// Plain UTF-8: builder.utf8_class.
CharRule utf8_char_rule();
// ECMA-262 semantics as JSON Schema uses them: unanchored (the text must *contain* a match)
// unless anchored by ^ / $; the rule matches every whole string (sequence of encoded
// characters) that the pattern accepts, exactly.
// Patterns longer than `max_code_points` are refused: the default is for what requests send; the
// formats' own patterns (string_formats.h), written out by code, are longer and trusted.
Result<RuleId> compile_pattern(GrammarBuilder& builder, std::string_view pattern, const CharRule& char_rule,
                               size_t max_code_points = kMaxPatternCodePoints);

}  // namespace kipp::grammar
