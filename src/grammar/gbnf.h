// GBNF, the grammar language of llama.cpp's `grammar` field, compiled to a Grammar (grammar.h), so
// that the .gbnf files users already have constrain kipp's output the same way.
//
// The syntax is llama.cpp's (its grammars/README.md), parsed as its parser does: `name ::= ...`
// rules; alternatives `|`; groups `( )`; postfix `*` `+` `?` `{m}` `{m,}` `{m,n}`; "literals" and
// [classes] ([^...] negated) over Unicode code points with the escapes \n \r \t \\ \" \[ \] \-
// \xHH \uHHHH \UHHHHHHHH (each names a code point: "\xE9" is U+00E9, two bytes of UTF-8); `.`
// for any code point; `#` comments. A newline ends a rule except right after `::=` or `|` and
// inside parentheses. Code points are matched as their UTF-8 bytes.
//
// Beyond llama.cpp: names may contain '_' as well as letters, digits and '-', and `{,n}` is
// {0,n}. Refused where llama.cpp would guess: a rule defined twice (it keeps the last), a range
// written backwards (it matches nothing), surrogates or code points above U+10FFFF in literals,
// counts above kMaxGbnfRepetition (it treats maxima above 2000 as no maximum), and token
// references (`<[id]>`, `<name>`, `!<...>`): a Grammar constrains text, not token ids.
//
// Errors name the line:column where the text goes wrong and what was expected there; callers add
// the file's name.
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "util/error.h"

namespace kipp::grammar {

// Repetition counts ({m,n}) above this are refused rather than expanded.
inline constexpr uint32_t kMaxGbnfRepetition = 10'000;

// The grammar of `text`, starting at the rule named `root_rule`.
Result<Grammar> compile_gbnf(std::string_view text, std::string_view root_rule = "root");

}  // namespace kipp::grammar
