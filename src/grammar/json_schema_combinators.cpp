// The applicators and literal values of JSON Schema (json_schema_compiler.h): allOf and $ref merged
// into one view, anyOf and oneOf distributed over their siblings, not of types, enum and const.
#include <algorithm>

#include "grammar/json_schema_compiler.h"

namespace kipp::grammar {

using nlohmann::json;

namespace {

constexpr size_t kMaxCombinations = 256;  // anyOf/oneOf branches after distribution

// The numbers inside a value (an enum's or const's).
size_t numbers_in(const json& value) {
  if (value.is_number()) return 1;
  size_t count = 0;
  if (value.is_structured())
    for (const json& part : value) count += numbers_in(part);
  return count;
}

bool no_common_value(const std::vector<json>& a, const std::vector<json>& b) {
  JsonValueSet in_a;
  for (const json& x : a) in_a.insert(x);
  return std::none_of(b.begin(), b.end(), [&](const json& y) { return in_a.contains(y); });
}

// What a schema's values must look like, as far as cheaply known: enough to prove that two
// branches of a oneOf never accept the same value.
struct Signature {
  uint8_t types = kAllTypes;
  std::optional<std::vector<json>> values;        // enum / const
  std::map<std::string, std::vector<json>> tags;  // required properties with enum / const values
  std::set<std::string> required;
  std::vector<std::set<std::string>> closed;  // per additionalProperties: false, the keys it allows
};

// Objects of `a` have a key that `b` forbids, or a tag value that `b` does not allow.
bool objects_apart(const Signature& a, const Signature& b) {
  for (const auto& [property, values] : a.tags)
    if (auto other = b.tags.find(property); other != b.tags.end() && no_common_value(values, other->second))
      return true;
  for (const std::string& key : a.required)
    for (const auto& allowed : b.closed)
      if (!allowed.contains(key)) return true;
  return false;
}

std::optional<std::vector<json>> finite_values(const View& view) {
  std::optional<std::vector<json>> values;
  for (const char* key : {"enum", "const"})
    for (const Keyword& keyword : view.all(key)) {
      std::vector<json> these;
      if (keyword.name == "const") these.push_back(*keyword.value);
      else if (keyword.value->is_array()) these.assign(keyword.value->begin(), keyword.value->end());
      else continue;
      if (!values) {
        values = std::move(these);
        continue;
      }
      JsonValueSet allowed;
      for (const json& value : these) allowed.insert(value);
      std::erase_if(*values, [&](const json& v) { return !allowed.contains(v); });
    }
  return values;
}

}  // namespace

// Merges allOf and $ref (beside other keywords, from 2019-09 on) into the view: their keywords
// apply to the same value. A schema merged twice adds nothing, which also ends cycles.
Status Compiler::expand(View& view, Merged& merged) {
  for (;;) {
    std::vector<Keyword> pending;
    for (const char* key : {"allOf", "$ref"}) {
      auto found = view.keywords.find(key);
      if (found == view.keywords.end()) continue;
      pending.insert(pending.end(), found->second.begin(), found->second.end());
      view.keywords.erase(found);
    }
    if (pending.empty()) return {};
    for (const Keyword& keyword : pending) {
      std::vector<SchemaLocation> targets;
      if (keyword.name == "allOf") {
        if (!keyword.value->is_array() || keyword.value->empty())
          return refusal(keyword.name, keyword.pointer, "not a non-empty array of schemas");
        for (size_t i = 0; i < keyword.value->size(); ++i)
          targets.push_back(index_.child(keyword.where, (*keyword.value)[i], "allOf", std::to_string(i)));
      } else {
        KIPP_ASSIGN(SchemaLocation target, target_of(keyword));  // refused whatever `strict` says
        targets.push_back(std::move(target));
      }
      for (const SchemaLocation& target : targets) {
        if (!merged.insert(target.node).second) {
          view.rejoined = true;
          continue;
        }
        KIPP_ASSIGN(View more, view_of(target));
        more.applied_through(keyword);
        view.take(std::move(more));
      }
    }
  }
}

Result<RuleId> Compiler::distribute(View view, const std::string& name, const Merged& merged) {
  std::vector<std::vector<SchemaLocation>> choices;
  std::vector<Keyword> applicators;
  for (const char* key : {"anyOf", "oneOf"}) {
    for (const Keyword& keyword : view.all(key)) {
      if (!keyword.value->is_array() || keyword.value->empty())
        return refusal(keyword.name, keyword.pointer, "not a non-empty array of schemas");
      std::vector<SchemaLocation> branches;
      for (size_t i = 0; i < keyword.value->size(); ++i)
        branches.push_back(index_.child(keyword.where, (*keyword.value)[i], key, std::to_string(i)));
      if (keyword.name == "oneOf" && branches.size() > 1) {
        KIPP_ASSIGN(const bool disjoint, provably_disjoint(branches, merged));
        if (!disjoint)
          KIPP_TRY(refuse(keyword, "its subschemas are not provably disjoint, so 'exactly one' cannot be enforced"));
      }
      choices.push_back(std::move(branches));
      applicators.push_back(keyword);
    }
    view.keywords.erase(key);
  }
  size_t combinations = 1;
  for (const auto& branches : choices) {
    combinations *= branches.size();
    if (combinations > kMaxCombinations)
      return refusal(applicators[0].name, applicators[0].pointer,
                     "with its sibling applicators the alternatives exceed " + std::to_string(kMaxCombinations));
  }
  std::vector<RuleId> alternatives;
  if (choices.size() == 1 && view.keywords.empty()) {
    // Nothing else applies: each branch is its schema's shared rule.
    for (const SchemaLocation& branch : choices[0]) {
      KIPP_ASSIGN(const RuleId rule, node_rule(branch, applicators[0].pointer));
      alternatives.push_back(rule);
    }
    return choice(name, std::move(alternatives));
  }
  // Otherwise (A or B) and C is (A and C) or (B and C), each merged into one view.
  std::vector<size_t> pick(choices.size(), 0);
  for (size_t n = 0; n < combinations; ++n) {
    View combined = view;
    combined.distributed = true;
    Merged seen = merged;
    for (size_t k = 0, rest = n; k < choices.size(); ++k) {
      const SchemaLocation& branch = choices[k][rest % choices[k].size()];
      rest /= choices[k].size();
      if (!seen.insert(branch.node).second) {
        combined.rejoined = true;
        continue;
      }
      KIPP_ASSIGN(View more, view_of(branch));
      more.applied_through(applicators[k]);
      combined.take(std::move(more));
    }
    KIPP_ASSIGN(const RuleId rule, view_rule(std::move(combined), name + "-case", std::move(seen)));
    alternatives.push_back(rule);
  }
  return choice(name, std::move(alternatives));
}

Result<bool> Compiler::provably_disjoint(const std::vector<SchemaLocation>& branches, const Merged& merged) {
  std::vector<Signature> signatures;
  for (const SchemaLocation& branch : branches) {
    Signature signature;
    Merged seen = merged;
    seen.insert(branch.node);
    KIPP_ASSIGN(View view, view_of(branch));
    KIPP_TRY(expand(view, seen));
    if (view.never) signature.types = 0;
    for (const Keyword& type : view.all("type")) {
      uint8_t bits = 0;
      for (const json& name : type.value->is_array() ? *type.value : json::array({*type.value}))
        bits |= type_bits(name).value_or(kAllTypes);
      signature.types &= bits;
    }
    signature.values = finite_values(view);
    if (signature.values) {
      uint8_t bits = 0;
      for (const json& value : *signature.values) bits |= type_of(value);
      signature.types &= bits;
    }
    std::set<std::string>& required = signature.required;
    for (const Keyword& keyword : view.all("required"))
      if (keyword.value->is_array())
        for (const json& name : *keyword.value)
          if (name.is_string()) required.insert(name.get<std::string>());
    for (const Keyword& keyword : view.all("additionalProperties")) {
      if (!(keyword.value->is_boolean() && !keyword.value->get<bool>())) continue;
      const json& object = *keyword.where.node;
      auto patterns = object.find("patternProperties");
      if (patterns != object.end() && !(patterns->is_object() && patterns->empty())) continue;
      std::set<std::string> allowed;
      if (auto properties = object.find("properties"); properties != object.end() && properties->is_object())
        for (const auto& [property, schema] : properties->items()) allowed.insert(property);
      signature.closed.push_back(std::move(allowed));
    }
    for (const Keyword& keyword : view.all("properties")) {
      if (!keyword.value->is_object()) continue;
      for (const auto& [property, schema] : keyword.value->items()) {
        if (!required.contains(property) || signature.tags.contains(property)) continue;
        Merged inner;
        KIPP_ASSIGN(View property_view, view_of(index_.child(keyword.where, schema, "properties", property)));
        KIPP_TRY(expand(property_view, inner));
        if (auto values = finite_values(property_view)) signature.tags[property] = std::move(*values);
      }
    }
    signatures.push_back(std::move(signature));
  }
  for (size_t i = 0; i < signatures.size(); ++i)
    for (size_t j = i + 1; j < signatures.size(); ++j) {
      const Signature &a = signatures[i], &b = signatures[j];
      const uint8_t common = a.types & b.types;
      if (common == 0) continue;
      if (a.values && b.values && no_common_value(*a.values, *b.values)) continue;
      if (common == kObject && (objects_apart(a, b) || objects_apart(b, a))) continue;
      return false;
    }
  return true;
}

Status Compiler::apply_not(const Keyword& keyword, uint8_t& types) {
  const SchemaLocation inner = index_.child(keyword.where, *keyword.value, "not");
  KIPP_ASSIGN(View view, view_of(inner));
  if (view.never) return {};  // not false: no constraint
  if (view.keywords.empty()) {
    types = 0;  // not true: nothing
    return {};
  }
  const auto* type = view.find("type");
  if (view.keywords.size() == 1 && type && type->size() == 1) {
    const json& names = *(*type)[0].value;
    uint8_t bits = 0;
    for (const json& name : names.is_array() ? names : json::array({names})) {
      auto named = type_bits(name);
      if (!named) return refuse(keyword, "its type names no JSON type");
      bits |= *named;
    }
    // Leaving numbers that are not integers would need a grammar of fractions only.
    if ((types & kFraction) && (bits & (kInteger | kFraction)) == kInteger)
      return refuse(keyword, "numbers other than integers are not built");
    types &= uint8_t(~bits);
    return {};
  }
  return refuse(keyword, "negation is enforced only of types");
}

Result<RuleId> Compiler::literal_choice(View view, uint8_t types, const std::string& name, const Merged& merged) {
  const Keyword first = view.find("enum") ? view.all("enum")[0] : view.all("const")[0];
  for (const Keyword& keyword : view.all("enum"))
    if (!keyword.value->is_array()) return refusal(keyword.name, keyword.pointer, "not an array");
  std::vector<json> values = finite_values(view).value_or(std::vector<json>{});
  view.keywords.erase("enum");
  view.keywords.erase("const");
  const bool only_types =
      std::all_of(view.keywords.begin(), view.keywords.end(), [](const auto& k) { return k.first == "type"; });
  std::vector<json> candidates;
  JsonValueSet distinct;
  for (const json& value : values)
    if ((type_of(value) & types) && distinct.insert(value)) candidates.push_back(value);
  std::vector<bool> valid(candidates.size(), true);
  if (!only_types && !candidates.empty()) {
    auto checked = accepted(view, candidates, merged);
    if (!checked) {
      if (parse_refusal(checked.error().message)) return checked.error();
      return refusal(first.name, first.pointer, "its values could not be checked: " + checked.error().message);
    }
    valid = std::move(checked).value();
  }
  for (size_t i = 0; i < candidates.size(); ++i)
    if (valid[i]) KIPP_TRY(spend_numbers(first, numbers_in(candidates[i])));
  std::vector<Sequence> alternatives;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!valid[i]) continue;
    const json& value = candidates[i];
    auto rule = literal_rule(builder_, layout_, value);
    if (!rule) return refusal(first.name, first.pointer, rule.error().message);
    alternatives.push_back({GrammarBuilder::call(*rule)});
  }
  if (alternatives.empty()) return never();
  return builder_.add(name, std::move(alternatives));
}

// Whether the other keywords accept the values of enum / const: each value's compact text checked
// against their own grammar, which is exact.
Result<std::vector<bool>> Compiler::accepted(const View& rest, const std::vector<json>& values, const Merged& merged) {
  if (depth_ >= kMaxCheckDepth) return fail("enum values checked against keywords that nest enum values too deeply");
  Compiler checker(options_, index_, unenforced_, budget_, depth_ + 1);
  KIPP_ASSIGN(const RuleId rule, checker.view_rule(rest, "value", merged));
  if (checker.matches_nothing(rule)) return std::vector<bool>(values.size(), false);
  KIPP_ASSIGN(Grammar grammar, std::move(checker.builder_).finish(rule));
  KIPP_ASSIGN(auto automaton, Automaton::create(std::move(grammar)));
  std::vector<bool> out;
  for (const json& value : values) {
    KIPP_ASSIGN(const TextCheck check, check_text(*automaton, plain_json(value)));
    out.push_back(check.complete);
  }
  return out;
}

}  // namespace kipp::grammar
