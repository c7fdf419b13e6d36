#include "grammar/json_schema_strings.h"

#include <algorithm>

#include "util/utf8.h"  // code_points: schema strings are valid UTF-8, as nlohmann has checked

namespace kipp::grammar {

namespace {

bool contains(const CodePointRanges& set, uint32_t code_point) {
  auto after = std::upper_bound(set.begin(), set.end(), std::pair{code_point, UINT32_MAX});
  return after != set.begin() && std::prev(after)->second >= code_point;
}

CodePointRanges subtract(const CodePointRanges& set, const CodePointRanges& removed) {
  CodePointRanges complement = normalize_code_points(removed, true);
  CodePointRanges out;
  for (const auto& [first, last] : set)
    for (const auto& [keep_first, keep_last] : complement) {
      const uint32_t low = std::max(first, keep_first), high = std::min(last, keep_last);
      if (low <= high) out.push_back({low, high});
    }
  return normalize_code_points(std::move(out), false);
}

char hex_digit(unsigned value) { return "0123456789abcdef"[value & 15]; }

}  // namespace

RuleId JsonStringChars::rule(GrammarBuilder& builder, const CodePointRanges& ranges, bool negated) {
  CodePointRanges set = normalize_code_points(ranges, negated);
  if (auto found = rules_.find(set); found != rules_.end()) return found->second;
  std::vector<Sequence> alternatives;
  const CodePointRanges raw = subtract(set, {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  if (!raw.empty()) alternatives.push_back({GrammarBuilder::call(builder.utf8_class("json-char-raw", raw, false))});
  for (char escaped : {'"', '\\', '/'})
    if (contains(set, uint8_t(escaped))) alternatives.push_back(builder.literal(std::string("\\") + escaped));
  static constexpr std::pair<char, char> kShortEscapes[] = {
      {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}};
  for (const auto& [control, letter] : kShortEscapes)
    if (contains(set, uint8_t(control))) alternatives.push_back(builder.literal(std::string("\\") + letter));
  // \u00XX for the control characters of the set: one alternative per high hex digit.
  for (unsigned high = 0; high < 2; ++high) {
    ByteSet low_digits;
    for (unsigned low = 0; low < 16; ++low) {
      if (!contains(set, high * 16 + low)) continue;
      low_digits.add(uint8_t(hex_digit(low)));
      if (low >= 10) low_digits.add(uint8_t('A' + low - 10));
    }
    if (low_digits.empty()) continue;
    Sequence sequence = builder.literal(std::string("\\u00") + hex_digit(high));
    sequence.push_back(builder.bytes(low_digits));
    alternatives.push_back(std::move(sequence));
  }
  if (alternatives.empty()) alternatives.push_back({builder.bytes(ByteSet())});
  const RuleId rule = builder.add("json-char", std::move(alternatives));
  rules_.emplace(std::move(set), rule);
  return rule;
}

CharRule JsonStringChars::char_rule() {
  return [this](GrammarBuilder& builder, const CodePointRanges& ranges, bool negated) {
    return rule(builder, ranges, negated);
  };
}

RuleId string_not_in(GrammarBuilder& builder, JsonStringChars& chars, const std::vector<std::string>& names) {
  struct Node {
    std::map<uint32_t, size_t> children;
    bool named = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    size_t at = 0;
    for (uint32_t code_point : utf8::code_points(name)) {
      auto found = trie[at].children.find(code_point);
      if (found == trie[at].children.end()) {
        trie.emplace_back();
        found = trie[at].children.emplace(code_point, trie.size() - 1).first;
      }
      at = found->second;
    }
    trie[at].named = true;
  }
  const RuleId any_char = chars.any(builder);
  const RuleId rest = builder.declare("key-rest");  // any characters, then the closing quote
  builder.set_alternatives(rest, {{GrammarBuilder::call(any_char), GrammarBuilder::call(rest)}, builder.literal("\"")});
  std::vector<RuleId> rules;
  for (size_t i = 0; i < trie.size(); ++i) rules.push_back(builder.declare("key-not-named"));
  for (size_t i = 0; i < trie.size(); ++i) {
    std::vector<Sequence> alternatives;
    if (!trie[i].named) alternatives.push_back(builder.literal("\""));
    CodePointRanges continued;
    for (const auto& [code_point, child] : trie[i].children) {
      continued.push_back({code_point, code_point});
      alternatives.push_back({GrammarBuilder::call(chars.rule(builder, {{code_point, code_point}}, false)),
                              GrammarBuilder::call(rules[child])});
    }
    alternatives.push_back({GrammarBuilder::call(chars.rule(builder, continued, true)), GrammarBuilder::call(rest)});
    builder.set_alternatives(rules[i], std::move(alternatives));
  }
  Sequence open = builder.literal("\"");
  open.push_back(GrammarBuilder::call(rules[0]));
  return builder.add("key-other", {std::move(open)});
}

}  // namespace kipp::grammar
