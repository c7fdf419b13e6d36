#include "grammar/json_schema_values.h"

#include <cmath>

#include "grammar/json_schema_strings.h"

namespace kipp::grammar {

using nlohmann::json;

JsonLayout JsonLayout::create(GrammarBuilder& builder, uint32_t max_whitespace) {
  JsonLayout layout;
  if (max_whitespace > 0) {
    ByteSet space;
    for (char c : {' ', '\t', '\n', '\r'}) space.add(uint8_t(c));
    layout.ws = builder.repeat("ws", builder.bytes(space), 0, max_whitespace);
  }
  for (auto [rule, mark] : {std::pair{&layout.comma, ','}, std::pair{&layout.colon, ':'}}) {
    Sequence sequence;
    layout.space(sequence);
    sequence.push_back(builder.bytes(ByteSet::of(uint8_t(mark))));
    layout.space(sequence);
    *rule = builder.add(mark == ',' ? "comma" : "colon", {std::move(sequence)});
  }
  return layout;
}

Result<Decimal> schema_number(const json& number) {
  if (number.is_number_integer()) {
    auto value = parse_decimal(number.dump());
    if (value) return *value;
  } else if (number.is_number_float()) {
    const double value = number.get<double>();
    if (std::fabs(value) < 9007199254740992.0) {
      if (auto parsed = parse_decimal(number.dump())) return *parsed;
    }
    return fail("the number ", number.dump(), " was read as a double and may have been rounded");
  }
  return fail("'", number.dump(), "' is not a number that can be compared exactly");
}

bool json_equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    auto x = schema_number(a), y = schema_number(b);
    if (x && y) return compare(*x, *y) == 0;
    return a == b;
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_equal(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [key, value] : a.items()) {
      auto other = b.find(key);
      if (other == b.end() || !json_equal(value, *other)) return false;
    }
    return true;
  }
  return a == b;
}

std::string plain_json(const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      std::string out = "{";
      for (const auto& [key, member] : value.items()) {
        if (out.size() > 1) out += ',';
        out += "\"" + escape_json_string(key) + "\":" + plain_json(member);
      }
      return out + "}";
    }
    case json::value_t::array: {
      std::string out = "[";
      for (const json& item : value) {
        if (out.size() > 1) out += ',';
        out += plain_json(item);
      }
      return out + "]";
    }
    case json::value_t::string: return "\"" + escape_json_string(value.get_ref<const std::string&>()) + "\"";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: {
      auto decimal = schema_number(value);
      return decimal ? plain_decimal(*decimal) : value.dump();
    }
    default: return value.dump();
  }
}

Result<RuleId> literal_rule(GrammarBuilder& builder, const JsonLayout& layout, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      if (value.empty()) {
        Sequence empty = builder.literal("{");
        layout.space(empty);
        empty.push_back(builder.bytes(ByteSet::of('}')));
        return builder.add("const-object", {std::move(empty)});
      }
      if (value.size() > Permutation::kMaxMembers)
        return fail("an object literal with ", value.size(), " members: at most ", Permutation::kMaxMembers,
                    " can be matched in any order");
      Permutation members;
      members.separator = layout.comma;
      for (const auto& [key, member] : value.items()) {
        KIPP_ASSIGN(const RuleId member_value, literal_rule(builder, layout, member));
        Sequence sequence = builder.literal("\"" + escape_json_string(key) + "\"");
        sequence.push_back(GrammarBuilder::call(layout.colon));
        sequence.push_back(GrammarBuilder::call(member_value));
        members.members.push_back({builder.add("const-member", {std::move(sequence)}), true});
      }
      Sequence sequence = builder.literal("{");
      layout.space(sequence);
      sequence.push_back(builder.permutation(std::move(members)));
      layout.space(sequence);
      sequence.push_back(builder.bytes(ByteSet::of('}')));
      return builder.add("const-object", {std::move(sequence)});
    }
    case json::value_t::array: {
      Sequence sequence = builder.literal("[");
      layout.space(sequence);
      for (size_t i = 0; i < value.size(); ++i) {
        if (i > 0) sequence.push_back(GrammarBuilder::call(layout.comma));
        KIPP_ASSIGN(const RuleId item, literal_rule(builder, layout, value[i]));
        sequence.push_back(GrammarBuilder::call(item));
      }
      if (!value.empty()) layout.space(sequence);
      sequence.push_back(builder.bytes(ByteSet::of(']')));
      return builder.add("const-array", {std::move(sequence)});
    }
    case json::value_t::string:
      return builder.add("const-string", {builder.literal("\"" + escape_json_string(value.get_ref<const std::string&>()) + "\"")});
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: {
      KIPP_ASSIGN(const Decimal number, schema_number(value));
      NumberConstraints equal;
      equal.lower = NumberBound{number, false};
      equal.upper = NumberBound{number, false};
      KIPP_ASSIGN(const std::optional<RuleId> rule, number_rule(builder, equal));
      if (!rule) return fail("the number ", plain_decimal(number), " has no spelling");  // cannot happen: it spells itself
      return *rule;
    }
    default: return builder.add("const-" + std::string(value.type_name()), {builder.literal(value.dump())});
  }
}

}  // namespace kipp::grammar
