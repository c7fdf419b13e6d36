// The number and string keywords of JSON Schema (json_schema_compiler.h): the numeric bounds and
// multipleOf as digit automata, lengths, pattern and format.
#include <algorithm>

#include "grammar/json_schema_compiler.h"
#include "grammar/json_schema_numbers.h"
#include "grammar/regex.h"
#include "grammar/string_formats.h"

namespace kipp::grammar {

using nlohmann::json;

namespace {

void tighten(std::optional<NumberBound>& bound, NumberBound candidate, int direction) {
  if (!bound) {
    bound = std::move(candidate);
    return;
  }
  const int versus = compare(candidate.value, bound->value) * direction;
  if (versus > 0 || (versus == 0 && candidate.exclusive)) bound = std::move(candidate);
}

}  // namespace

Result<std::optional<RuleId>> Compiler::number_rule_of(const View& view, bool integer_only) {
  NumberConstraints constraints;
  constraints.integer = integer_only;
  constraints.plain_integers = options_.form == JsonForm::tidy;
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
    for (const Keyword& keyword : view.all(key))
      KIPP_TRY(refuse(keyword, "the encoded content of strings is not validated"));
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
  return std::optional<RuleId>(builder_.add("string", {quoted(*content)}));
}

Sequence Compiler::quoted(RuleId content) {
  Sequence sequence = builder_.literal("\"");
  sequence.push_back(GrammarBuilder::call(content));
  sequence.push_back(builder_.bytes(ByteSet::of('"')));
  return sequence;
}

RuleId Compiler::any_string() {
  if (!any_string_) {
    const RuleId chars =
        builder_.repeat("string-chars", GrammarBuilder::call(chars_.any(builder_)), 0, GrammarBuilder::kUnbounded);
    any_string_ = builder_.add("any-string", {quoted(chars)});
  }
  return *any_string_;
}

}  // namespace kipp::grammar
