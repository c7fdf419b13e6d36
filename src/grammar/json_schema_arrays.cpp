// The array keywords of JSON Schema (json_schema_compiler.h): prefixItems, items, additionalItems
// and unevaluatedItems, the item counts.
#include <algorithm>

#include "grammar/json_schema_compiler.h"

namespace kipp::grammar {

using nlohmann::json;

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
    const Keyword blamed =
        view.find("minItems") && min_items > kMaxCount ? view.all("minItems")[0] : view.all("maxItems")[0];
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
      const RuleId next =
          builder_.add("array-next", {{GrammarBuilder::call(layout_.comma), GrammarBuilder::call(rest)}});
      after = builder_.repeat("array-tail", GrammarBuilder::call(next), 0,
                              max_items == UINT64_MAX ? GrammarBuilder::kUnbounded : uint32_t(max_items - from));
    }
    for (uint64_t i = from; i-- > 1;) {
      KIPP_ASSIGN(const RuleId at, item(size_t(i)));
      std::vector<Sequence> choices{
          {GrammarBuilder::call(layout_.comma), GrammarBuilder::call(at), GrammarBuilder::call(after)}};
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

}  // namespace kipp::grammar
