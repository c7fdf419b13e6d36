// The compact serialization C of the JSON Schema contract (grammar/json_schema.h), written for
// the tests independently of the compiler: a JSON reader that keeps every number's lexeme as
// written (nlohmann would turn 1.0 into a double and lose a bignum's digits), and the writer.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"

namespace kipp::grammar::lexical {

struct LexicalMember;

struct LexicalJson {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  std::string text;  // number: the lexeme; string: the decoded UTF-8; boolean: "true" / "false"
  std::vector<LexicalJson> items;
  std::vector<LexicalMember> members;  // in document order, duplicates kept

  // The first member named `key`, or nullptr.
  const LexicalJson* member(std::string_view key) const;
};

// A pair would need LexicalJson complete where it is declared (clang holds libstdc++ to that).
struct LexicalMember {
  std::string key;
  LexicalJson value;
};

Result<LexicalJson> parse_lexical_json(std::string_view text);

// No whitespace; members and items in order; numbers as written; strings with only ", \ and
// control characters escaped (\b \f \n \r \t, others as \u00xx); everything else raw UTF-8.
std::string compact_json(const LexicalJson& value);

}  // namespace kipp::grammar::lexical
