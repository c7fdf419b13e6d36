// The tool-call extractor on answers written as Qwen3 writes calls: tags that are added tokens
// (followed by the answer's layout, which reports where calls begin and end) and the same
// characters spelled by ordinary tokens. Token ids here are stand-ins; the server test runs the
// real ones.
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include "chat/reasoning_split.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace kipp {
namespace {

constexpr ThinkTokens kThink{1, 2};
constexpr CallTokens kCall{7, 8};
constexpr uint32_t kText = 3;

// An answer assembled from pieces, each one token (some of them tags), taken by its layout as
// the decoder takes them.
struct Answer {
  explicit Answer(AnswerStart start = AnswerStart::at_once) : layout(start, kThink, kCall) {}
  Answer& plain(const std::string& s) { return token(kText, s); }
  Answer& open() { return token(kCall.open, "<tool_call>"); }
  Answer& close() { return token(kCall.close, "</tool_call>"); }
  Answer& end_thought() { return token(kThink.close, "</think>"); }
  Answer& token(uint32_t id, const std::string& s) {
    layout.report_starts(layout.take(id), text.size(), s.size(), starts);
    text += s;
    return *this;
  }

  AnswerLayout layout;
  std::string text;
  std::vector<PartStart> starts;
};

ToolCallExtractor::Output extract(const Answer& answer, size_t piece = SIZE_MAX) {
  ToolCallExtractor extractor;
  ToolCallExtractor::Output out;
  for (size_t at = 0; at < answer.text.size(); at += piece) {
    // Starts go with the first piece: they may come before their text, as when a stop string holds it.
    extractor.push(std::string_view(answer.text).substr(at, piece),
                   at == 0 ? std::span<const PartStart>(answer.starts) : std::span<const PartStart>(), out);
  }
  extractor.finish(out);
  return out;
}

// The reasoning and content of an answer through the extractor and the splitter, as the server
// reads them, and the calls found.
struct Split {
  std::string reasoning, content;
  size_t calls = 0, unparsed = 0;
};
Split extract_and_split(const Answer& answer, size_t piece) {
  ToolCallExtractor extractor;
  ReasoningSplitter splitter;
  Split split;
  for (size_t at = 0;; at += piece) {
    ToolCallExtractor::Output out;
    const bool last = at + piece >= answer.text.size();
    extractor.push(std::string_view(answer.text).substr(at, piece),
                   at == 0 ? std::span<const PartStart>(answer.starts) : std::span<const PartStart>(), out);
    if (last) extractor.finish(out);
    split.calls += out.calls.size();
    split.unparsed += out.unparsed;
    splitter.push(out.text, out.starts, split.reasoning, split.content);
    if (last) break;
  }
  splitter.finish(split.reasoning, split.content);
  return split;
}

TEST(ToolCalls, TakesCallsOutWithTheTemplatesNewlines) {
  Answer a;
  a.plain("Let me check.\n\n")
      .open()
      .plain("\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Z\xC3\xBCrich\", \"n\": 1.0}}\n")
      .close();
  a.plain("\n").open().plain("\n{\"arguments\": {}, \"name\": \"now\"}\n").close();
  for (size_t piece : {SIZE_MAX, size_t(1), size_t(5)}) {
    const auto out = extract(a, piece);
    EXPECT_EQ(out.text, "Let me check.") << piece;
    ASSERT_EQ(out.calls.size(), 2u) << piece;
    EXPECT_EQ(out.calls[0].name, "get_weather");
    EXPECT_EQ(out.calls[0].arguments, "{\"city\": \"Z\xC3\xBCrich\", \"n\": 1.0}");  // json.dumps' form
    EXPECT_EQ(out.calls[1].name, "now");
    EXPECT_EQ(out.calls[1].arguments, "{}");
    EXPECT_EQ(out.unparsed, 0u);
  }
}

TEST(ToolCalls, TheSameCharactersFromOrdinaryTokensStayText) {
  Answer a;
  a.plain("Write <tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n</tool_call> to call.");
  const auto out = extract(a);
  EXPECT_EQ(out.text, a.text);
  EXPECT_TRUE(out.calls.empty());
}

TEST(ToolCalls, UnreadableAndCutCallsAreHandedOnAsTextByteForByte) {
  for (const std::string body : {"\n{\"name\": \"f\", \"arguments\": {\"a\": }\n",
                                 "\n{\"name\": 3, \"arguments\": {}}\n", "\n{\"name\": \"f\"}\n", "\n[1]\n"}) {
    Answer a;
    a.plain("A\n").open().plain(body).close();
    const auto out = extract(a, 3);
    EXPECT_EQ(out.text, a.text) << body;
    EXPECT_TRUE(out.calls.empty());
    EXPECT_EQ(out.unparsed, 1u);
  }
  Answer cut;
  cut.plain("B\n\n").open().plain("\n{\"name\": \"f\", \"argu");
  const auto out = extract(cut);
  EXPECT_EQ(out.text, cut.text);
  EXPECT_EQ(out.unparsed, 1u);
}

TEST(ToolCalls, CallsInsideThinkingAreFound) {
  Answer a;
  a.plain("<think>\nI will call.\n").open().plain("\n{\"name\": \"f\", \"arguments\": {\"q\": [1, 2]}}\n").close();
  a.plain("\n</think>\n\nDone.");
  const auto out = extract(a, 2);
  EXPECT_EQ(out.text, "<think>\nI will call.</think>\n\nDone.");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, "{\"q\": [1, 2]}");
}

// The reasoning splitter reads the text the extractor hands on: the part starts move with it, to
// where they fall once the calls are taken out.
TEST(ToolCalls, PartStartsMoveWithTheTextAroundCalls) {
  Answer a(AnswerStart::after_think);  // thinking-2507: the answer starts inside its think block, and calls from there
  a.plain("Need the weather.\n").open().plain("\n{\"name\": \"now\", \"arguments\": {}}\n").close().plain("\n");
  a.end_thought().plain("\n\nIt is late.");
  for (size_t piece : {SIZE_MAX, size_t(1), size_t(3)}) {
    const Split split = extract_and_split(a, piece);
    EXPECT_EQ(split.calls, 1u) << piece;
    EXPECT_EQ(split.reasoning, "Need the weather.") << piece;
    EXPECT_EQ(split.content, "It is late.") << piece;
  }
}

TEST(ToolCalls, AThinkTagInsideACallCutsIt) {
  Answer a(AnswerStart::after_think);
  a.plain("A\n").open().plain("\n{\"name\": ").end_thought().plain("B");
  for (size_t piece : {SIZE_MAX, size_t(2)}) {
    const Split split = extract_and_split(a, piece);
    EXPECT_EQ(split.calls, 0u);
    EXPECT_EQ(split.unparsed, 1u) << "handed on as text";
    EXPECT_EQ(split.reasoning, "A\n<tool_call>\n{\"name\": ") << piece;
    EXPECT_EQ(split.content, "B") << piece;
  }
}

TEST(ToolCalls, TagsOutOfPlaceAreText) {
  Answer a;
  a.plain("x").close().plain("y");
  EXPECT_EQ(extract(a).text, "x</tool_call>y");
  Answer nested;
  nested.open().plain("\n{\"name\": \"f\", ").open().plain("\"arguments\": {}}\n").close();
  EXPECT_EQ(extract(nested).unparsed, 1u) << "a <tool_call> inside a call is the call's text";
}

// Whether `call` is a sentence of the forced-call schema of `tools` (`only` as forced_call_schema takes it).
bool forced_call_accepts(const std::vector<ChatTool>& tools, const std::string& only, const std::string& call) {
  auto forced = forced_call_schema(tools, only);
  EXPECT_TRUE(forced.ok());
  auto compiled = grammar::compile_json_schema(nlohmann::json::parse(forced.value().schema.dump()));
  EXPECT_TRUE(compiled.ok()) << compiled.error().message;
  if (!compiled.ok()) return false;
  auto automaton = grammar::Automaton::create(std::move(compiled.value().grammar));
  return automaton.ok() && grammar::check_text(**automaton, call).value().complete;
}

// Tool schemas as pydantic (v2: $defs) and zod-to-json-schema (draft 7: definitions, and "#" for
// the root of a recursive type) write them: their local references point into the parameters,
// which the forced call's schema embeds below its own root.
TEST(ToolCalls, ForcedCallsResolveTheReferencesOfTheToolsOwnSchema) {
  const auto tool = [](std::string name, const char* parameters) {
    return ChatTool{std::move(name), nlohmann::ordered_json::parse(parameters), false, ""};
  };
  const std::vector<ChatTool> tools = {
      tool("adopt", R"({"$defs": {"Pet": {"properties": {"name": {"title": "Name", "type": "string"}},
                        "required": ["name"], "title": "Pet", "type": "object"}},
                        "properties": {"pet": {"$ref": "#/$defs/Pet"}}, "required": ["pet"],
                        "title": "Adopt", "type": "object"})"),
      tool("tree", R"({"type": "object", "properties": {"label": {"type": "string"},
                       "children": {"type": "array", "items": {"$ref": "#"}}},
                       "required": ["label"], "additionalProperties": false,
                       "$schema": "http://json-schema.org/draft-07/schema#"})"),
      tool("move", R"({"type": "object", "properties": {"to": {"$ref": "#/definitions/Point"}},
                       "required": ["to"], "definitions": {"Point": {"type": "object",
                       "properties": {"x": {"type": "number"}}, "required": ["x"], "additionalProperties": false}},
                       "$schema": "http://json-schema.org/draft-04/schema#"})")};
  EXPECT_TRUE(forced_call_accepts(tools, "adopt", R"({"name": "adopt", "arguments": {"pet": {"name": "Rex"}}})"));
  EXPECT_FALSE(forced_call_accepts(tools, "adopt", R"({"name": "adopt", "arguments": {"pet": {}}})"));
  EXPECT_TRUE(forced_call_accepts(
      tools, "tree", R"({"name": "tree", "arguments": {"label": "a", "children": [{"label": "b", "children": []}]}})"));
  EXPECT_FALSE(
      forced_call_accepts(tools, "tree", R"({"name": "tree", "arguments": {"label": "a", "children": [{}]}})"));
  EXPECT_TRUE(forced_call_accepts(tools, "", R"({"name": "move", "arguments": {"to": {"x": 1}}})"));
  EXPECT_FALSE(forced_call_accepts(tools, "", R"({"name": "move", "arguments": {"to": {"y": 1}}})"));
}

}  // namespace
}  // namespace kipp
