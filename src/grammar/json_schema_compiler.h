// The JSON Schema compiler's own state, shared by the files that compile one concern each:
// json_schema.cpp (the entry point, views and dispatch by type), json_schema_combinators.cpp
// (allOf, $ref, anyOf, oneOf, not, enum and const), json_schema_objects.cpp, json_schema_arrays.cpp
// and json_schema_scalars.cpp (numbers and strings). Private to them; json_schema.h is the interface.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_refs.h"
#include "grammar/json_schema_strings.h"
#include "grammar/json_schema_values.h"
#include "grammar/matcher.h"
#include "util/error.h"

namespace kipp::grammar {

// The JSON types as a partition of the values: a number is an integer or a fraction, so that
// "integer" and "number" intersect and complement exactly.
enum TypeBit : uint8_t {
  kNull = 1,
  kBoolean = 2,
  kObject = 4,
  kArray = 8,
  kString = 16,
  kFraction = 32,
  kInteger = 64
};
constexpr uint8_t kAllTypes = 127;

// Limits that keep a request from building a huge grammar; beyond them the keyword is refused.
constexpr uint64_t kMaxCount = 100'000;  // minLength, maxLength, minItems, maxItems written out

// The bits of a type name ("number" is both integer and fraction); nullopt for anything else.
std::optional<uint8_t> type_bits(const nlohmann::json& name);
// The one bit of a value's type (a number's by whether it is an integer).
uint8_t type_of(const nlohmann::json& value);

// The error "keyword '<keyword>' at <pointer>: <reason>" that parse_refusal reads back.
Error refusal(std::string_view keyword, const std::string& pointer, std::string_view reason);

// One occurrence of a keyword, with the schema object it belongs to (for its base URI and draft).
struct Keyword {
  std::string name;
  const nlohmann::json* value;
  SchemaLocation where;
  std::string pointer;
  // The schema objects whose allOf, $ref, anyOf or oneOf brought this keyword into the view,
  // outermost first: unevaluatedProperties sees what its own subschemas evaluated, no more.
  std::vector<const nlohmann::json*> applied_by;

  std::vector<const nlohmann::json*> lineage() const {
    std::vector<const nlohmann::json*> out = applied_by;
    out.push_back(where.node);
    return out;
  }
};

// The keywords that apply to one value: a schema object's, plus those of the schemas merged into
// it (allOf, $ref beside other keywords), each keyword with every occurrence.
struct View {
  bool never = false;
  bool distributed = false;  // an anyOf / oneOf branch was merged in
  bool rejoined = false;     // a schema reached twice was merged once
  std::map<std::string, std::vector<Keyword>, std::less<>> keywords;

  const std::vector<Keyword>* find(std::string_view name) const {
    auto found = keywords.find(name);
    return found == keywords.end() ? nullptr : &found->second;
  }
  std::vector<Keyword> all(std::string_view name) const {
    const auto* found = find(name);
    return found ? *found : std::vector<Keyword>{};
  }
  // Marks every keyword as brought in by `applicator`.
  void applied_through(const Keyword& applicator) {
    const std::vector<const nlohmann::json*> outer = applicator.lineage();
    for (auto& [name, list] : keywords)
      for (Keyword& keyword : list) keyword.applied_by.insert(keyword.applied_by.begin(), outer.begin(), outer.end());
  }
  void take(View other) {
    never |= other.never;
    distributed |= other.distributed;
    rejoined |= other.rejoined;
    for (auto& [name, list] : other.keywords) {
      auto& mine = keywords[name];
      mine.insert(mine.end(), std::make_move_iterator(list.begin()), std::make_move_iterator(list.end()));
    }
  }
};

using Merged = std::set<const nlohmann::json*>;

// A count keyword's value (minLength 2 or 2.0).
std::optional<uint64_t> count_of(const nlohmann::json& value);
// A count keyword's values combined: the largest minimum, the smallest maximum.
Result<std::pair<uint64_t, uint64_t>> counts(const View& view, const char* min_key, const char* max_key);

// Keywords (unevaluatedProperties, unevaluatedItems) innermost first, the most applicators above
// them: an inner one evaluates everything for the outer ones.
std::vector<Keyword> innermost_first(std::vector<Keyword> keywords);
// Whether the keywords brought in through `lineage` count as evaluated for `unevaluated` (an
// unevaluatedProperties or unevaluatedItems): they stand in its own schema object or in one it applies.
bool evaluated_for(const std::vector<const nlohmann::json*>& lineage, const Keyword& unevaluated);

// The group of the schema object that `keyword` stands in, where keywords go together per schema
// object (properties with additionalProperties, prefixItems with items and additionalItems).
template <class Group>
Group& group_of(std::map<const nlohmann::json*, Group>& groups, const Keyword& keyword) {
  Group& group = groups[keyword.where.node];
  group.lineage = keyword.lineage();
  return group;
}

// What a compilation has spent against the limits of json_schema.h, shared by the compilers that
// check enum values inside it (they run inside its own calls).
struct CompileBudget {
  size_t nesting = 0;  // node_rule calls in progress
  size_t views = 0;    // view_rule calls so far
  size_t numbers = 0;  // digit automata built: bounds, multipleOf and number literals
};

class Compiler {
 public:
  Compiler(const SchemaOptions& options, SchemaIndex& index, std::vector<Unenforced>& unenforced, CompileBudget& budget,
           int depth = 0)
      : options_(options),
        index_(index),
        unenforced_(unenforced),
        layout_(JsonLayout::create(builder_, options)),
        depth_(depth),
        budget_(budget) {}

  // The rule for a schema's values, shared by every use of the schema (recursion included).
  Result<RuleId> node_rule(const SchemaLocation& location, const std::string& via);

  Result<Grammar> finish(RuleId value) && {
    Sequence root;
    layout_.space(root);
    root.push_back(GrammarBuilder::call(value));
    layout_.space(root);
    return std::move(builder_).finish(builder_.add("root", {std::move(root)}));
  }

  bool matches_nothing(RuleId rule) const { return empty_rules_.contains(rule); }

 private:
  // json_schema.cpp: views of schemas and the dispatch by type.
  Status refuse(const Keyword& keyword, std::string_view reason);
  // Each number rule is a digit automaton of its own (milliseconds and ~100 KB): refused past
  // kMaxSchemaNumbers for the whole schema, however they are spread over enums and subschemas.
  Status spend_numbers(const Keyword& keyword, size_t count);
  Result<View> view_of(const SchemaLocation& location);
  Result<SchemaLocation> target_of(const Keyword& ref);
  Result<RuleId> nested(const SchemaLocation& location);
  Result<RuleId> view_rule(View view, const std::string& name, Merged merged);
  Result<RuleId> typed_rule(View view, const std::string& name, const Merged& merged);
  Result<RuleId> value_of(std::vector<SchemaLocation> sources, const std::string& name);
  // Whether an unevaluatedProperties / unevaluatedItems is built: refused (false) where the view
  // cannot tell what was evaluated: after anyOf / oneOf were distributed, beside `if`, dynamic
  // references or the given keywords.
  Result<bool> unevaluated_enforceable(const View& view, const Keyword& keyword, const SchemaLocation& rest,
                                       std::initializer_list<const char*> evaluators);
  static SchemaLocation unconstrained(const Keyword& keyword);
  Result<bool> is_never(const std::vector<SchemaLocation>& sources);
  // A rule for any of `options`, leaving out those known to match nothing.
  RuleId choice(const std::string& name, std::vector<RuleId> options);
  // `items` between the brackets `open` and `close`, with room for whitespace inside: "{ }", "[ 1 ]".
  Sequence enclosed(char open, Sequence items, char close);
  RuleId any_value();
  RuleId never();

  // json_schema_combinators.cpp: applicators and literal values.
  Status expand(View& view, Merged& merged);
  Result<RuleId> distribute(View view, const std::string& name, const Merged& merged);
  Result<bool> provably_disjoint(const std::vector<SchemaLocation>& branches, const Merged& merged);
  Status apply_not(const Keyword& keyword, uint8_t& types);
  Result<RuleId> literal_choice(View view, uint8_t types, const std::string& name, const Merged& merged);
  // Which of `values` the keywords of `rest` accept.
  Result<std::vector<bool>> accepted(const View& rest, const std::vector<nlohmann::json>& values, const Merged& merged);

  // json_schema_objects.cpp.
  struct ObjectShape;
  Result<std::optional<RuleId>> object_rule_of(const View& view);
  Status gather_properties(const View& view, ObjectShape& shape);
  Status gather_unevaluated_properties(const View& view, ObjectShape& shape);
  Status gather_member_limits(const View& view, ObjectShape& shape);
  Result<std::optional<RuleId>> named_member(const ObjectShape& shape, const std::string& property);
  Result<std::optional<RuleId>> additional_member(const ObjectShape& shape, bool only_required, size_t listed);
  bool unasked(const ObjectShape& shape, size_t listed) const;
  // One member: `key`, the colon, then `value`.
  RuleId member_rule(Sequence key, RuleId value, std::string_view name);
  std::optional<RuleId> object_of(const ObjectShape& shape, Permutation permutation);
  // Whether the key `name` matches `pattern` (as patternProperties reads it).
  Result<bool> key_matches(const std::string& pattern, const std::string& name);
  // Keys matching one of `patterns`, refused where a named key matches one: excluding it would
  // need an intersection.
  Result<RuleId> patterned_key(const SchemaLocation& schema, const std::vector<std::string>& patterns,
                               const std::set<std::string>& named);
  RuleId any_object();

  // json_schema_arrays.cpp.
  struct ArrayShape;
  Result<std::optional<RuleId>> array_rule_of(const View& view);
  Status gather_items(const View& view, ArrayShape& shape);
  Status gather_unevaluated_items(const View& view, ArrayShape& shape);
  Status gather_item_limits(const View& view, ArrayShape& shape);
  Result<RuleId> item_rule(ArrayShape& shape, size_t i);
  Result<Sequence> array_items(ArrayShape& shape);

  // json_schema_scalars.cpp.
  Result<std::optional<RuleId>> number_rule_of(const View& view, bool integer_only);
  Result<std::optional<RuleId>> string_rule_of(const View& view);
  // A JSON string whose contents match `content`.
  Sequence quoted(RuleId content);
  RuleId any_string();

  const SchemaOptions& options_;
  SchemaIndex& index_;
  std::vector<Unenforced>& unenforced_;
  GrammarBuilder builder_;
  JsonLayout layout_;
  JsonStringChars chars_;
  std::map<const nlohmann::json*, RuleId> rules_;
  // The schemas whose rules are being built at the current text position: reaching one again
  // before a character is read would be left recursion.
  std::vector<const nlohmann::json*> position_;
  // Checking enum values compiles their sibling keywords with a compiler of its own, which may
  // meet the same enum again in a recursive schema: the nesting is bounded.
  int depth_;
  static constexpr int kMaxCheckDepth = 4;
  CompileBudget& budget_;
  std::optional<RuleId> any_value_, any_object_, any_string_, never_;
  std::set<RuleId> empty_rules_;  // rules known to match nothing: never() and rules only calling it
  std::map<std::string, std::shared_ptr<Automaton>> key_automata_;  // key_matches' patterns
};

}  // namespace kipp::grammar
