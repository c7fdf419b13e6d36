// Qwen3-Coder's XML tool calls: reading a call's text back into arguments by the tool's schema,
// re-rendering calls as the template does, the forced-call grammar, and the extractor reading
// calls in that form. The template's rendering as a whole is compared with Python's jinja2 in
// chat.golden_tools.coder (tests/chat/golden_jinja2.py).
#include "chat/coder_calls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "chat/coder_call_grammar.h"
#include "chat/tool_calls.h"
#include "grammar/matcher.h"

namespace kipp {
namespace {

using Json = nlohmann::ordered_json;

ChatTool tool(std::string name, const char* parameters, bool strict = false) {
  Json declaration = {{"type", "function"}, {"function", {{"name", name}, {"parameters", Json::parse(parameters)}}}};
  return ChatTool{std::move(name), Json::parse(parameters), strict, declaration};
}

const std::vector<ChatTool>& edit_tools() {
  static const std::vector<ChatTool> tools = {
      tool("edit", R"({"type": "object", "properties": {
        "path": {"type": "string"}, "line": {"type": "integer"}, "scale": {"type": "number"},
        "force": {"type": "boolean"}, "note": {"type": ["string", "null"]}, "tags": {"type": "array"},
        "meta": {"type": "object"}, "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "anything": {"description": "no type"}}, "required": ["path"]})"),
  };
  return tools;
}

Json arguments_of(std::string_view body) {
  const auto call = read_coder_call(body, edit_tools());
  EXPECT_TRUE(call.has_value()) << body;
  return call ? Json::parse(call->arguments) : Json();
}

TEST(CoderCalls, ValuesReadByTheirParametersTypes) {
  const Json arguments = arguments_of(
      "\n<function=edit>\n<parameter=path>\nsrc/main.cpp\n</parameter>\n<parameter=line>\n42\n</parameter>\n"
      "<parameter=scale>\n0.5\n</parameter>\n<parameter=force>\nTrue\n</parameter>\n<parameter=note>\nNone\n"
      "</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n<parameter=meta>\n{\"k\": 1}\n</parameter>\n"
      "<parameter=limit>\nnull\n</parameter>\n<parameter=anything>\n7\n</parameter>\n</function>\n");
  EXPECT_EQ(arguments, Json::parse(R"({"path": "src/main.cpp", "line": 42, "scale": 0.5, "force": true, "note": null,
                                       "tags": ["a", "b"], "meta": {"k": 1}, "limit": null, "anything": 7})"));
  // Written order is kept (the template re-renders arguments in their order).
  EXPECT_EQ(arguments.begin().key(), "path");
}

TEST(CoderCalls, StringsKeepTheirTextAndLoseOneNewlineAtEachEnd) {
  EXPECT_EQ(arguments_of("<function=edit>\n<parameter=path>\n\n42\n\n</parameter>\n</function>")["path"], "\n42\n");
  EXPECT_EQ(arguments_of("<function=edit>\n<parameter=path>\n  spaced  \n</parameter>\n</function>")["path"],
            "  spaced  ");
  EXPECT_EQ(arguments_of("<function=edit>\n<parameter=path>\n<div></div>\n</parameter>\n</function>")["path"],
            "<div></div>");
  // A value that does not fit its type stays the text, for validation to refuse.
  EXPECT_EQ(arguments_of("<function=edit>\n<parameter=line>\nforty\n</parameter>\n</function>")["line"], "forty");
  EXPECT_EQ(arguments_of("<function=edit>\n<parameter=line>\n4.5\n</parameter>\n</function>")["line"], "4.5");
}

TEST(CoderCalls, MissingClosingTagsAreTolerated) {
  EXPECT_EQ(arguments_of("\n<function=edit>\n<parameter=path>\na\n<parameter=line>\n3\n</function>\n"),
            Json::parse(R"({"path": "a", "line": 3})"));
  EXPECT_EQ(arguments_of("\n<function=edit>\n<parameter=path>\na\n</parameter>\n"), Json::parse(R"({"path": "a"})"));
  EXPECT_EQ(arguments_of("\n<function=edit>\n</function>\n"), Json::object());
}

TEST(CoderCalls, WhatIsNotACallIsRefused) {
  for (const std::string_view body :
       {"", "\n{\"name\": \"edit\", \"arguments\": {}}\n", "\n<function=>\n</function>\n",
        "<function=edit>\n<parameter=path>\na\n</parameter>\n<parameter=path>\nb\n</parameter>\n</function>",
        "<function=edit>\n</function>\ntrailing words", "<function=edit>\nstray text\n</function>",
        "<function=ed\nit>\n</function>"})
    EXPECT_FALSE(read_coder_call(body, edit_tools()).has_value()) << body;
}

TEST(CoderCalls, ANestedJsonValueDeeperThanAnyFileStaysText) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  const Json arguments = arguments_of("<function=edit>\n<parameter=tags>\n" + deep + "\n</parameter>\n</function>");
  EXPECT_TRUE(arguments["tags"].is_string());
}

TEST(CoderCalls, ACallRenderedByTheTemplateReadsBack) {
  const Json arguments = Json::parse(R"({"path": "a b\n", "line": 3, "scale": 1e-05, "force": false,
                                         "note": null, "tags": [1, "x"], "meta": {"nested": {"list": []}}})");
  std::string out;
  ASSERT_TRUE(append_coder_call(out, {"edit", arguments.dump()}).ok());
  ASSERT_TRUE(out.starts_with("\n<tool_call>") && out.ends_with("</tool_call>")) << out;
  const std::string body =
      out.substr(std::string("\n<tool_call>").size(),
                 out.size() - std::string("\n<tool_call>").size() - std::string("</tool_call>").size());
  EXPECT_EQ(arguments_of(body), arguments);
  EXPECT_FALSE(append_coder_call(out, {"edit", "[1]"}).ok()) << "arguments that are not an object cannot be printed";
}

// The forced call's grammar over `body`, whole.
bool forced_accepts(const std::vector<ChatTool>& tools, const std::string& only, std::string_view body) {
  auto forced = coder_forced_call(tools, only, grammar::JsonForm::tidy);
  EXPECT_TRUE(forced.ok()) << forced.error().message;
  if (!forced.ok()) return false;
  auto automaton = grammar::Automaton::create(std::move(forced->grammar));
  EXPECT_TRUE(automaton.ok());
  return automaton.ok() && grammar::check_text(**automaton, body).value().complete;
}

TEST(CoderForcedCall, TheGrammarHoldsTheCallToTheSchema) {
  const std::vector<ChatTool> tools = {tool("get_weather",
                                            R"({"type": "object", "properties": {"city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"]})"),
                                       tool("now", R"({"type": "object", "properties": {}})")};
  const auto call = [](std::string params) { return "\n<function=get_weather>\n" + params + "</function>\n"; };
  const std::string city = "<parameter=city>\nZ\xC3\xBCrich </div>\n</parameter>\n";
  EXPECT_TRUE(forced_accepts(tools, "", call(city)));
  EXPECT_TRUE(forced_accepts(tools, "", call(city + "<parameter=unit>\ncelsius\n</parameter>\n")));
  EXPECT_TRUE(forced_accepts(tools, "", call(city + "<parameter=days>\n3\n</parameter>\n")));
  EXPECT_TRUE(forced_accepts(tools, "", "\n<function=now>\n</function>\n"));
  EXPECT_FALSE(forced_accepts(tools, "", call(""))) << "city is required";
  EXPECT_FALSE(forced_accepts(tools, "", call(city + "<parameter=unit>\nkelvin\n</parameter>\n")));
  EXPECT_FALSE(forced_accepts(tools, "", call(city + "<parameter=days>\n0\n</parameter>\n")));
  EXPECT_FALSE(forced_accepts(tools, "", call("<parameter=city>\na</parameter>b\n</parameter>\n")))
      << "a value cannot hold the tag that ends it";
  EXPECT_FALSE(forced_accepts(tools, "", call("<parameter=city>\na<parameter=b\n</parameter>\n")));
  EXPECT_FALSE(forced_accepts(tools, "now", call(city))) << "only the named function";
  EXPECT_FALSE(coder_forced_call(tools, "missing", grammar::JsonForm::tidy).ok());
}

TEST(CoderForcedCall, RawTextKeywordsAreRefusedWhenStrictAndListedOtherwise) {
  const char* parameters = R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}})";
  const auto strict = coder_forced_call({tool("f", parameters, true)}, "", grammar::JsonForm::tidy);
  ASSERT_FALSE(strict.ok());
  const auto refusal = grammar::parse_refusal(strict.error().message);
  ASSERT_TRUE(refusal.has_value()) << strict.error().message;
  EXPECT_EQ(refusal->keyword, "pattern");
  EXPECT_EQ(refusal->pointer, "/tools/0/function/parameters/properties/id/pattern");
  const auto loose = coder_forced_call({tool("f", parameters, false)}, "", grammar::JsonForm::tidy);
  ASSERT_TRUE(loose.ok()) << loose.error().message;
  ASSERT_EQ(loose->unenforced.size(), 1u);
  EXPECT_EQ(loose->unenforced[0].pointer, "/tools/0/function/parameters/properties/id/pattern");
}

TEST(CoderForcedCall, RawTextCountsItsLengthInCharacters) {
  const std::vector<ChatTool> tools = {
      tool("f", R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 3}},
                    "required": ["s"]})")};
  const auto call = [](std::string value) {
    return "\n<function=f>\n<parameter=s>\n" + value + "\n</parameter>\n</function>\n";
  };
  EXPECT_FALSE(forced_accepts(tools, "", call("a")));
  EXPECT_TRUE(forced_accepts(tools, "", call("ab")));
  EXPECT_TRUE(forced_accepts(tools, "", call("\xC3\xBC\xC3\xBC\xC3\xBC"))) << "three characters, six bytes";
  EXPECT_TRUE(forced_accepts(tools, "", call("<</")));
  EXPECT_FALSE(forced_accepts(tools, "", call("abcd")));
}

TEST(CoderCalls, TypesFollowLocalReferencesAndCombinators) {
  const Json root = Json::parse(R"({"$defs": {"Pet": {"type": "object"}, "Loop": {"$ref": "#/$defs/Loop"}}})");
  const auto types = [&](const char* schema) { return parameter_types(Json::parse(schema), root); };
  EXPECT_EQ(types(R"({"$ref": "#/$defs/Pet"})"), std::set<std::string>{"object"});
  EXPECT_EQ(types(R"({"anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}]})"),
            (std::set<std::string>{"object", "null"}));
  EXPECT_EQ(types(R"({"enum": ["a", 1, 2.5]})"), (std::set<std::string>{"string", "integer", "number"}));
  EXPECT_TRUE(types(R"({"$ref": "#/$defs/Loop"})").empty());
  EXPECT_TRUE(types(R"({"$ref": "#/$defs/Missing"})").empty());
  EXPECT_TRUE(types(R"({"description": "anything"})").empty());
}

TEST(CoderForcedCall, ParametersWithoutPropertiesTakeAnyNames) {
  const std::vector<ChatTool> tools = {tool("run", R"({"type": "object"})")};
  EXPECT_TRUE(forced_accepts(tools, "", "\n<function=run>\n<parameter=cmd>\nls -la\n</parameter>\n</function>\n"));
  EXPECT_TRUE(forced_accepts(tools, "", "\n<function=run>\n</function>\n"));
  const std::vector<ChatTool> closed = {tool("run", R"({"type": "object", "additionalProperties": false})")};
  EXPECT_FALSE(forced_accepts(closed, "", "\n<function=run>\n<parameter=cmd>\nls\n</parameter>\n</function>\n"));
}

// Every sentence of the forced grammar that a random walk writes reads back as a call whose
// arguments have the schema's types, and every call of valid arguments, rendered as the template
// renders history, is a sentence.
TEST(CoderForcedCall, RandomWalksReadBackAsValidCalls) {
  const std::vector<ChatTool>& tools = edit_tools();
  auto forced = coder_forced_call(tools, "", grammar::JsonForm::tidy);
  ASSERT_TRUE(forced.ok()) << forced.error().message;
  auto automaton = grammar::Automaton::create(std::move(forced->grammar));
  ASSERT_TRUE(automaton.ok());
  // Walks that favour the form's own pieces, so that most of them finish: at each step either
  // one of these, where the grammar takes all of it, or one allowed byte.
  const std::vector<std::string> pieces = {"\n</parameter>\n",
                                           "</function>\n",
                                           "<parameter=",
                                           "line>\n",
                                           "scale",
                                           "force>\n",
                                           "true",
                                           "1",
                                           "2.5",
                                           "null",
                                           "\"x\"",
                                           "]",
                                           "}",
                                           ", ",
                                           "a"};
  std::mt19937 rng(7);
  int complete = 0;
  for (int walk = 0; walk < 300; ++walk) {
    grammar::StateId state = (*automaton)->start();
    std::string text;
    for (int step = 0; step < 300; ++step) {
      if ((*automaton)->accepts(state) && (rng() % 4 == 0 || !(*automaton)->continues(state))) break;
      const auto walk_through = [&](std::string_view piece) -> std::optional<grammar::StateId> {
        grammar::StateId at = state;
        for (const char c : piece) {
          auto to = (*automaton)->next(at, uint8_t(c));
          if (!to.ok() || *to == grammar::kDeadState) return std::nullopt;
          at = *to;
        }
        return at;
      };
      if (rng() % 2 == 0) {
        const std::string& piece = pieces[rng() % pieces.size()];
        if (const auto to = walk_through(piece)) {
          text += piece;
          state = *to;
          continue;
        }
      }
      std::vector<std::pair<uint8_t, grammar::StateId>> next;
      for (int byte = 0; byte < 128; ++byte)
        if (const auto to = walk_through(std::string(1, char(byte)))) next.emplace_back(uint8_t(byte), *to);
      ASSERT_FALSE(next.empty()) << text;
      const auto& [byte, to] = next[rng() % next.size()];
      text += char(byte);
      state = to;
    }
    if (!(*automaton)->accepts(state)) continue;
    ++complete;
    const auto call = read_coder_call(text, tools);
    ASSERT_TRUE(call.has_value()) << text;
    const Json arguments = Json::parse(call->arguments);
    ASSERT_TRUE(arguments.contains("path")) << text;
    // Each typed value has its type, or is text that no JSON reader here can hold (a number
    // beyond the double range, which the grammar's JSON allows).
    const auto typed = [&](const char* name, bool (Json::*is)() const noexcept) {
      if (!arguments.contains(name) || (arguments[name].*is)()) return;
      ASSERT_TRUE(arguments[name].is_string()) << text;
      EXPECT_TRUE(Json::parse(arguments[name].get<std::string>(), nullptr, false).is_discarded())
          << name << ": " << text;
    };
    typed("line", &Json::is_number);
    typed("scale", &Json::is_number);
    typed("force", &Json::is_boolean);
    typed("tags", &Json::is_array);
    typed("meta", &Json::is_object);
    if (arguments.contains("limit") && !arguments["limit"].is_null()) typed("limit", &Json::is_number);
    // Re-rendered, the call is a sentence again, except where a number now prints in exponent
    // form with a fraction (7183.0e118 reads as 7.183e+121), which the JSON grammar allows an
    // integer only without (json_schema.h, the known limits).
    const auto exponent_form = [](const Json& number) {
      if (!number.is_number_float()) return false;
      const double magnitude = std::fabs(number.get<double>());
      return magnitude >= 1e16 || (magnitude != 0 && magnitude < 1e-4);
    };
    bool reprinted_exponent = false;
    for (const char* name : {"line", "scale", "limit"})
      reprinted_exponent |= arguments.contains(name) && exponent_form(arguments[name]);
    if (reprinted_exponent) continue;
    std::string rendered;
    ASSERT_TRUE(append_coder_call(rendered, *call).ok());
    const std::string body = rendered.substr(12, rendered.size() - 12 - 12);
    EXPECT_TRUE(grammar::check_text(**automaton, body).value().complete) << body;
  }
  EXPECT_GT(complete, 50);
}

TEST(CoderCalls, TheExtractorReadsXmlCallsByToken) {
  constexpr ThinkTokens kThink{1, 2};
  constexpr CallTokens kCall{7, 8};
  AnswerLayout layout(AnswerStart::at_once, kThink, kCall);
  std::string text;
  std::vector<PartStart> starts;
  const auto token = [&](uint32_t id, const std::string& s) {
    layout.report_starts(layout.take(id), text.size(), s.size(), starts);
    text += s;
  };
  token(3, "I'll edit it.\n");
  token(kCall.open, "<tool_call>");
  token(3,
        "\n<function=edit>\n<parameter=path>\na.cpp\n</parameter>\n<parameter=line>\n9\n</parameter>\n</function>\n");
  token(kCall.close, "</tool_call>");
  token(3, "<tool_call>\n<function=edit>\n</function>\n</tool_call>");  // ordinary tokens: text
  ToolCallExtractor extractor(call_reader(CallSyntax::xml, edit_tools()));
  ToolCallExtractor::Output out;
  for (size_t at = 0; at < text.size(); at += 5)
    extractor.push(std::string_view(text).substr(at, 5),
                   at == 0 ? std::span<const PartStart>(starts) : std::span<const PartStart>(), out);
  extractor.finish(out);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "edit");
  EXPECT_EQ(Json::parse(out.calls[0].arguments), Json::parse(R"({"path": "a.cpp", "line": 9})"));
  EXPECT_EQ(out.text, "I'll edit it.<tool_call>\n<function=edit>\n</function>\n</tool_call>");
  EXPECT_EQ(out.unparsed, 0u);
}

}  // namespace
}  // namespace kipp
