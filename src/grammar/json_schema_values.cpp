#include "grammar/json_schema_values.h"

#include <algorithm>
#include <cmath>

#include "grammar/json_schema_refs.h"
#include "grammar/json_schema_strings.h"

namespace kipp::grammar {

using nlohmann::json;

JsonLayout JsonLayout::create(GrammarBuilder& builder, const SchemaOptions& options) {
  JsonLayout layout;
  const bool tidy = options.form == JsonForm::tidy;
  if (!tidy && options.max_whitespace > 0) {
    ByteSet space;
    for (char c : {' ', '\t', '\n', '\r'}) space.add(uint8_t(c));
    layout.ws = builder.repeat("ws", builder.bytes(space), 0, options.max_whitespace);
  }
  // The tidy form's one optional space after a separator (none where the exact form's ws stands).
  Sequence separator_space;
  if (tidy)
    separator_space.push_back(
        GrammarBuilder::call(builder.repeat("space", builder.bytes(ByteSet::of(uint8_t(' '))), 0, 1)));
  for (auto [rule, mark] : {std::pair{&layout.comma, ','}, std::pair{&layout.colon, ':'}}) {
    Sequence sequence;
    layout.space(sequence);
    sequence.push_back(builder.bytes(ByteSet::of(uint8_t(mark))));
    layout.space(sequence);
    sequence.insert(sequence.end(), separator_space.begin(), separator_space.end());
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

Status check_json_depth(const json& value, size_t limit) {
  // Each open level: the container and where its next child is. A path, not every pending value,
  // so the memory is the depth.
  struct Level {
    const json* container;
    json::const_iterator next;
  };
  std::vector<Level> path;
  if (value.is_structured()) path.push_back({&value, value.cbegin()});
  while (!path.empty()) {
    Level& level = path.back();
    if (level.next == level.container->cend()) {
      path.pop_back();
      continue;
    }
    const json& child = *level.next;
    ++level.next;
    if (!child.is_structured()) continue;
    if (path.size() == limit) {
      std::string pointer;
      for (const Level& open : path) {
        auto at = std::prev(open.next);
        pointer += "/" + (open.container->is_object() ? pointer_token(at.key())
                                                      : std::to_string(at - open.container->cbegin()));
      }
      return fail("keyword 'schema' at ", pointer, ": nests deeper than the limit of ", limit, " levels");
    }
    path.push_back({&child, child.cbegin()});
  }
  return {};
}

std::string JsonValueSet::key_of(const json& value) {
  switch (value.type()) {
    case json::value_t::string: return "s" + value.get_ref<const std::string&>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: {
      // Equal numbers have one value, so one nearest double (different ones may share it).
      const double number = value.get<double>();
      return "n" + std::string(reinterpret_cast<const char*>(&number), sizeof number);
    }
    case json::value_t::array: return "a" + std::to_string(value.size());
    case json::value_t::object: return "o" + std::to_string(value.size());
    default: return value.dump();
  }
}

bool JsonValueSet::contains(const json& value) const {
  const auto found = by_key_.find(key_of(value));
  return found != by_key_.end() && std::any_of(found->second.begin(), found->second.end(),
                                               [&](const json& other) { return json_equal(other, value); });
}

bool JsonValueSet::insert(const json& value) {
  std::vector<json>& same_key = by_key_[key_of(value)];
  if (std::any_of(same_key.begin(), same_key.end(), [&](const json& other) { return json_equal(other, value); }))
    return false;
  same_key.push_back(value);
  return true;
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
      return builder.add("const-string",
                         {builder.literal("\"" + escape_json_string(value.get_ref<const std::string&>()) + "\"")});
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: {
      KIPP_ASSIGN(const Decimal number, schema_number(value));
      NumberConstraints equal;
      equal.lower = NumberBound{number, false};
      equal.upper = NumberBound{number, false};
      KIPP_ASSIGN(const std::optional<RuleId> rule, number_rule(builder, equal));
      if (!rule)
        return fail("the number ", plain_decimal(number), " has no spelling");  // cannot happen: it spells itself
      return *rule;
    }
    default: return builder.add("const-" + std::string(value.type_name()), {builder.literal(value.dump())});
  }
}

}  // namespace kipp::grammar
