// The object keywords of JSON Schema (json_schema_compiler.h): properties, patternProperties,
// additionalProperties and unevaluatedProperties, required, the member counts.
#include <algorithm>

#include "grammar/json_schema_compiler.h"
#include "grammar/regex.h"

namespace kipp::grammar {

using nlohmann::json;

namespace {

// A keyword whose every entry is trivially met: dependentRequired {"a": []}, dependencies {"a": true}.
bool trivially_met(const json& value) {
  if (!value.is_object()) return false;
  return std::all_of(value.begin(), value.end(), [](const json& entry) {
    return (entry.is_array() && entry.empty()) || (entry.is_boolean() && entry.get<bool>()) ||
           (entry.is_object() && entry.empty());
  });
}

}  // namespace

Result<bool> Compiler::key_matches(const std::string& pattern, const std::string& name) {
  std::shared_ptr<Automaton>& automaton = key_automata_[pattern];  // once, however many keys are asked
  if (!automaton) {
    GrammarBuilder builder;
    JsonStringChars chars;
    KIPP_ASSIGN(const RuleId rule, compile_pattern(builder, pattern, chars.char_rule()));
    KIPP_ASSIGN(Grammar grammar, std::move(builder).finish(rule));
    KIPP_ASSIGN(automaton, Automaton::create(std::move(grammar)));
  }
  KIPP_ASSIGN(const TextCheck check, check_text(*automaton, escape_json_string(name)));
  return check.complete;
}

Result<RuleId> Compiler::patterned_key(const SchemaLocation& schema, const std::vector<std::string>& patterns,
                                       const std::set<std::string>& named) {
  std::vector<Sequence> alternatives;
  for (const std::string& pattern : patterns) {
    for (const std::string& name : named) {
      KIPP_ASSIGN(const bool matches, key_matches(pattern, name));
      if (matches)
        return refusal("patternProperties", schema.pointer,
                       "the named key '" + name + "' matches the pattern '" + pattern + "' too");
    }
    auto rule = compile_pattern(builder_, pattern, chars_.char_rule());
    if (!rule) return refusal("patternProperties", schema.pointer, rule.error().message);
    alternatives.push_back(quoted(*rule));
  }
  return builder_.add("patterned-key", std::move(alternatives));
}

// What the object keywords of a view say, gathered before any rule is built.
struct Compiler::ObjectShape {
  // Each schema object's properties and additionalProperties go together: additionalProperties
  // covers the keys its own properties do not name. Schemas merged by allOf each keep theirs.
  struct Group {
    std::map<std::string, SchemaLocation> properties;
    std::optional<SchemaLocation> additional;
    std::vector<const json*> lineage;
    // patternProperties beside additionalProperties: false, all with one schema: every other key
    // must match a pattern, and its value meet that schema.
    std::vector<std::string> key_patterns;
    std::optional<SchemaLocation> pattern_schema;
  };
  std::map<const json*, Group> groups;
  std::optional<Keyword> first_properties, first_required;  // blamed for too many named members
  std::set<std::string> required;
  std::set<std::string> named;  // the required keys and those of properties
  uint64_t min_members = 0, max_members = UINT64_MAX;
};

Result<std::optional<RuleId>> Compiler::object_rule_of(const View& view) {
  ObjectShape shape;
  KIPP_TRY(gather_properties(view, shape));
  KIPP_TRY(gather_unevaluated_properties(view, shape));
  KIPP_TRY(gather_member_limits(view, shape));
  shape.named = shape.required;
  for (const auto& [origin, group] : shape.groups)
    for (const auto& [property, schema] : group.properties) shape.named.insert(property);
  if (shape.named.size() > Permutation::kMaxMembers) {
    const Keyword& blamed = shape.first_properties ? *shape.first_properties : *shape.first_required;
    KIPP_TRY(
        refuse(blamed, "more than " + std::to_string(Permutation::kMaxMembers) + " named members cannot be tracked"));
    return std::optional<RuleId>(any_object());
  }
  if (shape.required.size() > shape.max_members) return std::optional<RuleId>();
  Permutation permutation;
  permutation.separator = layout_.comma;
  // With room for the required members only, the others are left out (no dead ends for a matcher).
  const bool only_required = shape.required.size() == shape.max_members;
  for (const std::string& property : shape.named) {
    const bool required = shape.required.contains(property);
    if (only_required && !required) continue;
    KIPP_ASSIGN(const std::optional<RuleId> member, named_member(shape, property));
    if (member) permutation.members.push_back({*member, required});
    else if (required) return std::optional<RuleId>();  // no value meets a required member's schemas
  }
  KIPP_ASSIGN(permutation.additional, additional_member(shape, only_required, permutation.members.size()));
  return object_of(shape, std::move(permutation));
}

// properties, patternProperties and additionalProperties, grouped by the schema object they stand in.
Status Compiler::gather_properties(const View& view, ObjectShape& shape) {
  for (const Keyword& keyword : view.all("properties")) {
    if (!keyword.value->is_object()) return refusal(keyword.name, keyword.pointer, "not an object");
    if (!shape.first_properties) shape.first_properties = keyword;
    ObjectShape::Group& group = group_of(shape.groups, keyword);
    for (const auto& [property, schema] : keyword.value->items())
      group.properties.emplace(property, index_.child(keyword.where, schema, "properties", property));
  }
  std::set<const json*> open_groups;  // groups whose patternProperties were left out (strict=false)
  for (const Keyword& keyword : view.all("patternProperties")) {
    if (!keyword.value->is_object()) return refusal(keyword.name, keyword.pointer, "not an object");
    if (keyword.value->empty()) continue;
    const json& first = keyword.value->begin().value();
    const bool one_schema =
        std::all_of(keyword.value->begin(), keyword.value->end(), [&](const json& s) { return s == first; });
    const SchemaLocation schema = index_.child(keyword.where, first, "patternProperties", keyword.value->begin().key());
    KIPP_ASSIGN(const View pattern_view, view_of(schema));
    const bool unconstraining = !pattern_view.never && pattern_view.keywords.empty();
    auto additional = keyword.where.node->find("additionalProperties");
    // The tidy form writes no key beside the patterns that the schema does not ask for.
    const bool closed = additional == keyword.where.node->end() ? options_.form == JsonForm::tidy
                                                                : additional->is_boolean() && !additional->get<bool>();
    if (unconstraining && !closed) continue;  // matching keys may hold anything, as may the others
    if (!closed || !one_schema) {
      KIPP_TRY(refuse(keyword, closed ? "different schemas for different patterns are not combined"
                                      : "keys matching a pattern would need the complement of a regular language"));
      open_groups.insert(keyword.where.node);
      continue;
    }
    ObjectShape::Group& group = group_of(shape.groups, keyword);
    for (const auto& [pattern, pattern_schema] : keyword.value->items()) group.key_patterns.push_back(pattern);
    group.pattern_schema = schema;
  }
  for (const Keyword& keyword : view.all("additionalProperties")) {
    if (open_groups.contains(keyword.where.node)) {
      KIPP_TRY(refuse(keyword, "left out with the patternProperties beside it"));
      continue;
    }
    group_of(shape.groups, keyword).additional = index_.child(keyword.where, *keyword.value, "additionalProperties");
  }
  return {};
}

// unevaluatedProperties: one more group, naming every key its own subschemas evaluated.
Status Compiler::gather_unevaluated_properties(const View& view, ObjectShape& shape) {
  for (const Keyword& keyword : innermost_first(view.all("unevaluatedProperties"))) {
    const SchemaLocation rest = index_.child(keyword.where, *keyword.value, "unevaluatedProperties");
    KIPP_ASSIGN(const bool built,
                unevaluated_enforceable(view, keyword, rest, {"patternProperties", "dependentSchemas"}));
    if (!built) continue;
    ObjectShape::Group own;
    bool everything = false;
    for (const auto& [origin, group] : shape.groups) {
      if (!evaluated_for(group.lineage, keyword)) continue;
      everything |= group.additional.has_value();
      for (const auto& [property, schema] : group.properties) own.properties.emplace(property, unconstrained(keyword));
    }
    if (everything) continue;
    own.additional = rest;
    own.lineage = keyword.lineage();
    shape.groups[keyword.value] = std::move(own);
  }
  return {};
}

// propertyNames (only false is enforced), the dependencies (only where trivially met), required
// and the member counts.
Status Compiler::gather_member_limits(const View& view, ObjectShape& shape) {
  for (const Keyword& keyword : view.all("propertyNames")) {
    KIPP_ASSIGN(View names, view_of(index_.child(keyword.where, *keyword.value, "propertyNames")));
    if (names.never) shape.max_members = 0;
    else if (!names.keywords.empty()) KIPP_TRY(refuse(keyword, "constraints on keys are not enforced"));
  }
  for (const char* key : {"dependentRequired", "dependentSchemas", "dependencies"})
    for (const Keyword& keyword : view.all(key))
      if (!trivially_met(*keyword.value)) KIPP_TRY(refuse(keyword, "dependencies between members are not enforced"));
  for (const Keyword& keyword : view.all("required")) {
    if (!keyword.value->is_array()) return refusal(keyword.name, keyword.pointer, "not an array");
    if (!shape.first_required) shape.first_required = keyword;
    for (const json& name : *keyword.value) {
      if (!name.is_string()) return refusal(keyword.name, keyword.pointer, "not an array of strings");
      shape.required.insert(name.get<std::string>());
    }
  }
  KIPP_ASSIGN(auto member_counts, counts(view, "minProperties", "maxProperties"));
  shape.min_members = member_counts.first;
  shape.max_members = std::min(shape.max_members, member_counts.second);
  for (const char* key : {"minProperties", "maxProperties"})
    for (const Keyword& keyword : view.all(key)) {
      const uint64_t count = count_of(*keyword.value).value_or(0);
      if (count > Permutation::kMaxCounted)
        return refusal(keyword.name, keyword.pointer,
                       "member counts above " + std::to_string(Permutation::kMaxCounted) + " are not tracked");
    }
  return {};
}

// The member named `property`, its value meeting the schemas of every group that speaks of it;
// nullopt where no value can.
Result<std::optional<RuleId>> Compiler::named_member(const ObjectShape& shape, const std::string& property) {
  std::vector<SchemaLocation> sources;
  for (const auto& [origin, group] : shape.groups) {
    bool matched = false;
    for (const std::string& pattern : group.key_patterns) {
      auto matches = key_matches(pattern, property);
      if (!matches) return refusal("patternProperties", group.pattern_schema->pointer, matches.error().message);
      matched |= *matches;
    }
    if (matched) sources.push_back(*group.pattern_schema);
    if (auto found = group.properties.find(property); found != group.properties.end()) sources.push_back(found->second);
    else if (group.additional && !matched) sources.push_back(*group.additional);
  }
  KIPP_ASSIGN(const bool impossible, is_never(sources));
  if (impossible) return std::optional<RuleId>();
  KIPP_ASSIGN(const RuleId value, value_of(sources, "property"));
  Sequence key = builder_.literal("\"" + escape_json_string(property) + "\"");
  return std::optional<RuleId>(member_rule(std::move(key), value, "member"));
}

// The members with keys that no group names, where any may stand: nullopt when every group closes
// them, there is room for the required members only, or the tidy form leaves them out beside the
// `listed` members that can stand.
Result<std::optional<RuleId>> Compiler::additional_member(const ObjectShape& shape, bool only_required, size_t listed) {
  std::vector<SchemaLocation> sources;
  const ObjectShape::Group* patterned = nullptr;
  for (const auto& [origin, group] : shape.groups) {
    if (!group.key_patterns.empty()) {
      if (patterned)
        return refusal("patternProperties", group.pattern_schema->pointer,
                       "patterned keys of two subschemas are not intersected");
      patterned = &group;
      sources.push_back(*group.pattern_schema);
    } else if (group.additional) {
      sources.push_back(*group.additional);
    }
  }
  KIPP_ASSIGN(const bool closed, is_never(sources));
  if (closed || only_required || unasked(shape, listed)) return std::optional<RuleId>();
  KIPP_ASSIGN(const RuleId value, value_of(sources, "additional"));
  RuleId key = 0;
  if (patterned) {
    KIPP_ASSIGN(key, patterned_key(*patterned->pattern_schema, patterned->key_patterns, shape.named));
  } else {
    key =
        shape.named.empty() ? any_string() : string_not_in(builder_, chars_, {shape.named.begin(), shape.named.end()});
  }
  return std::optional<RuleId>(member_rule({GrammarBuilder::call(key)}, value, "additional-member"));
}

// Whether the tidy form leaves out the members no group names: the schema names some, says nothing
// of others (no additionalProperties, patternProperties or unevaluatedProperties) and does not
// need more members than the `listed` ones that can stand.
bool Compiler::unasked(const ObjectShape& shape, size_t listed) const {
  if (options_.form != JsonForm::tidy || shape.named.empty() || shape.min_members > listed) return false;
  return std::none_of(shape.groups.begin(), shape.groups.end(), [](const auto& entry) {
    return entry.second.additional.has_value() || !entry.second.key_patterns.empty();
  });
}

RuleId Compiler::member_rule(Sequence key, RuleId value, std::string_view name) {
  key.push_back(GrammarBuilder::call(layout_.colon));
  key.push_back(GrammarBuilder::call(value));
  return builder_.add(name, {std::move(key)});
}

// "{ }" where no member is needed, and the permutation of the members where one may stand; nullopt
// where neither is possible.
std::optional<RuleId> Compiler::object_of(const ObjectShape& shape, Permutation permutation) {
  std::vector<Sequence> alternatives;
  if (shape.min_members == 0 && shape.required.empty()) alternatives.push_back(enclosed('{', {}, '}'));
  const bool enough = permutation.additional || permutation.members.size() >= std::max<uint64_t>(shape.min_members, 1);
  if (shape.max_members >= 1 && enough) {
    permutation.min_members = uint32_t(std::max<uint64_t>(shape.min_members, 1));
    permutation.max_members = shape.max_members == UINT64_MAX ? Permutation::kUnbounded : uint32_t(shape.max_members);
    alternatives.push_back(enclosed('{', {builder_.permutation(std::move(permutation))}, '}'));
  }
  if (alternatives.empty()) return std::nullopt;
  return builder_.add("object", std::move(alternatives));
}

RuleId Compiler::any_object() {
  if (any_object_) return *any_object_;
  any_object_ = builder_.declare("any-object");
  const RuleId value = any_value();
  const RuleId member = member_rule({GrammarBuilder::call(any_string())}, value, "any-member");
  const RuleId next_member =
      builder_.add("any-next-member", {{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(member)}});
  const RuleId more = builder_.repeat("any-members", GrammarBuilder::call(next_member), 0, GrammarBuilder::kUnbounded);
  Sequence empty = enclosed('{', {}, '}');
  Sequence object = enclosed('{', {GrammarBuilder::call(member), GrammarBuilder::call(more)}, '}');
  builder_.set_alternatives(*any_object_, {std::move(empty), std::move(object)});
  return *any_object_;
}

}  // namespace kipp::grammar
