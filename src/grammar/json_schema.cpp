// JSON Schema compiled into a Grammar (json_schema.h): the entry point, the view of the keywords
// that apply to one value, and the dispatch by type; the keywords of each concern are compiled in a
// file of their own (json_schema_compiler.h names them).
#include "grammar/json_schema.h"

#include <algorithm>

#include "grammar/json_schema_compiler.h"
#include "grammar/json_schema_numbers.h"

namespace kipp::grammar {

using nlohmann::json;

std::optional<uint8_t> type_bits(const json& name) {
  static constexpr std::pair<std::string_view, uint8_t> kTypes[] = {{"null", kNull},
                                                                    {"boolean", kBoolean},
                                                                    {"object", kObject},
                                                                    {"array", kArray},
                                                                    {"string", kString},
                                                                    {"integer", kInteger},
                                                                    {"number", kInteger | kFraction}};
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

namespace {

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
      {"type", d4, d2020},
      {"enum", d4, d2020},
      {"const", d4, d2020},  // draft-04 has no const; read as the later drafts (and ajv) do
      {"multipleOf", d4, d2020},
      {"maximum", d4, d2020},
      {"exclusiveMaximum", d4, d2020},
      {"minimum", d4, d2020},
      {"exclusiveMinimum", d4, d2020},
      {"maxLength", d4, d2020},
      {"minLength", d4, d2020},
      {"pattern", d4, d2020},
      {"format", d4, d2020},
      {"items", d4, d2020},
      {"additionalItems", d4, d2019},
      {"prefixItems", d2020, d2020},
      {"maxItems", d4, d2020},
      {"minItems", d4, d2020},
      {"uniqueItems", d4, d2020},
      {"contains", d6, d2020},
      {"minContains", d2019, d2020},
      {"maxContains", d2019, d2020},
      {"maxProperties", d4, d2020},
      {"minProperties", d4, d2020},
      {"required", d4, d2020},
      {"properties", d4, d2020},
      {"patternProperties", d4, d2020},
      {"additionalProperties", d4, d2020},
      {"propertyNames", d6, d2020},
      {"dependencies", d4, d2020},  // replaced in 2019-09, but refused rather than ignored there
      {"contentMediaType", d4, d7},
      {"contentEncoding", d4, d7},  // annotations from 2019-09 on
      {"dependentRequired", d2019, d2020},
      {"dependentSchemas", d2019, d2020},
      {"unevaluatedItems", d2019, d2020},
      {"unevaluatedProperties", d2019, d2020},
      {"allOf", d4, d2020},
      {"anyOf", d4, d2020},
      {"oneOf", d4, d2020},
      {"not", d4, d2020},
      {"if", d7, d2020},
      {"then", d7, d2020},
      {"else", d7, d2020},
      {"$ref", d4, d2020},
      {"$recursiveRef", d2019, d2019},
      {"$dynamicRef", d2020, d2020},
  };
  for (const Known& known : kKnown)
    if (known.name == key) return draft >= known.first && draft <= known.last;
  return false;
}

}  // namespace

Error refusal(std::string_view keyword, const std::string& pointer, std::string_view reason) {
  return fail("keyword '", keyword, "' at ", pointer, ": ", reason);
}

std::optional<uint64_t> count_of(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer())
    return value.get<int64_t>() >= 0 ? std::optional<uint64_t>(value.get<int64_t>()) : std::nullopt;
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (v >= 0 && v < 1e18 && v == double(uint64_t(v))) return uint64_t(v);
  }
  return std::nullopt;
}

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

std::vector<Keyword> innermost_first(std::vector<Keyword> keywords) {
  std::stable_sort(keywords.begin(), keywords.end(),
                   [](const Keyword& a, const Keyword& b) { return a.applied_by.size() > b.applied_by.size(); });
  return keywords;
}

bool evaluated_for(const std::vector<const json*>& lineage, const Keyword& unevaluated) {
  return std::find(lineage.begin(), lineage.end(), unevaluated.where.node) != lineage.end();
}

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
    const size_t limit = key == "enum"                                        ? kMaxEnumValues
                         : key == "allOf" || key == "anyOf" || key == "oneOf" ? kMaxSchemaBranches
                                                                              : SIZE_MAX;
    if (value.is_array() && value.size() > limit)
      return refusal(key, pointer,
                     std::to_string(value.size()) + " " + (key == "enum" ? "values" : "subschemas") +
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
                   !grammar_size
                       ? grammar_size.error().message
                       : "compiling the schema takes more than the limit of " + std::to_string(kMaxSchemaViews) +
                             " subschema views (anyOf / oneOf distributed over their siblings "
                             "multiply them)");
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
  return std::any_of(sources.begin(), sources.end(),
                     [](const SchemaLocation& s) { return s.node->is_boolean() && !s.node->get<bool>(); });
}

RuleId Compiler::any_value() {
  if (any_value_) return *any_value_;
  any_value_ = builder_.declare("any-value");
  const RuleId value = *any_value_;
  // [ v, v, ... ] and { "k": v, ... } without any constraint.
  const RuleId next_item =
      builder_.add("any-next-item", {{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(value)}});
  const RuleId more_items =
      builder_.repeat("any-items", GrammarBuilder::call(next_item), 0, GrammarBuilder::kUnbounded);
  Sequence empty_array = enclosed('[', {}, ']');
  Sequence array = enclosed('[', {GrammarBuilder::call(value), GrammarBuilder::call(more_items)}, ']');
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

Sequence Compiler::enclosed(char open, Sequence items, char close) {
  Sequence sequence = builder_.literal(std::string_view(&open, 1));
  layout_.space(sequence);
  if (!items.empty()) {
    sequence.insert(sequence.end(), items.begin(), items.end());
    layout_.space(sequence);
  }
  sequence.push_back(builder_.bytes(ByteSet::of(uint8_t(close))));
  return sequence;
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
