// Characters and keys inside JSON strings, for the JSON Schema compiler.
//
// A set of code points becomes a rule matching one member in each spelling the grammar allows
// inside a JSON string: raw UTF-8 (what the compact form writes), \" and \\ for the quote and the
// backslash, \/ beside a raw /, and for a control character its short escape (\b \f \n \r \t)
// and \u00XX with hex digits in either case. Other code points are never accepted as \uXXXX:
// the compact form writes them raw, and a rule that spells each character one way keeps length
// counts and exclusions exact without decoding surrogate pairs.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/regex.h"
#include "util/python_json.h"  // escape_json_string: the compact spelling of a string's contents

namespace kipp::grammar {

// One character inside a JSON string, from a set of code points; one rule per distinct set.
class JsonStringChars {
 public:
  RuleId rule(GrammarBuilder& builder, const CodePointRanges& ranges, bool negated);
  RuleId any(GrammarBuilder& builder) { return rule(builder, {}, true); }
  // For compile_pattern and compile_format; valid while this object lives.
  CharRule char_rule();

 private:
  std::map<CodePointRanges, RuleId> rules_;
};

// Whole JSON strings, quotes included, whose value is none of `names` (compared as code points,
// so that every spelling of a named key is excluded): a trie over the names, each node leaving it
// by a character no name continues with.
RuleId string_not_in(GrammarBuilder& builder, JsonStringChars& chars, const std::vector<std::string>& names);

}  // namespace kipp::grammar
