// The tool-call extractor on answers written as Qwen3 writes calls: tags that are added tokens
// (marked) and the same characters spelled by ordinary tokens (not marked). Token ids here are
// stand-ins; the server test runs the real ones.
#include "chat/tool_calls.h"
#include "chat/reasoning_split.h"

#include <gtest/gtest.h>

namespace kipp {
namespace {

constexpr uint32_t kOpen = 7, kClose = 8;
const std::string kOpenTag = "<tool_call>", kCloseTag = "</tool_call>";

// An answer assembled from pieces, some of them tag tokens.
struct Answer {
  std::string text;
  std::vector<AddedTokenMark> marks;
  Answer& plain(const std::string& s) {
    text += s;
    return *this;
  }
  Answer& open() { return tag(kOpen, kOpenTag); }
  Answer& close() { return tag(kClose, kCloseTag); }
  Answer& tag(uint32_t id, const std::string& s) {
    marks.push_back({text.size(), id});
    text += s;
    return *this;
  }
};

ToolCallExtractor::Output extract(const Answer& answer, size_t piece = SIZE_MAX) {
  ToolCallExtractor extractor(kOpen, kClose, kOpenTag, kCloseTag);
  ToolCallExtractor::Output out;
  for (size_t at = 0; at < answer.text.size(); at += piece) {
    // Marks go with the first piece: they may come before their text, as when a stop string holds it.
    extractor.push(std::string_view(answer.text).substr(at, piece),
                   at == 0 ? std::span<const AddedTokenMark>(answer.marks) : std::span<const AddedTokenMark>(), {},
                   out);
  }
  extractor.finish(out);
  return out;
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
  Answer a;  // thinking-2507: the answer starts inside its think block, and calls from there
  a.plain("Need the weather.\n").open().plain("\n{\"name\": \"now\", \"arguments\": {}}\n").close().plain("\n");
  const std::vector<PartStart> starts = {{0, 0, true}, {a.text.size(), 8, false}};
  a.plain("</think>\n\nIt is late.");
  for (size_t piece : {SIZE_MAX, size_t(1), size_t(3)}) {
    ToolCallExtractor extractor(kOpen, kClose, kOpenTag, kCloseTag);
    ReasoningSplitter splitter;
    std::string reasoning, content;
    size_t calls = 0;
    for (size_t at = 0; at <= a.text.size(); at += piece) {
      ToolCallExtractor::Output out;
      const bool first = at == 0, last = at + piece >= a.text.size();
      extractor.push(std::string_view(a.text).substr(at, piece),
                     first ? std::span<const AddedTokenMark>(a.marks) : std::span<const AddedTokenMark>(),
                     first ? std::span<const PartStart>(starts) : std::span<const PartStart>(), out);
      if (last) extractor.finish(out);
      calls += out.calls.size();
      splitter.push(out.text, out.starts, reasoning, content);
      if (last) break;
    }
    splitter.finish(reasoning, content);
    EXPECT_EQ(calls, 1u) << piece;
    EXPECT_EQ(reasoning, "Need the weather.") << piece;
    EXPECT_EQ(content, "It is late.") << piece;
  }
}

TEST(ToolCalls, TagsOutOfPlaceAreText) {
  Answer a;
  a.plain("x").close().plain("y");
  EXPECT_EQ(extract(a).text, "x</tool_call>y");
}

}  // namespace
}  // namespace kipp
