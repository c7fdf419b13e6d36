#include "chat/coder_call_grammar.h"

#include <array>
#include <map>

#include "chat/coder_calls.h"

namespace kipp {
namespace {

using Json = nlohmann::ordered_json;
using grammar::ByteSet;
using grammar::GrammarBuilder;
using grammar::RuleId;
using grammar::Sequence;

// The tags a raw value ends at (read_coder_call), so a value must not hold them.
constexpr std::array<std::string_view, 3> kValueEnds = {"</parameter>", "<parameter=", "</function>"};

constexpr uint32_t kUnbounded = GrammarBuilder::kUnbounded;
// The longest minLength or maxLength a raw value counts: each character counted is a copy of the
// tag automaton's ~30 rules. Beyond it the keyword is left out (or refused, when strict).
constexpr uint64_t kMaxCountedLength = 1000;

// Keywords that say nothing a value must meet.
bool annotation(std::string_view keyword) {
  return keyword == "type" || keyword == "description" || keyword == "title" || keyword == "default" ||
         keyword == "examples" || keyword == "$comment" || keyword == "deprecated" || keyword == "readOnly" ||
         keyword == "writeOnly";
}

std::string escape_pointer(std::string_view token) {
  std::string out;
  for (const char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

bool xml_name(std::string_view name) { return !name.empty() && name.find_first_of("<>\n") == std::string_view::npos; }

class CallGrammar {
 public:
  CallGrammar(grammar::JsonForm form, bool strict) : form_(form), strict_(strict) {}

  Status add_function(const ChatTool& tool, size_t index) {
    const std::string where = "/tools/" + std::to_string(index) + "/function/parameters";
    if (!xml_name(tool.name))
      return fail("the function name '", tool.name, "' cannot be written in Qwen3-Coder's XML call form");
    Sequence sequence = builder_.literal("\n<function=" + tool.name + ">\n");
    const Json& parameters = tool.parameters;
    const Json properties = parameters.value("properties", Json());
    if (!properties.is_object()) {
      // No parameters named: any, with raw values, unless additionalProperties forbids them.
      if (parameters.value("additionalProperties", Json(true)) != Json(false)) {
        const RuleId any =
            builder_.repeat("any-parameter", GrammarBuilder::call(open_parameter()), 0, GrammarBuilder::kUnbounded);
        sequence.push_back(GrammarBuilder::call(any));
      }
    } else {
      std::set<std::string> required;
      for (const Json& name : parameters.value("required", Json::array()))
        if (name.is_string()) required.insert(name.get<std::string>());
      for (const std::string& name : required)
        if (!properties.contains(name))
          return fail("keyword 'required' at ", where, "/required: the parameter '", name,
                      "' is required but not described in properties");
      for (const auto& [name, schema] : properties.items()) {
        if (!xml_name(name))
          return fail("the parameter name '", name, "' of '", tool.name,
                      "' cannot be written in Qwen3-Coder's XML call form");
        KIPP_ASSIGN(const RuleId value, value_rule(schema, parameters, where + "/properties/" + escape_pointer(name)));
        Sequence block = builder_.literal("<parameter=" + name + ">\n");
        block.push_back(GrammarBuilder::call(value));
        const Sequence close = builder_.literal("\n</parameter>\n");
        block.insert(block.end(), close.begin(), close.end());
        std::vector<Sequence> alternatives{std::move(block)};
        if (!required.contains(name)) alternatives.push_back({});
        sequence.push_back(GrammarBuilder::call(builder_.add("parameter-" + name, std::move(alternatives))));
      }
    }
    const Sequence end = builder_.literal("</function>\n");
    sequence.insert(sequence.end(), end.begin(), end.end());
    functions_.push_back(std::move(sequence));
    return builder_.check_item_count();
  }

  Result<CoderForcedCall> finish() && {
    const RuleId root = builder_.add("call", std::move(functions_));
    CoderForcedCall out;
    KIPP_ASSIGN(out.grammar, std::move(builder_).finish(root));
    out.unenforced = std::move(unenforced_);
    return out;
  }

 private:
  // A parameter's value by its types (the header's rules).
  Result<RuleId> value_rule(const Json& schema, const Json& parameters, const std::string& pointer) {
    const std::set<std::string> types = parameter_types(schema, parameters);
    if (types.empty() || types.contains("string")) return text_value(schema, pointer);
    // The parameter's schema beside the definitions its references may name.
    Json standalone = schema.is_object() ? schema : Json::object();
    for (const char* definitions : {"$defs", "definitions"})
      if (parameters.contains(definitions) && !standalone.contains(definitions))
        standalone[definitions] = parameters[definitions];
    grammar::SchemaOptions options;
    options.strict = strict_;
    options.form = form_;
    auto compiled = grammar::compile_json_schema(nlohmann::json(standalone), options);
    if (!compiled) {
      if (const auto refused = grammar::parse_refusal(compiled.error().message))
        return fail("keyword '", refused->keyword, "' at ", pointer, refused->pointer, ": ",
                    compiled.error().message.substr(compiled.error().message.find(": ") + 2));
      return fail(pointer, ": ", compiled.error().message);
    }
    for (grammar::Unenforced& left_out : compiled->unenforced)
      unenforced_.push_back({left_out.keyword, pointer + left_out.pointer});
    const RuleId value = builder_.splice("value-", compiled->grammar);
    // The template prints booleans and null through str(), so the model has seen True, False and
    // None: where the types allow them and no enum or const narrows them, they are allowed too.
    const bool narrowed = schema.is_object() && (schema.contains("enum") || schema.contains("const"));
    std::vector<Sequence> alternatives{{GrammarBuilder::call(value)}};
    if (!narrowed && types.contains("boolean")) {
      alternatives.push_back(builder_.literal("True"));
      alternatives.push_back(builder_.literal("False"));
    }
    if (!narrowed && types.contains("null")) alternatives.push_back(builder_.literal("None"));
    return alternatives.size() == 1 ? value : builder_.add("python-value", std::move(alternatives));
  }

  // Raw text: a string enum or const as its texts, anything without the value-ending tags
  // otherwise, minLength and maxLength counted in characters.
  Result<RuleId> text_value(const Json& schema, const std::string& pointer) {
    std::optional<Json> choices;
    uint64_t min_length = 0, max_length = kUnbounded;
    const auto left_out = [&](const std::string& keyword) -> Status {
      const std::string at = pointer + "/" + escape_pointer(keyword);
      if (strict_)
        return fail("keyword '", keyword, "' at ", at,
                    ": Qwen3-Coder writes this value as raw text, where the keyword cannot be enforced");
      unenforced_.push_back({keyword, at});
      return {};
    };
    if (schema.is_object()) {
      for (const auto& [keyword, value] : schema.items()) {
        if (annotation(keyword)) continue;
        const bool texts = (keyword == "enum" && value.is_array()) || keyword == "const";
        if (texts && !choices) {
          choices = keyword == "const" ? Json::array({value}) : value;
          bool all_strings = true;
          for (const Json& choice : *choices) all_strings = all_strings && choice.is_string();
          if (all_strings) continue;
          choices.reset();
        }
        if ((keyword == "minLength" || keyword == "maxLength") && value.is_number_unsigned() &&
            value.get<uint64_t>() <= kMaxCountedLength) {
          (keyword == "minLength" ? min_length : max_length) = value.get<uint64_t>();
          continue;
        }
        KIPP_TRY(left_out(keyword));
      }
    }
    if (!choices) {
      if (min_length > max_length) return fail(pointer, ": minLength is above maxLength: no text fits");
      return raw_text(uint32_t(min_length), max_length == kUnbounded ? kUnbounded : uint32_t(max_length));
    }
    if (min_length > 0) KIPP_TRY(left_out("minLength"));  // the listed texts are what they are
    if (max_length != kUnbounded) KIPP_TRY(left_out("maxLength"));
    std::vector<Sequence> alternatives;
    for (const Json& choice : *choices) {
      const std::string& text = choice.get_ref<const std::string&>();
      bool holds_end = false;
      for (const std::string_view end : kValueEnds) holds_end = holds_end || text.find(end) != std::string::npos;
      if (!holds_end) alternatives.push_back(builder_.literal(text));
    }
    if (alternatives.empty())
      return fail(pointer, ": no value of the enum can be written as raw text in Qwen3-Coder's XML call form");
    return builder_.add("text-choice", std::move(alternatives));
  }

  // The Aho-Corasick automaton of kValueEnds over ASCII bytes: per state (a partly matched tag),
  // its successor on each byte, and whether it completes a tag.
  struct TagAutomaton {
    std::vector<std::array<uint32_t, 128>> step;
    std::vector<bool> complete;
  };
  static TagAutomaton tag_automaton() {
    struct Node {
      std::map<uint8_t, uint32_t> next;
      uint32_t failure = 0;
      bool complete = false;
    };
    std::vector<Node> nodes(1);
    for (const std::string_view tag : kValueEnds) {
      uint32_t at = 0;
      for (const char c : tag) {
        const auto [found, added] = nodes[at].next.try_emplace(uint8_t(c), uint32_t(nodes.size()));
        if (added) nodes.emplace_back();
        at = found->second;
      }
      nodes[at].complete = true;
    }
    // Breadth first, so that each node's failure (shallower) has its transitions already.
    TagAutomaton automaton;
    automaton.step.resize(nodes.size());
    std::vector<uint32_t> order{0};
    for (size_t i = 0; i < order.size(); ++i) {
      const uint32_t node = order[i];
      for (size_t byte = 1; byte < 128; ++byte) {
        const auto child = nodes[node].next.find(uint8_t(byte));
        if (child != nodes[node].next.end()) {
          automaton.step[node][byte] = child->second;
          nodes[child->second].failure = node == 0 ? 0 : automaton.step[nodes[node].failure][byte];
          nodes[child->second].complete = nodes[child->second].complete || nodes[nodes[child->second].failure].complete;
          order.push_back(child->second);
        } else {
          automaton.step[node][byte] = node == 0 ? 0 : automaton.step[nodes[node].failure][byte];
        }
      }
    }
    for (const Node& node : nodes) automaton.complete.push_back(node.complete);
    return automaton;
  }

  // Text (valid UTF-8, no NUL) of min to max characters that holds none of kValueEnds: one rule
  // per state of the tag automaton and count of characters so far (counted up to max, or up to
  // min when there is no max); the states that complete a tag are left out.
  RuleId raw_text(uint32_t min, uint32_t max) {
    if (const auto known = raw_texts_.find({min, max}); known != raw_texts_.end()) return known->second;
    static const TagAutomaton tags = tag_automaton();
    const size_t states = tags.step.size();
    const uint32_t counted = max == kUnbounded ? min : max;  // counts above this one are alike
    const auto index = [&](size_t state, uint32_t count) { return size_t(count) * states + state; };
    std::vector<RuleId> rules((size_t(counted) + 1) * states);
    for (uint32_t count = 0; count <= counted; ++count)
      for (size_t state = 0; state < states; ++state)
        if (!tags.complete[state]) rules[index(state, count)] = builder_.declare("raw-text");
    if (!non_ascii_) non_ascii_ = builder_.utf8_class("non-ascii", {{0x80, 0x10FFFF}}, false);
    for (uint32_t count = 0; count <= counted; ++count) {
      const bool more = max == kUnbounded || count < max;
      const uint32_t next_count = max == kUnbounded ? std::min(count + 1, counted) : count + 1;
      for (size_t state = 0; state < states; ++state) {
        if (tags.complete[state]) continue;  // a tag is complete: no text goes on from here
        std::vector<Sequence> alternatives;
        if (count >= min) alternatives.push_back({});
        if (more) {
          std::map<uint32_t, ByteSet> by_target;
          for (size_t byte = 1; byte < 128; ++byte)
            if (!tags.complete[tags.step[state][byte]]) by_target[tags.step[state][byte]].add(uint8_t(byte));
          for (const auto& [target, bytes] : by_target)
            alternatives.push_back({builder_.bytes(bytes), GrammarBuilder::call(rules[index(target, next_count)])});
          alternatives.push_back(
              {GrammarBuilder::call(*non_ascii_), GrammarBuilder::call(rules[index(0, next_count)])});
        }
        builder_.set_alternatives(rules[index(state, count)], std::move(alternatives));
      }
    }
    raw_texts_.emplace(std::make_pair(min, max), rules[index(0, 0)]);
    return rules[index(0, 0)];
  }

  // A parameter of any name with a raw value.
  RuleId open_parameter() {
    ByteSet name_bytes;
    for (size_t byte = 0x21; byte < 0x7F; ++byte)
      if (byte != '<' && byte != '>') name_bytes.add(uint8_t(byte));
    const RuleId name = builder_.repeat("parameter-name", builder_.bytes(name_bytes), 1, GrammarBuilder::kUnbounded);
    Sequence block = builder_.literal("<parameter=");
    block.push_back(GrammarBuilder::call(name));
    const Sequence open_end = builder_.literal(">\n");
    block.insert(block.end(), open_end.begin(), open_end.end());
    block.push_back(GrammarBuilder::call(raw_text(0, kUnbounded)));
    const Sequence close = builder_.literal("\n</parameter>\n");
    block.insert(block.end(), close.begin(), close.end());
    return builder_.add("open-parameter", {std::move(block)});
  }

  GrammarBuilder builder_;
  const grammar::JsonForm form_;
  const bool strict_;
  std::vector<Sequence> functions_;
  std::vector<grammar::Unenforced> unenforced_;
  std::map<std::pair<uint32_t, uint32_t>, RuleId> raw_texts_;  // by min and max characters
  std::optional<RuleId> non_ascii_;
};

}  // namespace

Result<CoderForcedCall> coder_forced_call(const std::vector<ChatTool>& tools, const std::string& only,
                                          grammar::JsonForm form) {
  if (tools.empty()) return fail("a call is forced, but no tools are offered");
  bool strict = true;
  for (const ChatTool& tool : tools)
    if (only.empty() || tool.name == only) strict = strict && tool.strict;
  CallGrammar call(form, strict);
  bool any = false;
  for (size_t index = 0; index < tools.size(); ++index) {
    if (!only.empty() && tools[index].name != only) continue;
    KIPP_TRY(call.add_function(tools[index], index));
    any = true;
  }
  if (!any) return fail("names the function '", only, "', which the tools do not offer");
  return std::move(call).finish();
}

}  // namespace kipp
