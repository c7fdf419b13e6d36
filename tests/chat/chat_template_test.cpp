// The chat renderer against expectations worked out by hand from the templates: Python's
// strip('\n') semantics, which @huggingface/jinja 0.5.11 gets wrong so the golden test cannot speak
// to them (see tests/chat/golden_test.mjs), and each variant's rules stated once as examples (the
// golden tests also render them from the published templates).
#include "chat/chat_template.h"

#include <gtest/gtest.h>

namespace kipp {
namespace {

ChatMessage user(std::string content) { return {"user", std::move(content), std::nullopt, {}}; }
ChatMessage bot(std::string content) { return {"assistant", std::move(content), std::nullopt, {}}; }

std::string render(Variant variant, const std::vector<ChatMessage>& messages, bool generation = true,
                   bool thinking = true) {
  auto out = render_chat(variant, messages, {generation, thinking, {}});
  EXPECT_TRUE(out) << out.error().message;
  return out ? *out : std::string();
}

TEST(ChatTemplate, StripsOnlyNewlinesAsPythonDoes) {
  // The last assistant turn gets a think block; its answer keeps a leading space.
  EXPECT_EQ(render(Variant::instruct, {user("Q"), bot(" ok\n\nthen")}, false),
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n ok\n\nthen<|im_end|>\n");
  // Spaces at the edges of the thinking and of the answer stay; only newlines go.
  EXPECT_EQ(
      render(Variant::instruct, {user("Q"), bot("<think>\n spaced \n</think>\n  answer")}, false),
      "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n spaced \n</think>\n\n  answer<|im_end|>\n");
  ChatMessage given = bot("\n \n");
  given.reasoning_content = "\xF0\x9F\x8E\x89\n  ";
  EXPECT_EQ(
      render(Variant::instruct, {user("Q"), given}, false),
      "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\xF0\x9F\x8E\x89\n  \n</think>\n\n \n<|im_end|>\n");
}

TEST(ChatTemplate, HybridThinkingSwitchOnlyChangesTheGenerationPrompt) {
  const std::vector<ChatMessage> messages = {user("Hi")};
  EXPECT_EQ(render(Variant::instruct, messages), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render(Variant::instruct, messages, true, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, Instruct2507NeverThinks) {
  const std::vector<ChatMessage> messages = {user("Q1"), bot("<think>\nx\n</think>\n\nA1"), user("Q2"), bot("A2")};
  // Assistant turns are shown as given, with no think block added or removed, and the thinking
  // switch changes nothing.
  const std::string history =
      "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>\nx\n</think>\n\nA1<|im_end|>\n"
      "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\nA2<|im_end|>\n";
  EXPECT_EQ(render(Variant::instruct_2507, messages), history + "<|im_start|>assistant\n");
  EXPECT_EQ(render(Variant::instruct_2507, messages, true, false), history + "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Thinking2507AlwaysOpensThinking) {
  const std::vector<ChatMessage> messages = {user("Q1"), bot("<think>\nx\n</think>\n\nA1"), user("Q2")};
  // Earlier thinking is dropped as in the hybrid template; the answer opens <think>.
  const std::string expected =
      "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n"
      "<|im_start|>assistant\n<think>\n";
  EXPECT_EQ(render(Variant::thinking_2507, messages), expected);
  EXPECT_EQ(render(Variant::thinking_2507, messages, true, false), expected);
}

// Qwen3-Coder's template has no thinking logic, and renders a conversation without tools as
// Instruct-2507's does; its tools (an XML form of its own) are refused until they are supported.
TEST(ChatTemplate, CoderChatsAsInstruct2507WithoutToolsAndNeedsObjectArguments) {
  const std::vector<ChatMessage> messages = {user("Q1"), bot("A1"), user("Q2")};
  EXPECT_EQ(render(Variant::coder, messages), render(Variant::instruct_2507, messages));
  // Its template prints each argument as a <parameter> block: arguments must be an object.
  auto not_object = render_chat(Variant::coder, {user("Q"), {"assistant", "", std::nullopt, {{"f", "[1, 2]"}}}}, {});
  ASSERT_FALSE(not_object);
  EXPECT_NE(not_object.error().message.find("messages[1].tool_calls[0]"), std::string::npos)
      << not_object.error().message;
}

TEST(ChatTemplate, RefusesWhatItCannotRender) {
  EXPECT_FALSE(render_chat(Variant::base, {user("Hi")}, {}));
  EXPECT_FALSE(render_chat(Variant::instruct, {}, {}));
  EXPECT_FALSE(render_chat(Variant::instruct, {{"function", "42", std::nullopt, {}}}, {}));
  EXPECT_FALSE(
      render_chat(Variant::instruct, {{"developer", "x", std::nullopt, {}}}, {}));  // parse_chat_messages maps it
  EXPECT_FALSE(render_chat(Variant::instruct, {{"user", "x", std::string("thought"), {}}}, {}));
  EXPECT_FALSE(render_chat(Variant::instruct, {{"user", "x", std::nullopt, {{"f", "{}"}}}}, {}));
}

}  // namespace
}  // namespace kipp
