// JSON values as grammar rules, for the JSON Schema compiler: the layout between tokens, the
// literals of const and enum, and JSON equality (1 == 1.0, objects without member order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema_numbers.h"
#include "util/error.h"

namespace kipp::grammar {

// What may stand between tokens: whitespace, at most max_whitespace characters in a row.
struct JsonLayout {
  std::optional<RuleId> ws;  // none when no whitespace is allowed
  RuleId comma;              // ws , ws
  RuleId colon;              // ws : ws

  static JsonLayout create(GrammarBuilder& builder, uint32_t max_whitespace);
  void space(Sequence& sequence) const {
    if (ws) sequence.push_back(GrammarBuilder::call(*ws));
  }
};

// A number of a schema as an exact decimal. nlohmann keeps integers exact but reads other numbers
// as doubles; one of magnitude 2^53 or more may have been rounded, so it is refused.
Result<Decimal> schema_number(const nlohmann::json& number);

// JSON equality as JSON Schema defines it: numbers by value, objects without member order.
bool json_equal(const nlohmann::json& a, const nlohmann::json& b);

// The compact text of a value with numbers written without exponent.
std::string plain_json(const nlohmann::json& value);

// The texts equal to `value` (numbers in every exponent-free spelling of their value, object
// members in any order, whitespace per the layout).
Result<RuleId> literal_rule(GrammarBuilder& builder, const JsonLayout& layout, const nlohmann::json& value);

}  // namespace kipp::grammar
