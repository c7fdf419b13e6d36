// JSON values as grammar rules, for the JSON Schema compiler: the layout between tokens, the
// literals of const and enum, and JSON equality (1 == 1.0, objects without member order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_numbers.h"
#include "util/error.h"

namespace kipp::grammar {

// What may stand between tokens: in the exact form, whitespace, at most max_whitespace characters
// in a row; in the tidy form, one optional space after ',' and ':' and nothing elsewhere.
struct JsonLayout {
  std::optional<RuleId> ws;  // none when no whitespace is allowed
  RuleId comma;              // ws , ws
  RuleId colon;              // ws : ws

  static JsonLayout create(GrammarBuilder& builder, const SchemaOptions& options);
  void space(Sequence& sequence) const {
    if (ws) sequence.push_back(GrammarBuilder::call(*ws));
  }
};

// A number of a schema as an exact decimal. nlohmann keeps integers exact but reads other numbers
// as doubles; one of magnitude 2^53 or more may have been rounded, so it is refused.
Result<Decimal> schema_number(const nlohmann::json& number);

// JSON equality as JSON Schema defines it: numbers by value, objects without member order.
bool json_equal(const nlohmann::json& a, const nlohmann::json& b);

// Values that json_equal may call equal (by a key that every equal value shares), so that finding
// an equal value compares only within its key: near linear where comparing every pair of a large
// enum would take time growing with its square.
class JsonValueSet {
 public:
  bool contains(const nlohmann::json& value) const;
  // False when an equal value was already there.
  bool insert(const nlohmann::json& value);

 private:
  static std::string key_of(const nlohmann::json& value);
  std::unordered_map<std::string, std::vector<nlohmann::json>> by_key_;
};

// Refuses a value nested deeper than `limit` levels, naming the JSON pointer where it gets there;
// iterative, so that any depth is safe to check (the compilers after it recurse per level).
Status check_json_depth(const nlohmann::json& value, size_t limit);

// The compact text of a value with numbers written without exponent.
std::string plain_json(const nlohmann::json& value);

// The texts equal to `value` (numbers in every exponent-free spelling of their value, object
// members in any order, whitespace per the layout).
Result<RuleId> literal_rule(GrammarBuilder& builder, const JsonLayout& layout, const nlohmann::json& value);

}  // namespace kipp::grammar
