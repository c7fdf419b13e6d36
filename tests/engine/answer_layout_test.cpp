// The answer layout on its own, with made-up token ids: each token's role, the tokens counted
// inside the think block, and where the reasoning and the answer proper begin.
#include "engine/answer_layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace kipp {
namespace {

constexpr ThinkTokens kThink{10, 11};
constexpr CallTokens kCall{20, 21};
constexpr uint32_t kWord = 1;
constexpr PartStart::Part kThought = PartStart::Part::thought, kAnswer = PartStart::Part::answer,
                          kCallPart = PartStart::Part::call, kAfterCall = PartStart::Part::after_call;

struct Taken {
  std::vector<TokenRole> roles;
  std::vector<PartStart> starts;
};

// Takes `tokens`, each 4 bytes of text long (the tags included), as the decoder does.
Taken take_all(AnswerLayout& layout, const std::vector<uint32_t>& tokens) {
  Taken taken;
  for (size_t i = 0; i < tokens.size(); ++i) {
    taken.roles.push_back(layout.take(tokens[i]));
    layout.report_starts(taken.roles.back(), 4 * i, 4, taken.starts);
  }
  return taken;
}

TEST(AnswerLayout, AHybridAnswerThinksOnlyWhenItOpensWithThink) {
  AnswerLayout thinking(AnswerStart::maybe_think, kThink);
  EXPECT_TRUE(thinking.may_open_thought());
  const Taken a = take_all(thinking, {kThink.open, kWord, kWord, kThink.close, kWord, kThink.open});
  EXPECT_EQ(a.roles, (std::vector<TokenRole>{TokenRole::opens_thought, TokenRole::thought, TokenRole::thought,
                                             TokenRole::closes_thought, TokenRole::answer, TokenRole::answer}));
  EXPECT_EQ(thinking.thought_tokens(), 2u);
  EXPECT_EQ(a.starts, (std::vector<PartStart>{{0, 4, kThought}, {12, 4, kAnswer}}));

  AnswerLayout direct(AnswerStart::maybe_think, kThink);
  const Taken b = take_all(direct, {kWord, kThink.open, kWord, kThink.close});
  EXPECT_EQ(b.roles, std::vector<TokenRole>(4, TokenRole::answer)) << "a later <think> is only text";
  EXPECT_TRUE(b.starts.empty());
  EXPECT_FALSE(direct.in_thought());
}

TEST(AnswerLayout, AThinking2507AnswerStartsInsideItsBlock) {
  AnswerLayout layout(AnswerStart::after_think, kThink);
  EXPECT_TRUE(layout.in_thought());
  EXPECT_FALSE(layout.may_open_thought());
  const Taken taken = take_all(layout, {kWord, kThink.close, kWord});
  EXPECT_EQ(taken.roles, (std::vector<TokenRole>{TokenRole::thought, TokenRole::closes_thought, TokenRole::answer}));
  EXPECT_EQ(taken.starts, (std::vector<PartStart>{{0, 0, kThought}, {4, 4, kAnswer}}));

  AnswerLayout closed_at_once(AnswerStart::after_think, kThink);
  EXPECT_EQ(take_all(closed_at_once, {kThink.close}).starts,
            (std::vector<PartStart>{{0, 0, kThought}, {0, 4, kAnswer}}));
}

TEST(AnswerLayout, WithoutThinkingEveryTokenIsTheAnswer) {
  AnswerLayout layout(AnswerStart::at_once, kThink);
  const Taken taken = take_all(layout, {kThink.open, kWord, kThink.close});
  EXPECT_EQ(taken.roles, std::vector<TokenRole>(3, TokenRole::answer));
  EXPECT_TRUE(taken.starts.empty());
  // A tokenizer without the think tokens cannot think: laid out as at_once whatever the start.
  AnswerLayout cannot = answer_layout(AnswerStart::after_think, Result<ThinkTokens>(fail("no <think>")), kCall);
  EXPECT_FALSE(cannot.in_thought());
  EXPECT_EQ(cannot.take(0), TokenRole::answer);
}

TEST(AnswerLayout, CallsBeginAndEndAtTheirTagsInEitherPart) {
  AnswerLayout layout(AnswerStart::maybe_think, kThink, kCall);
  const Taken taken = take_all(layout, {kThink.open, kCall.open, kWord, kCall.close, kThink.close, kCall.close,
                                        kCall.open, kCall.open, kCall.close});
  EXPECT_EQ(taken.starts, (std::vector<PartStart>{{0, 4, kThought},
                                                  {4, 4, kCallPart},
                                                  {12, 4, kAfterCall},
                                                  {16, 4, kAnswer},
                                                  {24, 4, kCallPart},
                                                  {32, 4, kAfterCall}}))
      << "a </tool_call> outside a call and a <tool_call> inside one are text";
  EXPECT_EQ(layout.thought_tokens(), 3u) << "a call inside the block is thought";

  AnswerLayout cut(AnswerStart::after_think, kThink, kCall);
  EXPECT_EQ(take_all(cut, {kCall.open, kThink.close, kCall.close}).starts,
            (std::vector<PartStart>{{0, 0, kThought}, {0, 4, kCallPart}, {4, 4, kAnswer}}))
      << "</think> cuts the call: the </tool_call> after it is text";
  AnswerLayout uncalled(AnswerStart::at_once, kThink);
  EXPECT_TRUE(take_all(uncalled, {kCall.open, kWord, kCall.close}).starts.empty()) << "no call tokens: no calls";
}

}  // namespace
}  // namespace kipp
