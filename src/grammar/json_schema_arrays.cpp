// The array keywords of JSON Schema (json_schema_compiler.h): prefixItems, items, additionalItems
// and unevaluatedItems, the item counts.
#include <algorithm>

#include "grammar/json_schema_compiler.h"

namespace kipp::grammar {

using nlohmann::json;

// What the array keywords of a view say, gathered before any rule is built.
struct Compiler::ArrayShape {
  // Like properties: each schema object's prefix items and the schema for the items after them.
  struct Group {
    std::vector<SchemaLocation> prefix;
    std::optional<SchemaLocation> rest;
    std::vector<const json*> lineage;
  };
  std::map<const json*, Group> groups;
  uint64_t min_items = 0, max_items = UINT64_MAX;
  size_t prefix_length = 0;                  // the longest prefix of any group
  std::vector<SchemaLocation> rest_sources;  // what every item past all prefixes must meet
  std::optional<RuleId> rest_rule;           // their rule, built once
};

Result<std::optional<RuleId>> Compiler::array_rule_of(const View& view) {
  ArrayShape shape;
  KIPP_TRY(gather_items(view, shape));
  KIPP_TRY(gather_unevaluated_items(view, shape));
  KIPP_TRY(gather_item_limits(view, shape));
  for (const auto& [origin, group] : shape.groups) {
    shape.prefix_length = std::max(shape.prefix_length, group.prefix.size());
    if (group.rest) shape.rest_sources.push_back(*group.rest);
  }
  KIPP_ASSIGN(const bool rest_never, is_never(shape.rest_sources));
  if (rest_never) shape.max_items = std::min<uint64_t>(shape.max_items, shape.prefix_length);
  // The tidy form writes items past a prefix that nothing describes only as far as minItems needs.
  if (options_.form == JsonForm::tidy && shape.prefix_length > 0 && shape.rest_sources.empty())
    shape.max_items = std::min(shape.max_items, std::max<uint64_t>(shape.prefix_length, shape.min_items));
  if (shape.min_items > shape.max_items) return std::optional<RuleId>();
  if (shape.min_items > kMaxCount || (shape.max_items != UINT64_MAX && shape.max_items > kMaxCount)) {
    const Keyword blamed =
        view.find("minItems") && shape.min_items > kMaxCount ? view.all("minItems")[0] : view.all("maxItems")[0];
    return refusal(blamed.name, blamed.pointer, "counts above " + std::to_string(kMaxCount) + " are not written out");
  }
  std::vector<Sequence> alternatives;
  if (shape.min_items == 0) alternatives.push_back(enclosed('[', {}, ']'));
  if (shape.max_items >= 1) {
    KIPP_ASSIGN(Sequence items, array_items(shape));
    alternatives.push_back(enclosed('[', std::move(items), ']'));
  }
  if (alternatives.empty()) return std::optional<RuleId>();
  return std::optional<RuleId>(builder_.add("array", std::move(alternatives)));
}

// prefixItems, and items with additionalItems, grouped by the schema object they stand in.
Status Compiler::gather_items(const View& view, ArrayShape& shape) {
  for (const Keyword& keyword : view.all("prefixItems")) {
    if (!keyword.value->is_array()) return refusal(keyword.name, keyword.pointer, "not an array");
    ArrayShape::Group& group = group_of(shape.groups, keyword);
    for (size_t i = 0; i < keyword.value->size(); ++i)
      group.prefix.push_back(index_.child(keyword.where, (*keyword.value)[i], "prefixItems", std::to_string(i)));
  }
  for (const Keyword& keyword : view.all("items")) {
    ArrayShape::Group& group = group_of(shape.groups, keyword);
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
  return {};
}

// unevaluatedItems: one more group, its prefix as long as the longest its own subschemas evaluated.
Status Compiler::gather_unevaluated_items(const View& view, ArrayShape& shape) {
  for (const Keyword& keyword : innermost_first(view.all("unevaluatedItems"))) {
    const SchemaLocation rest = index_.child(keyword.where, *keyword.value, "unevaluatedItems");
    KIPP_ASSIGN(const bool built, unevaluated_enforceable(view, keyword, rest, {"contains"}));
    if (!built) continue;
    bool everything = false;
    size_t evaluated = 0;
    for (const auto& [origin, group] : shape.groups) {
      if (!evaluated_for(group.lineage, keyword)) continue;
      everything |= group.rest.has_value();
      evaluated = std::max(evaluated, group.prefix.size());
    }
    if (everything) continue;
    shape.groups[keyword.value] = {.prefix = std::vector(evaluated, unconstrained(keyword)),
                                   .rest = rest,
                                   .lineage = keyword.lineage()};
  }
  return {};
}

// minItems and maxItems; uniqueItems and contains, enforced only where they ask nothing.
Status Compiler::gather_item_limits(const View& view, ArrayShape& shape) {
  KIPP_ASSIGN(auto item_counts, counts(view, "minItems", "maxItems"));
  std::tie(shape.min_items, shape.max_items) = item_counts;
  for (const Keyword& keyword : view.all("uniqueItems"))
    if (keyword.value->is_boolean() && keyword.value->get<bool>() && shape.max_items > 1)
      KIPP_TRY(refuse(keyword, "uniqueness of the items is not enforced"));
  for (const Keyword& keyword : view.all("contains")) {
    auto at_least = keyword.where.node->find("minContains");
    const bool vacuous = keyword.where.draft >= SchemaDraft::draft2019_09 && at_least != keyword.where.node->end() &&
                         count_of(*at_least) == 0 && !keyword.where.node->contains("maxContains");
    if (!vacuous) KIPP_TRY(refuse(keyword, "an item that must be present somewhere is not enforced"));
  }
  return {};
}

// The rule for the item at position i.
Result<RuleId> Compiler::item_rule(ArrayShape& shape, size_t i) {
  if (i >= shape.prefix_length) {
    if (!shape.rest_rule) {
      KIPP_ASSIGN(const RuleId rule, value_of(shape.rest_sources, "item"));
      shape.rest_rule = rule;
    }
    return *shape.rest_rule;
  }
  std::vector<SchemaLocation> sources;
  for (const auto& [origin, group] : shape.groups) {
    if (i < group.prefix.size()) sources.push_back(group.prefix[i]);
    else if (group.rest) sources.push_back(*group.rest);
  }
  return value_of(sources, "item");
}

// The items of a non-empty array: the first, then after(1), after(i) being what follows the first
// i items. From `steady` on, every further item is the rest schema and only the count is left, as
// one repetition.
Result<Sequence> Compiler::array_items(ArrayShape& shape) {
  const uint64_t min_items = shape.min_items, max_items = shape.max_items;
  const uint64_t steady = std::max<uint64_t>(min_items, shape.prefix_length);
  RuleId after = 0;
  const uint64_t from = std::max<uint64_t>(std::min(steady, max_items), 1);
  if (from >= max_items) {
    after = builder_.add("array-end", {{}});
  } else {
    KIPP_ASSIGN(const RuleId rest, item_rule(shape, size_t(from)));
    const RuleId next = builder_.add("array-next", {{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(rest)}});
    after = builder_.repeat("array-tail", GrammarBuilder::call(next), 0,
                            max_items == UINT64_MAX ? GrammarBuilder::kUnbounded : uint32_t(max_items - from));
  }
  for (uint64_t i = from; i-- > 1;) {
    KIPP_ASSIGN(const RuleId at, item_rule(shape, size_t(i)));
    std::vector<Sequence> choices{
        {GrammarBuilder::call(layout_.comma), GrammarBuilder::call(at), GrammarBuilder::call(after)}};
    if (i >= min_items) choices.push_back({});
    after = builder_.add("array-after", std::move(choices));
  }
  KIPP_ASSIGN(const RuleId first, item_rule(shape, 0));
  return Sequence{GrammarBuilder::call(first), GrammarBuilder::call(after)};
}

}  // namespace kipp::grammar
