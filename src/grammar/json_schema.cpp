#include "grammar/json_schema.h"

#include <algorithm>
#include <map>
#include <set>

#include "grammar/json_schema_numbers.h"
#include "grammar/json_schema_refs.h"
#include "grammar/json_schema_strings.h"
#include "grammar/json_schema_values.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/string_formats.h"

namespace kipp::grammar {

using nlohmann::json;

namespace {

// The JSON types as a partition of the values: a number is an integer or a fraction, so that
// "integer" and "number" intersect and complement exactly.
enum TypeBit : uint8_t { kNull = 1, kBoolean = 2, kObject = 4, kArray = 8, kString = 16, kFraction = 32, kInteger = 64 };
constexpr uint8_t kAllTypes = 127;

// Limits that keep a request from building a huge grammar; beyond them the keyword is refused.
constexpr uint64_t kMaxCount = 100'000;   // minLength, maxLength, minItems, maxItems written out
constexpr size_t kMaxCombinations = 256;  // anyOf/oneOf branches after distribution

std::optional<uint8_t> type_bits(const json& name) {
  static constexpr std::pair<std::string_view, uint8_t> kTypes[] = {
      {"null", kNull},     {"boolean", kBoolean}, {"object", kObject},           {"array", kArray},
      {"string", kString}, {"integer", kInteger}, {"number", kInteger | kFraction}};
  if (!name.is_string()) return std::nullopt;
  for (const auto& [text, bits] : kTypes)
    if (name.get_ref<const std::string&>() == text) return bits;
  return std::nullopt;
}

uint8_t type_of(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return kNull;
    case json::value_t::boolean: return kBoolean;
    case json::value_t::object: return kObject;
    case json::value_t::array: return kArray;
    case json::value_t::string: return kString;
    default: {
      auto number = schema_number(value);
      return number && !number->is_integer() ? kFraction : kInteger;
    }
  }
}

// The keywords that constrain instances, with the drafts that know them; everything else
// (annotations, identifiers, $defs, unknown keywords) does not change the language.
bool constraining(std::string_view key, SchemaDraft draft) {
  struct Known {
    std::string_view name;
    SchemaDraft first, last;
  };
  constexpr auto d4 = SchemaDraft::draft4, d6 = SchemaDraft::draft6, d7 = SchemaDraft::draft7;
  constexpr auto d2019 = SchemaDraft::draft2019_09, d2020 = SchemaDraft::draft2020_12;
  static constexpr Known kKnown[] = {
      {"type", d4, d2020},           {"enum", d4, d2020},
      {"const", d4, d2020},  // draft-04 has no const; read as the later drafts (and ajv) do
      {"multipleOf", d4, d2020},     {"maximum", d4, d2020},
      {"exclusiveMaximum", d4, d2020}, {"minimum", d4, d2020},
      {"exclusiveMinimum", d4, d2020}, {"maxLength", d4, d2020},
      {"minLength", d4, d2020},      {"pattern", d4, d2020},
      {"format", d4, d2020},         {"items", d4, d2020},
      {"additionalItems", d4, d2019}, {"prefixItems", d2020, d2020},
      {"maxItems", d4, d2020},       {"minItems", d4, d2020},
      {"uniqueItems", d4, d2020},    {"contains", d6, d2020},
      {"minContains", d2019, d2020}, {"maxContains", d2019, d2020},
      {"maxProperties", d4, d2020},  {"minProperties", d4, d2020},
      {"required", d4, d2020},       {"properties", d4, d2020},
      {"patternProperties", d4, d2020}, {"additionalProperties", d4, d2020},
      {"propertyNames", d6, d2020},
      {"dependencies", d4, d2020},  // replaced in 2019-09, but refused rather than ignored there
      {"contentMediaType", d4, d7},  {"contentEncoding", d4, d7},  // annotations from 2019-09 on
      {"dependentRequired", d2019, d2020}, {"dependentSchemas", d2019, d2020},
      {"unevaluatedItems", d2019, d2020}, {"unevaluatedProperties", d2019, d2020},
      {"allOf", d4, d2020},          {"anyOf", d4, d2020},
      {"oneOf", d4, d2020},          {"not", d4, d2020},
      {"if", d7, d2020},             {"then", d7, d2020},
      {"else", d7, d2020},           {"$ref", d4, d2020},
      {"$recursiveRef", d2019, d2019}, {"$dynamicRef", d2020, d2020},
  };
  for (const Known& known : kKnown)
    if (known.name == key) return draft >= known.first && draft <= known.last;
  return false;
}

Error refusal(std::string_view keyword, const std::string& pointer, std::string_view reason) {
  return fail("keyword '", keyword, "' at ", pointer, ": ", reason);
}

// One occurrence of a keyword, with the schema object it belongs to (for its base URI and draft).
struct Keyword {
  std::string name;
  const json* value;
  SchemaLocation where;
  std::string pointer;
  // The schema objects whose allOf, $ref, anyOf or oneOf brought this keyword into the view,
  // outermost first: unevaluatedProperties sees what its own subschemas evaluated, no more.
  std::vector<const json*> applied_by;

  std::vector<const json*> lineage() const {
    std::vector<const json*> out = applied_by;
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
    const std::vector<const json*> outer = applicator.lineage();
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

using Merged = std::set<const json*>;

// A count keyword's value (minLength 2 or 2.0).
std::optional<uint64_t> count_of(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) return value.get<int64_t>() >= 0 ? std::optional<uint64_t>(value.get<int64_t>()) : std::nullopt;
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (v >= 0 && v < 1e18 && v == double(uint64_t(v))) return uint64_t(v);
  }
  return std::nullopt;
}

// What a compilation has spent against the limits of json_schema.h, shared by the compilers that
// check enum values inside it (they run inside its own calls).
struct CompileBudget {
  size_t nesting = 0;  // node_rule calls in progress
  size_t views = 0;    // view_rule calls so far
  size_t numbers = 0;  // digit automata built: bounds, multipleOf and number literals
};

// The numbers inside a value (an enum's or const's).
size_t numbers_in(const json& value) {
  if (value.is_number()) return 1;
  size_t count = 0;
  if (value.is_structured())
    for (const json& part : value) count += numbers_in(part);
  return count;
}

class Compiler {
 public:
  Compiler(const SchemaOptions& options, SchemaIndex& index, std::vector<Unenforced>& unenforced,
           CompileBudget& budget, int depth = 0)
      : options_(options), index_(index), unenforced_(unenforced), layout_(JsonLayout::create(builder_, options.max_whitespace)),
        depth_(depth), budget_(budget) {}

  // The rule for a schema's values, shared by every use of the schema (recursion included).
  Result<RuleId> node_rule(const SchemaLocation& location, const std::string& via);

  Result<Grammar> finish(RuleId value) && {
    Sequence root;
    layout_.space(root);
    root.push_back(GrammarBuilder::call(value));
    layout_.space(root);
    return std::move(builder_).finish(builder_.add("root", {std::move(root)}));
  }

 private:
  Status refuse(const Keyword& keyword, std::string_view reason);
  // Each number rule is a digit automaton of its own (milliseconds and ~100 KB): refused past
  // kMaxSchemaNumbers for the whole schema, however they are spread over enums and subschemas.
  Status spend_numbers(const Keyword& keyword, size_t count);
  Result<View> view_of(const SchemaLocation& location);
  Result<SchemaLocation> target_of(const Keyword& ref);
  Result<RuleId> nested(const SchemaLocation& location);
  Result<RuleId> view_rule(View view, const std::string& name, Merged merged);
  Status expand(View& view, Merged& merged);
  Result<RuleId> distribute(View view, const std::string& name, const Merged& merged);
  Result<bool> provably_disjoint(const std::vector<SchemaLocation>& branches, const Merged& merged);
  Result<RuleId> typed_rule(View view, const std::string& name, const Merged& merged);
  Status apply_not(const Keyword& keyword, uint8_t& types);
  Result<RuleId> literal_choice(View view, uint8_t types, const std::string& name, const Merged& merged);
  // Which of `values` the keywords of `rest` accept.
  Result<std::vector<bool>> accepted(const View& rest, const std::vector<json>& values, const Merged& merged);
  Result<std::optional<RuleId>> number_rule_of(const View& view, bool integer_only);
  Result<std::optional<RuleId>> string_rule_of(const View& view);
  Result<std::optional<RuleId>> object_rule_of(const View& view);
  Result<std::optional<RuleId>> array_rule_of(const View& view);
  Result<RuleId> value_of(std::vector<SchemaLocation> sources, const std::string& name);
  // Whether an unevaluatedProperties / unevaluatedItems is built: refused (false) where the view
  // cannot tell what was evaluated: after anyOf / oneOf were distributed, beside `if`, dynamic
  // references or the given keywords.
  Result<bool> unevaluated_enforceable(const View& view, const Keyword& keyword, const SchemaLocation& rest,
                                       std::initializer_list<const char*> evaluators);
  static SchemaLocation unconstrained(const Keyword& keyword);
  // Whether the key `name` matches `pattern` (as patternProperties reads it).
  Result<bool> key_matches(const std::string& pattern, const std::string& name);
  // Keys matching one of `patterns`, refused where a named key matches one: excluding it would
  // need an intersection.
  Result<RuleId> patterned_key(const SchemaLocation& schema, const std::vector<std::string>& patterns,
                               const std::set<std::string>& named);
  Result<bool> is_never(const std::vector<SchemaLocation>& sources);
  // A rule for any of `options`, leaving out those known to match nothing.
  RuleId choice(const std::string& name, std::vector<RuleId> options);
  RuleId any_value();
  RuleId any_object();
  RuleId any_string();
  RuleId never();

  const SchemaOptions& options_;
  SchemaIndex& index_;
  std::vector<Unenforced>& unenforced_;
  GrammarBuilder builder_;
  JsonLayout layout_;
  JsonStringChars chars_;
  std::map<const json*, RuleId> rules_;
  // The schemas whose rules are being built at the current text position: reaching one again
  // before a character is read would be left recursion.
  std::vector<const json*> position_;
  // Checking enum values compiles their sibling keywords with a compiler of its own, which may
  // meet the same enum again in a recursive schema: the nesting is bounded.
  int depth_;
  static constexpr int kMaxCheckDepth = 4;
  CompileBudget& budget_;
  std::optional<RuleId> any_value_, any_object_, any_string_, never_;
  std::set<RuleId> empty_rules_;  // rules known to match nothing: never() and rules only calling it
  std::map<std::string, std::shared_ptr<Automaton>> key_automata_;  // key_matches' patterns

 public:
  bool matches_nothing(RuleId rule) const { return empty_rules_.contains(rule); }
};

Status Compiler::spend_numbers(const Keyword& keyword, size_t count) {
  budget_.numbers += count;
  if (budget_.numbers > kMaxSchemaNumbers)
    return refusal(keyword.name, keyword.pointer,
                   "the schema's numbers (bounds, multipleOf, enum and const values) need more than the limit of " +
                       std::to_string(kMaxSchemaNumbers) + " number rules");
  return {};
}

Status Compiler::refuse(const Keyword& keyword, std::string_view reason) {
  if (options_.strict) return refusal(keyword.name, keyword.pointer, reason);
  Unenforced left_out{keyword.name, keyword.pointer};
  if (std::find(unenforced_.begin(), unenforced_.end(), left_out) == unenforced_.end()) unenforced_.push_back(left_out);
  return {};
}

Result<View> Compiler::view_of(const SchemaLocation& location) {
  const json& node = *location.node;
  View view;
  if (node.is_boolean()) {
    view.never = !node.get<bool>();
    return view;
  }
  if (!node.is_object()) return refusal("schema", location.pointer, "not a schema (an object or a boolean)");
  // Before 2019-09, $ref makes its siblings ignored.
  const bool ref_alone = location.draft <= SchemaDraft::draft7 && node.contains("$ref");
  for (const auto& [key, value] : node.items()) {
    if (!constraining(key, location.draft) || (ref_alone && key != "$ref")) continue;
    if (key == "format" && !options_.assert_formats) continue;
    const std::string pointer = location.pointer + "/" + pointer_token(key);
    const size_t limit = key == "enum" ? kMaxEnumValues
                         : key == "allOf" || key == "anyOf" || key == "oneOf" ? kMaxSchemaBranches
                                                                              : SIZE_MAX;
    if (value.is_array() && value.size() > limit)
      return refusal(key, pointer, std::to_string(value.size()) + " " + (key == "enum" ? "values" : "subschemas") +
                                       ", more than the limit of " + std::to_string(limit));
    view.keywords[key].push_back({key, &value, location, pointer, {}});
  }
  return view;
}

Result<SchemaLocation> Compiler::target_of(const Keyword& ref) {
  if (!ref.value->is_string()) return refusal(ref.name, ref.pointer, "not a URI reference");
  auto target = index_.resolve(ref.value->get_ref<const std::string&>(), ref.where);
  if (!target) return refusal(ref.name, ref.pointer, target.error().message);
  return target;
}

Result<RuleId> Compiler::node_rule(const SchemaLocation& location, const std::string& via) {
  if (auto found = rules_.find(location.node); found != rules_.end()) {
    if (std::find(position_.begin(), position_.end(), location.node) != position_.end())
      return refusal("$ref", via.empty() ? location.pointer : via,
                     "the schema applies to its own value again before any character (a left-recursive reference)");
    return found->second;
  }
  if (budget_.nesting == kMaxSchemaNesting)
    return refusal(via.empty() ? "schema" : "$ref", via.empty() ? location.pointer : via,
                   "subschemas and references nest deeper than the limit of " + std::to_string(kMaxSchemaNesting));
  const RuleId rule = builder_.declare(location.pointer.empty() ? "schema" : location.pointer.substr(0, 80));
  rules_.emplace(location.node, rule);
  position_.push_back(location.node);
  ++budget_.nesting;
  auto view = view_of(location);
  auto body = view ? view_rule(std::move(view).value(), builder_.name_of(rule) + "-value", Merged{location.node})
                   : Result<RuleId>(view.error());
  --budget_.nesting;
  position_.pop_back();
  if (!body) return body.error();
  builder_.set_alternatives(rule, {{GrammarBuilder::call(*body)}});
  if (matches_nothing(*body)) empty_rules_.insert(rule);
  return rule;
}

Result<RuleId> Compiler::nested(const SchemaLocation& location) {
  std::vector<const json*> outer;
  std::swap(outer, position_);
  auto rule = node_rule(location, "");
  std::swap(outer, position_);
  return rule;
}

Result<RuleId> Compiler::view_rule(View view, const std::string& name, Merged merged) {
  const Status grammar_size = builder_.check_item_count();
  if (++budget_.views > kMaxSchemaViews || !grammar_size) {
    const Keyword* first = view.keywords.empty() ? nullptr : &view.keywords.begin()->second[0];
    return refusal(first ? first->name : "schema", first ? first->pointer : "",
                   !grammar_size ? grammar_size.error().message
                                 : "compiling the schema takes more than the limit of " +
                                       std::to_string(kMaxSchemaViews) +
                                       " subschema views (anyOf / oneOf distributed over their siblings multiply them)");
  }
  // A schema that only points at another is that schema's rule: shared, and recursion works.
  if (view.keywords.size() == 1 && !view.never) {
    const auto& [key, list] = *view.keywords.begin();
    if (list.size() == 1 && key == "$ref") {
      // A reference that leads nowhere is a broken schema, refused whatever `strict` says.
      KIPP_ASSIGN(const SchemaLocation target, target_of(list[0]));
      return node_rule(target, list[0].pointer);
    }
    if (list.size() == 1 && key == "allOf" && list[0].value->is_array() && list[0].value->size() == 1)
      return node_rule(index_.child(list[0].where, (*list[0].value)[0], "allOf", "0"), list[0].pointer);
  }
  KIPP_TRY(expand(view, merged));
  if (view.never) return never();
  if (view.find("anyOf") || view.find("oneOf")) return distribute(std::move(view), name, merged);
  return typed_rule(std::move(view), name, merged);
}

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

bool no_common_value(const std::vector<json>& a, const std::vector<json>& b) {
  JsonValueSet in_a;
  for (const json& x : a) in_a.insert(x);
  return std::none_of(b.begin(), b.end(), [&](const json& y) { return in_a.contains(y); });
}

// What a schema's values must look like, as far as cheaply known: enough to prove that two
// branches of a oneOf never accept the same value.
struct Signature {
  uint8_t types = kAllTypes;
  std::optional<std::vector<json>> values;         // enum / const
  std::map<std::string, std::vector<json>> tags;  // required properties with enum / const values
  std::set<std::string> required;
  std::vector<std::set<std::string>> closed;       // per additionalProperties: false, the keys it allows
};

// Objects of `a` have a key that `b` forbids, or a tag value that `b` does not allow.
bool objects_apart(const Signature& a, const Signature& b) {
  for (const auto& [property, values] : a.tags)
    if (auto other = b.tags.find(property); other != b.tags.end() && no_common_value(values, other->second)) return true;
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

Result<RuleId> Compiler::typed_rule(View view, const std::string& name, const Merged& merged) {
  uint8_t types = kAllTypes;
  for (const Keyword& keyword : view.all("not")) KIPP_TRY(apply_not(keyword, types));
  if (const auto* conditions = view.find("if"); conditions && (view.find("then") || view.find("else")))
    KIPP_TRY(refuse((*conditions)[0], "conditional subschemas (if/then/else) are not enforced"));
  for (const char* key : {"$dynamicRef", "$recursiveRef"})
    for (const Keyword& keyword : view.all(key)) KIPP_TRY(refuse(keyword, "dynamic references are not resolved"));
  for (const Keyword& keyword : view.all("type")) {
    uint8_t bits = 0;
    for (const json& type_name : keyword.value->is_array() ? *keyword.value : json::array({*keyword.value})) {
      auto named = type_bits(type_name);
      if (!named) return refusal(keyword.name, keyword.pointer, "'" + type_name.dump() + "' is not a JSON type");
      bits |= *named;
    }
    types &= bits;
  }
  if (view.find("enum") || view.find("const")) return literal_choice(std::move(view), types, name, merged);

  std::vector<Sequence> alternatives;
  if (types & kNull) alternatives.push_back(builder_.literal("null"));
  if (types & kBoolean) {
    alternatives.push_back(builder_.literal("true"));
    alternatives.push_back(builder_.literal("false"));
  }
  std::vector<Result<std::optional<RuleId>>> parts;
  if (types & (kInteger | kFraction)) parts.push_back(number_rule_of(view, !(types & kFraction)));
  if (types & kString) parts.push_back(string_rule_of(view));
  if (types & kArray) parts.push_back(array_rule_of(view));
  if (types & kObject) parts.push_back(object_rule_of(view));
  for (auto& part : parts) {
    if (!part) return part.error();
    if (*part && !matches_nothing(**part)) alternatives.push_back({GrammarBuilder::call(**part)});
  }
  if (alternatives.empty()) return never();
  return builder_.add(name, std::move(alternatives));
}

Result<RuleId> Compiler::literal_choice(View view, uint8_t types, const std::string& name, const Merged& merged) {
  const Keyword first = view.find("enum") ? view.all("enum")[0] : view.all("const")[0];
  for (const Keyword& keyword : view.all("enum"))
    if (!keyword.value->is_array()) return refusal(keyword.name, keyword.pointer, "not an array");
  std::vector<json> values = finite_values(view).value_or(std::vector<json>{});
  view.keywords.erase("enum");
  view.keywords.erase("const");
  const bool only_types = std::all_of(view.keywords.begin(), view.keywords.end(), [](const auto& k) { return k.first == "type"; });
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

void tighten(std::optional<NumberBound>& bound, NumberBound candidate, int direction) {
  if (!bound) {
    bound = std::move(candidate);
    return;
  }
  const int versus = compare(candidate.value, bound->value) * direction;
  if (versus > 0 || (versus == 0 && candidate.exclusive)) bound = std::move(candidate);
}

Result<std::optional<RuleId>> Compiler::number_rule_of(const View& view, bool integer_only) {
  NumberConstraints constraints;
  constraints.integer = integer_only;
  struct Side {
    const char* inclusive;
    const char* exclusive;
    std::optional<NumberBound>* bound;
    int direction;
  };
  for (const Side& side : {Side{"minimum", "exclusiveMinimum", &constraints.lower, 1},
                           Side{"maximum", "exclusiveMaximum", &constraints.upper, -1}}) {
    for (const char* key : {side.inclusive, side.exclusive})
      for (const Keyword& keyword : view.all(key)) {
        if (keyword.value->is_boolean()) continue;  // draft-04 style: read with its sibling below
        auto value = schema_number(*keyword.value);
        if (!value) {
          KIPP_TRY(refuse(keyword, value.error().message));
          continue;
        }
        bool exclusive = key == side.exclusive;
        if (!exclusive) {
          auto flag = keyword.where.node->find(side.exclusive);
          exclusive = flag != keyword.where.node->end() && flag->is_boolean() && flag->get<bool>();
        }
        tighten(*side.bound, {*value, exclusive}, side.direction);
      }
  }
  std::optional<Keyword> step;
  for (const Keyword& keyword : view.all("multipleOf")) {
    auto value = schema_number(*keyword.value);
    if (!value || value->is_zero() || value->negative) {
      KIPP_TRY(refuse(keyword, value ? "not a positive number" : value.error().message));
      continue;
    }
    if (constraints.multiple_of && compare(*value, *constraints.multiple_of) != 0) {
      KIPP_TRY(refuse(keyword, "two different multipleOf values are not combined"));
      continue;
    }
    constraints.multiple_of = *value;
    step = keyword;
  }
  const Keyword* first = view.keywords.empty() ? nullptr : &view.keywords.begin()->second[0];
  if (first) KIPP_TRY(spend_numbers(*first, 1));
  auto rule = number_rule(builder_, constraints);
  if (!rule && step) {
    KIPP_TRY(refuse(*step, rule.error().message));
    constraints.multiple_of.reset();
    rule = number_rule(builder_, constraints);
  }
  if (!rule) return rule.error();
  return *rule;
}

Result<std::optional<RuleId>> Compiler::string_rule_of(const View& view) {
  uint64_t min_length = 0;
  std::optional<uint64_t> max_length;
  std::vector<Keyword> lengths;
  for (const char* key : {"minLength", "maxLength"})
    for (const Keyword& keyword : view.all(key)) {
      auto count = count_of(*keyword.value);
      if (!count) return refusal(keyword.name, keyword.pointer, "not a non-negative integer");
      if (keyword.name == "minLength") {
        min_length = std::max(min_length, *count);
        if (*count > 0) lengths.push_back(keyword);
      } else {
        max_length = std::min(max_length.value_or(*count), *count);
        lengths.push_back(keyword);
      }
    }
  for (const char* key : {"contentMediaType", "contentEncoding"})
    for (const Keyword& keyword : view.all(key)) KIPP_TRY(refuse(keyword, "the encoded content of strings is not validated"));
  std::optional<RuleId> content;
  std::optional<Keyword> shaped;  // the pattern or format that gave `content`
  for (const char* key : {"pattern", "format"})
    for (const Keyword& keyword : view.all(key)) {
      if (!keyword.value->is_string()) return refusal(keyword.name, keyword.pointer, "not a string");
      if (shaped) {
        if (shaped->name == keyword.name && *shaped->value == *keyword.value) continue;
        KIPP_TRY(refuse(keyword, "combined with " + shaped->name + " " + shaped->value->dump() +
                                     ": the intersection of the two is not built"));
        continue;
      }
      const std::string& text = keyword.value->get_ref<const std::string&>();
      auto rule = keyword.name == "pattern" ? compile_pattern(builder_, text, chars_.char_rule())
                                            : compile_format(builder_, text, chars_.char_rule());
      if (!rule) {
        if (rule.error().over_limit) return refusal(keyword.name, keyword.pointer, rule.error().message);
        KIPP_TRY(refuse(keyword, rule.error().message));
        continue;
      }
      content = *rule;
      shaped = keyword;
    }
  if (content) {
    for (const Keyword& keyword : lengths)
      KIPP_TRY(refuse(keyword, "combined with " + shaped->name + ": the intersection of the two is not built"));
  } else {
    if (max_length && min_length > *max_length) return std::optional<RuleId>();
    if (min_length > kMaxCount || (max_length && *max_length > kMaxCount)) {
      KIPP_TRY(refuse(lengths.front(), "lengths above " + std::to_string(kMaxCount) + " are not written out"));
      return std::optional<RuleId>(any_string());
    }
    if (min_length == 0 && !max_length) return std::optional<RuleId>(any_string());
    content = builder_.repeat("string-chars", GrammarBuilder::call(chars_.any(builder_)), uint32_t(min_length),
                              max_length ? uint32_t(*max_length) : GrammarBuilder::kUnbounded);
  }
  Sequence sequence = builder_.literal("\"");
  sequence.push_back(GrammarBuilder::call(*content));
  sequence.push_back(builder_.bytes(ByteSet::of('"')));
  return std::optional<RuleId>(builder_.add("string", {std::move(sequence)}));
}

Result<bool> Compiler::unevaluated_enforceable(const View& view, const Keyword& keyword, const SchemaLocation& rest,
                                               std::initializer_list<const char*> evaluators) {
  // true or {} constrains nothing, but still evaluates every member for the keywords around it.
  KIPP_ASSIGN(const View inner, view_of(rest));
  if (!inner.never && inner.keywords.empty()) return true;
  bool unknown = view.distributed || view.rejoined;
  for (const char* key : {"if", "$dynamicRef", "$recursiveRef"}) unknown |= view.find(key) != nullptr;
  for (const char* key : evaluators)
    for (const Keyword& other : view.all(key)) unknown |= !(other.value->is_object() && other.value->empty());
  if (!unknown) return true;
  KIPP_TRY(refuse(keyword, "beside applicators whose evaluated members are not tracked"));
  return false;
}

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
    Sequence sequence = builder_.literal("\"");
    sequence.push_back(GrammarBuilder::call(*rule));
    sequence.push_back(builder_.bytes(ByteSet::of('"')));
    alternatives.push_back(std::move(sequence));
  }
  return builder_.add("patterned-key", std::move(alternatives));
}

SchemaLocation Compiler::unconstrained(const Keyword& keyword) {
  static const json kTrue = true;
  return {&kTrue, keyword.where.base, keyword.where.draft, keyword.pointer};
}

// The rule for a value that must meet every schema of `sources` (none: any value).
Result<RuleId> Compiler::value_of(std::vector<SchemaLocation> sources, const std::string& name) {
  std::erase_if(sources, [](const SchemaLocation& s) { return s.node->is_boolean() && s.node->get<bool>(); });
  if (sources.empty()) return any_value();
  if (sources.size() == 1) return nested(sources[0]);
  View view;
  Merged merged;
  for (const SchemaLocation& source : sources) {
    if (!merged.insert(source.node).second) continue;
    KIPP_ASSIGN(View more, view_of(source));
    view.take(std::move(more));
  }
  std::vector<const json*> outer;
  std::swap(outer, position_);
  auto rule = view_rule(std::move(view), name, std::move(merged));
  std::swap(outer, position_);
  return rule;
}

Result<bool> Compiler::is_never(const std::vector<SchemaLocation>& sources) {
  return std::any_of(sources.begin(), sources.end(), [](const SchemaLocation& s) { return s.node->is_boolean() && !s.node->get<bool>(); });
}

// A count keyword's values combined: the largest minimum, the smallest maximum.
Result<std::pair<uint64_t, uint64_t>> counts(const View& view, const char* min_key, const char* max_key) {
  uint64_t low = 0, high = UINT64_MAX;
  for (const char* key : {min_key, max_key})
    for (const Keyword& keyword : view.all(key)) {
      auto count = count_of(*keyword.value);
      if (!count) return refusal(keyword.name, keyword.pointer, "not a non-negative integer");
      if (key == min_key) low = std::max(low, *count);
      else high = std::min(high, *count);
    }
  return std::pair{low, high};
}

// A keyword whose every entry is trivially met: dependentRequired {"a": []}, dependencies {"a": true}.
bool trivially_met(const json& value) {
  if (!value.is_object()) return false;
  return std::all_of(value.begin(), value.end(), [](const json& entry) {
    return (entry.is_array() && entry.empty()) || (entry.is_boolean() && entry.get<bool>()) || (entry.is_object() && entry.empty());
  });
}

Result<std::optional<RuleId>> Compiler::object_rule_of(const View& view) {
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
  const auto group_of = [&](const Keyword& keyword) -> Group& {
    Group& group = groups[keyword.where.node];
    group.lineage = keyword.lineage();
    return group;
  };
  std::optional<Keyword> first_properties;
  for (const Keyword& keyword : view.all("properties")) {
    if (!keyword.value->is_object()) return refusal(keyword.name, keyword.pointer, "not an object");
    if (!first_properties) first_properties = keyword;
    Group& group = group_of(keyword);
    for (const auto& [property, schema] : keyword.value->items())
      group.properties.emplace(property, index_.child(keyword.where, schema, "properties", property));
  }
  std::set<const json*> open_groups;  // groups whose patternProperties were left out (strict=false)
  for (const Keyword& keyword : view.all("patternProperties")) {
    if (!keyword.value->is_object()) return refusal(keyword.name, keyword.pointer, "not an object");
    if (keyword.value->empty()) continue;
    const json& first = keyword.value->begin().value();
    const bool one_schema = std::all_of(keyword.value->begin(), keyword.value->end(), [&](const json& s) { return s == first; });
    const SchemaLocation schema = index_.child(keyword.where, first, "patternProperties", keyword.value->begin().key());
    KIPP_ASSIGN(const View pattern_view, view_of(schema));
    const bool unconstraining = !pattern_view.never && pattern_view.keywords.empty();
    auto additional = keyword.where.node->find("additionalProperties");
    const bool closed = additional != keyword.where.node->end() && additional->is_boolean() && !additional->get<bool>();
    if (unconstraining && !closed) continue;  // matching keys may hold anything, as may the others
    if (!closed || !one_schema) {
      KIPP_TRY(refuse(keyword, closed ? "different schemas for different patterns are not combined"
                                      : "keys matching a pattern would need the complement of a regular language"));
      open_groups.insert(keyword.where.node);
      continue;
    }
    Group& group = group_of(keyword);
    for (const auto& [pattern, pattern_schema] : keyword.value->items()) group.key_patterns.push_back(pattern);
    group.pattern_schema = schema;
  }
  for (const Keyword& keyword : view.all("additionalProperties")) {
    if (open_groups.contains(keyword.where.node)) {
      KIPP_TRY(refuse(keyword, "left out with the patternProperties beside it"));
      continue;
    }
    group_of(keyword).additional = index_.child(keyword.where, *keyword.value, "additionalProperties");
  }
  // unevaluatedProperties: one more group, naming every key its own subschemas evaluated. Innermost
  // first, since an inner one evaluates every key for the outer ones.
  std::vector<Keyword> unevaluated = view.all("unevaluatedProperties");
  std::stable_sort(unevaluated.begin(), unevaluated.end(),
                   [](const Keyword& a, const Keyword& b) { return a.applied_by.size() > b.applied_by.size(); });
  for (const Keyword& keyword : unevaluated) {
    const SchemaLocation rest = index_.child(keyword.where, *keyword.value, "unevaluatedProperties");
    KIPP_ASSIGN(const bool built, unevaluated_enforceable(view, keyword, rest, {"patternProperties", "dependentSchemas"}));
    if (!built) continue;
    Group own;
    bool everything = false;
    for (const auto& [origin, group] : groups) {
      if (std::find(group.lineage.begin(), group.lineage.end(), keyword.where.node) == group.lineage.end()) continue;
      everything |= group.additional.has_value();
      for (const auto& [property, schema] : group.properties) own.properties.emplace(property, unconstrained(keyword));
    }
    if (everything) continue;
    own.additional = rest;
    own.lineage = keyword.lineage();
    groups[keyword.value] = std::move(own);
  }
  uint64_t max_members = UINT64_MAX;
  for (const Keyword& keyword : view.all("propertyNames")) {
    KIPP_ASSIGN(View names, view_of(index_.child(keyword.where, *keyword.value, "propertyNames")));
    if (names.never) max_members = 0;
    else if (!names.keywords.empty()) KIPP_TRY(refuse(keyword, "constraints on keys are not enforced"));
  }
  for (const char* key : {"dependentRequired", "dependentSchemas", "dependencies"})
    for (const Keyword& keyword : view.all(key))
      if (!trivially_met(*keyword.value)) KIPP_TRY(refuse(keyword, "dependencies between members are not enforced"));
  std::set<std::string> required;
  std::optional<Keyword> first_required;
  for (const Keyword& keyword : view.all("required")) {
    if (!keyword.value->is_array()) return refusal(keyword.name, keyword.pointer, "not an array");
    if (!first_required) first_required = keyword;
    for (const json& name : *keyword.value) {
      if (!name.is_string()) return refusal(keyword.name, keyword.pointer, "not an array of strings");
      required.insert(name.get<std::string>());
    }
  }
  KIPP_ASSIGN(auto member_counts, counts(view, "minProperties", "maxProperties"));
  const uint64_t min_members = member_counts.first;
  max_members = std::min(max_members, member_counts.second);
  for (const char* key : {"minProperties", "maxProperties"})
    for (const Keyword& keyword : view.all(key)) {
      const uint64_t count = count_of(*keyword.value).value_or(0);
      if (count > Permutation::kMaxCounted)
        return refusal(keyword.name, keyword.pointer, "member counts above " + std::to_string(Permutation::kMaxCounted) + " are not tracked");
    }

  std::set<std::string> named = required;
  for (const auto& [origin, group] : groups)
    for (const auto& [property, schema] : group.properties) named.insert(property);
  if (named.size() > Permutation::kMaxMembers) {
    const Keyword& blamed = first_properties ? *first_properties : *first_required;
    KIPP_TRY(refuse(blamed, "more than " + std::to_string(Permutation::kMaxMembers) + " named members cannot be tracked"));
    return std::optional<RuleId>(any_object());
  }
  if (required.size() > max_members) return std::optional<RuleId>();

  Permutation permutation;
  permutation.separator = layout_.comma;
  // With room for the required members only, the others are left out (no dead ends for a matcher).
  const bool only_required = required.size() == max_members;
  for (const std::string& property : named) {
    const bool is_required = required.contains(property);
    if (only_required && !is_required) continue;
    std::vector<SchemaLocation> sources;
    for (const auto& [origin, group] : groups) {
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
    if (impossible) {
      if (is_required) return std::optional<RuleId>();
      continue;
    }
    KIPP_ASSIGN(const RuleId value, value_of(sources, "property"));
    Sequence member = builder_.literal("\"" + escape_json_string(property) + "\"");
    member.push_back(GrammarBuilder::call(layout_.colon));
    member.push_back(GrammarBuilder::call(value));
    permutation.members.push_back({builder_.add("member", {std::move(member)}), is_required});
  }
  std::vector<SchemaLocation> additional_sources;
  const Group* patterned = nullptr;
  for (const auto& [origin, group] : groups) {
    if (!group.key_patterns.empty()) {
      if (patterned) return refusal("patternProperties", group.pattern_schema->pointer, "patterned keys of two subschemas are not intersected");
      patterned = &group;
      additional_sources.push_back(*group.pattern_schema);
    } else if (group.additional) {
      additional_sources.push_back(*group.additional);
    }
  }
  KIPP_ASSIGN(const bool closed, is_never(additional_sources));
  if (!closed && !only_required) {
    KIPP_ASSIGN(const RuleId value, value_of(additional_sources, "additional"));
    RuleId key = 0;
    if (patterned) {
      KIPP_ASSIGN(key, patterned_key(*patterned->pattern_schema, patterned->key_patterns, named));
    } else {
      key = named.empty() ? any_string() : string_not_in(builder_, chars_, {named.begin(), named.end()});
    }
    Sequence member{GrammarBuilder::call(key)};
    member.push_back(GrammarBuilder::call(layout_.colon));
    member.push_back(GrammarBuilder::call(value));
    permutation.additional = builder_.add("additional-member", {std::move(member)});
  }
  std::vector<Sequence> alternatives;
  if (min_members == 0 && required.empty()) {
    Sequence empty = builder_.literal("{");
    layout_.space(empty);
    empty.push_back(builder_.bytes(ByteSet::of('}')));
    alternatives.push_back(std::move(empty));
  }
  const bool enough = permutation.additional || permutation.members.size() >= std::max<uint64_t>(min_members, 1);
  if (max_members >= 1 && enough) {
    permutation.min_members = uint32_t(std::max<uint64_t>(min_members, 1));
    permutation.max_members = max_members == UINT64_MAX ? Permutation::kUnbounded : uint32_t(max_members);
    Sequence sequence = builder_.literal("{");
    layout_.space(sequence);
    sequence.push_back(builder_.permutation(std::move(permutation)));
    layout_.space(sequence);
    sequence.push_back(builder_.bytes(ByteSet::of('}')));
    alternatives.push_back(std::move(sequence));
  }
  if (alternatives.empty()) return std::optional<RuleId>();
  return std::optional<RuleId>(builder_.add("object", std::move(alternatives)));
}

Result<std::optional<RuleId>> Compiler::array_rule_of(const View& view) {
  // Like properties: each schema object's prefix items and the schema for the items after them.
  struct Group {
    std::vector<SchemaLocation> prefix;
    std::optional<SchemaLocation> rest;
    std::vector<const json*> lineage;
  };
  std::map<const json*, Group> groups;
  const auto group_of = [&](const Keyword& keyword) -> Group& {
    Group& group = groups[keyword.where.node];
    group.lineage = keyword.lineage();
    return group;
  };
  for (const Keyword& keyword : view.all("prefixItems")) {
    if (!keyword.value->is_array()) return refusal(keyword.name, keyword.pointer, "not an array");
    Group& group = group_of(keyword);
    for (size_t i = 0; i < keyword.value->size(); ++i)
      group.prefix.push_back(index_.child(keyword.where, (*keyword.value)[i], "prefixItems", std::to_string(i)));
  }
  for (const Keyword& keyword : view.all("items")) {
    Group& group = group_of(keyword);
    if (!keyword.value->is_array()) {
      group.rest = index_.child(keyword.where, *keyword.value, "items");
      continue;
    }
    if (keyword.where.draft == SchemaDraft::draft2020_12)
      return refusal(keyword.name, keyword.pointer, "an array of schemas is prefixItems in draft 2020-12");
    for (size_t i = 0; i < keyword.value->size(); ++i)
      group.prefix.push_back(index_.child(keyword.where, (*keyword.value)[i], "items", std::to_string(i)));
    if (auto more = keyword.where.node->find("additionalItems"); more != keyword.where.node->end())
      group.rest = index_.child(keyword.where, *more, "additionalItems");
  }
  std::vector<Keyword> unevaluated = view.all("unevaluatedItems");
  std::stable_sort(unevaluated.begin(), unevaluated.end(),
                   [](const Keyword& a, const Keyword& b) { return a.applied_by.size() > b.applied_by.size(); });
  for (const Keyword& keyword : unevaluated) {
    const SchemaLocation rest = index_.child(keyword.where, *keyword.value, "unevaluatedItems");
    KIPP_ASSIGN(const bool built, unevaluated_enforceable(view, keyword, rest, {"contains"}));
    if (!built) continue;
    Group own;
    bool everything = false;
    size_t evaluated = 0;
    for (const auto& [origin, group] : groups) {
      if (std::find(group.lineage.begin(), group.lineage.end(), keyword.where.node) == group.lineage.end()) continue;
      everything |= group.rest.has_value();
      evaluated = std::max(evaluated, group.prefix.size());
    }
    if (everything) continue;
    own.prefix.assign(evaluated, unconstrained(keyword));
    own.rest = rest;
    own.lineage = keyword.lineage();
    groups[keyword.value] = std::move(own);
  }
  KIPP_ASSIGN(auto item_counts, counts(view, "minItems", "maxItems"));
  auto [min_items, max_items] = item_counts;
  for (const Keyword& keyword : view.all("uniqueItems"))
    if (keyword.value->is_boolean() && keyword.value->get<bool>() && max_items > 1)
      KIPP_TRY(refuse(keyword, "uniqueness of the items is not enforced"));
  for (const Keyword& keyword : view.all("contains")) {
    auto at_least = keyword.where.node->find("minContains");
    const bool vacuous = keyword.where.draft >= SchemaDraft::draft2019_09 && at_least != keyword.where.node->end() &&
                         count_of(*at_least) == 0 && !keyword.where.node->contains("maxContains");
    if (!vacuous) KIPP_TRY(refuse(keyword, "an item that must be present somewhere is not enforced"));
  }
  size_t prefix_length = 0;
  for (const auto& [origin, group] : groups) prefix_length = std::max(prefix_length, group.prefix.size());
  std::vector<SchemaLocation> rest_sources;
  for (const auto& [origin, group] : groups)
    if (group.rest) rest_sources.push_back(*group.rest);
  KIPP_ASSIGN(const bool rest_never, is_never(rest_sources));
  if (rest_never) max_items = std::min<uint64_t>(max_items, prefix_length);
  if (min_items > max_items) return std::optional<RuleId>();
  if (min_items > kMaxCount || (max_items != UINT64_MAX && max_items > kMaxCount)) {
    const Keyword blamed = view.find("minItems") && min_items > kMaxCount ? view.all("minItems")[0] : view.all("maxItems")[0];
    return refusal(blamed.name, blamed.pointer, "counts above " + std::to_string(kMaxCount) + " are not written out");
  }
  // item(i): the rule for the item at position i.
  std::optional<RuleId> rest_rule;
  const auto item = [&](size_t i) -> Result<RuleId> {
    if (i >= prefix_length) {
      if (!rest_rule) {
        KIPP_ASSIGN(const RuleId rule, value_of(rest_sources, "item"));
        rest_rule = rule;
      }
      return *rest_rule;
    }
    std::vector<SchemaLocation> sources;
    for (const auto& [origin, group] : groups) {
      if (i < group.prefix.size()) sources.push_back(group.prefix[i]);
      else if (group.rest) sources.push_back(*group.rest);
    }
    return value_of(sources, "item");
  };
  std::vector<Sequence> alternatives;
  if (min_items == 0) {
    Sequence empty = builder_.literal("[");
    layout_.space(empty);
    empty.push_back(builder_.bytes(ByteSet::of(']')));
    alternatives.push_back(std::move(empty));
  }
  if (max_items >= 1) {
    // after(i): what follows the first i items. From `steady` on, every further item is the
    // rest schema and only the count is left, as one repetition.
    const uint64_t steady = std::max<uint64_t>(min_items, prefix_length);
    RuleId after = 0;
    const uint64_t from = std::max<uint64_t>(std::min(steady, max_items), 1);
    if (from >= max_items) {
      after = builder_.add("array-end", {{}});
    } else {
      KIPP_ASSIGN(const RuleId rest, item(size_t(from)));
      const RuleId next = builder_.add("array-next", {{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(rest)}});
      after = builder_.repeat("array-tail", GrammarBuilder::call(next), 0,
                              max_items == UINT64_MAX ? GrammarBuilder::kUnbounded : uint32_t(max_items - from));
    }
    for (uint64_t i = from; i-- > 1;) {
      KIPP_ASSIGN(const RuleId at, item(size_t(i)));
      std::vector<Sequence> choices{{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(at), GrammarBuilder::call(after)}};
      if (i >= min_items) choices.push_back({});
      after = builder_.add("array-after", std::move(choices));
    }
    KIPP_ASSIGN(const RuleId first, item(0));
    Sequence sequence = builder_.literal("[");
    layout_.space(sequence);
    sequence.push_back(GrammarBuilder::call(first));
    sequence.push_back(GrammarBuilder::call(after));
    layout_.space(sequence);
    sequence.push_back(builder_.bytes(ByteSet::of(']')));
    alternatives.push_back(std::move(sequence));
  }
  if (alternatives.empty()) return std::optional<RuleId>();
  return std::optional<RuleId>(builder_.add("array", std::move(alternatives)));
}

RuleId Compiler::any_string() {
  if (!any_string_) {
    const RuleId chars = builder_.repeat("string-chars", GrammarBuilder::call(chars_.any(builder_)), 0, GrammarBuilder::kUnbounded);
    Sequence sequence = builder_.literal("\"");
    sequence.push_back(GrammarBuilder::call(chars));
    sequence.push_back(builder_.bytes(ByteSet::of('"')));
    any_string_ = builder_.add("any-string", {std::move(sequence)});
  }
  return *any_string_;
}

RuleId Compiler::any_value() {
  if (any_value_) return *any_value_;
  any_value_ = builder_.declare("any-value");
  const RuleId value = *any_value_;
  // [ v, v, ... ] and { "k": v, ... } without any constraint.
  const RuleId next_item = builder_.add("any-next-item", {{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(value)}});
  const RuleId more_items = builder_.repeat("any-items", GrammarBuilder::call(next_item), 0, GrammarBuilder::kUnbounded);
  Sequence empty_array = builder_.literal("[");
  layout_.space(empty_array);
  empty_array.push_back(builder_.bytes(ByteSet::of(']')));
  Sequence array = builder_.literal("[");
  layout_.space(array);
  array.push_back(GrammarBuilder::call(value));
  array.push_back(GrammarBuilder::call(more_items));
  layout_.space(array);
  array.push_back(builder_.bytes(ByteSet::of(']')));
  auto number = number_rule(builder_, NumberConstraints{});  // unconstrained: never empty, never too large
  builder_.set_alternatives(value, {{GrammarBuilder::call(any_object())},
                                    std::move(empty_array),
                                    std::move(array),
                                    {GrammarBuilder::call(any_string())},
                                    {GrammarBuilder::call(**number)},
                                    builder_.literal("true"),
                                    builder_.literal("false"),
                                    builder_.literal("null")});
  return value;
}

RuleId Compiler::any_object() {
  if (any_object_) return *any_object_;
  any_object_ = builder_.declare("any-object");
  const RuleId value = any_value();
  const RuleId member = builder_.add("any-member", {{GrammarBuilder::call(any_string()), GrammarBuilder::call(layout_.colon),
                                                     GrammarBuilder::call(value)}});
  const RuleId next_member = builder_.add("any-next-member", {{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(member)}});
  const RuleId more = builder_.repeat("any-members", GrammarBuilder::call(next_member), 0, GrammarBuilder::kUnbounded);
  Sequence empty = builder_.literal("{");
  layout_.space(empty);
  empty.push_back(builder_.bytes(ByteSet::of('}')));
  Sequence object = builder_.literal("{");
  layout_.space(object);
  object.push_back(GrammarBuilder::call(member));
  object.push_back(GrammarBuilder::call(more));
  layout_.space(object);
  object.push_back(builder_.bytes(ByteSet::of('}')));
  builder_.set_alternatives(*any_object_, {std::move(empty), std::move(object)});
  return *any_object_;
}

RuleId Compiler::choice(const std::string& name, std::vector<RuleId> options) {
  std::erase_if(options, [&](RuleId rule) { return matches_nothing(rule); });
  if (options.empty()) return never();
  if (options.size() == 1) return options[0];
  std::vector<Sequence> alternatives;
  for (RuleId rule : options) alternatives.push_back({GrammarBuilder::call(rule)});
  return builder_.add(name, std::move(alternatives));
}

RuleId Compiler::never() {
  if (!never_) {
    never_ = builder_.add("never", {{builder_.bytes(ByteSet())}});
    empty_rules_.insert(*never_);
  }
  return *never_;
}

}  // namespace

Result<CompiledSchema> compile_json_schema(const json& schema, const SchemaOptions& options) {
  try {
    KIPP_TRY(check_json_depth(schema, kMaxSchemaDepth));
    SchemaIndex index(options);
    KIPP_ASSIGN(const SchemaLocation root, index.add_root(schema));
    CompiledSchema compiled;
    CompileBudget budget;
    Compiler compiler(options, index, compiled.unenforced, budget);
    KIPP_ASSIGN(const RuleId value, compiler.node_rule(root, ""));
    if (compiler.matches_nothing(value)) return fail(kSchemaAcceptsNothing);
    KIPP_ASSIGN(compiled.grammar, std::move(compiler).finish(value));
    return compiled;
  } catch (const std::exception& e) {
    return fail("the schema could not be read: ", e.what());
  }
}

std::optional<Unenforced> parse_refusal(std::string_view message) {
  constexpr std::string_view kStart = "keyword '";
  if (!message.starts_with(kStart)) return std::nullopt;
  const size_t quote = message.find("' at ", kStart.size());
  if (quote == std::string_view::npos) return std::nullopt;
  const size_t pointer_start = quote + 5;
  const size_t colon = message.find(": ", pointer_start);
  if (colon == std::string_view::npos) return std::nullopt;
  return Unenforced{std::string(message.substr(kStart.size(), quote - kStart.size())),
                    std::string(message.substr(pointer_start, colon - pointer_start))};
}

}  // namespace kipp::grammar
