// plan_completion: the serving policy every API's request goes through (context budget, default
// max_tokens, seeds, how the answer opens, the forced call's frame, the banned call token).
#include "scheduler/completion_plan.h"

#include <gtest/gtest.h>

namespace kipp {
namespace {

using Reason = CompletionRefusal::Reason;

ServingLimits limits() {
  ServingLimits serving;
  serving.variant = Variant::instruct;
  serving.context = 1000;
  serving.pool_positions = 600;
  serving.vocab = 151936;
  serving.call_tokens = CallTokens{151657, 151658};
  return serving;
}

CompletionAsk ask(bool chat, size_t longest) {
  CompletionAsk made;
  made.chat = chat;
  made.longest_prompt = longest;
  made.sampling = recommended_sampling(Variant::instruct);
  made.sampling.seed = 7;
  made.seeded = true;
  return made;
}

TEST(CompletionPlan, MaxTokensDefaultsToSixteenOrTheRoomLeftInTheSmallerOfContextAndPool) {
  EXPECT_EQ(plan_completion(ask(false, 100), limits()).value().max_tokens, 16u);
  EXPECT_EQ(plan_completion(ask(true, 100), limits()).value().max_tokens, 500u) << "the pool's 600 positions";
  ServingLimits big_pool = limits();
  big_pool.pool_positions = 5000;
  EXPECT_EQ(plan_completion(ask(true, 100), big_pool).value().max_tokens, 900u) << "the context's 1000";
  EXPECT_EQ(plan_completion(ask(true, 700), limits()).value().max_tokens, 1u) << "a prompt past the pool's room";
  CompletionAsk asked = ask(true, 100);
  asked.max_tokens = 42;
  EXPECT_EQ(plan_completion(asked, limits()).value().max_tokens, 42u);
}

// kipp serve --default-max-tokens: the limit of a request that sets none, on every endpoint, still
// cut to the room left; a request's own limit stands.
TEST(CompletionPlan, TheServersDefaultMaxTokensStandsInForAnAbsentOne) {
  ServingLimits serving = limits();
  serving.default_max_tokens = 64;
  EXPECT_EQ(plan_completion(ask(true, 100), serving).value().max_tokens, 64u);
  EXPECT_EQ(plan_completion(ask(false, 100), serving).value().max_tokens, 64u);
  EXPECT_EQ(plan_completion(ask(true, 560), serving).value().max_tokens, 40u) << "the pool's room left";
  CompletionAsk asked = ask(true, 100);
  asked.max_tokens = 8;
  EXPECT_EQ(plan_completion(asked, serving).value().max_tokens, 8u);
}

TEST(CompletionPlan, RefusesPromptsAndAnswersPastTheContextAndBadSampling) {
  auto full = plan_completion(ask(true, 1000), limits());
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().reason, Reason::prompt_too_long);
  EXPECT_EQ(full.error().message,
            "the prompt has 1000 tokens; the context holds 1000 (n_prompt_tokens 1000, n_ctx 1000)");

  CompletionAsk long_answer = ask(false, 990);
  long_answer.max_tokens = 11;
  ServingLimits refusing = limits();
  refusing.refuse_long_max_tokens = true;
  auto past = plan_completion(long_answer, refusing);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().reason, Reason::answer_too_long);
  EXPECT_EQ(past.error().message, "the prompt (990 tokens) plus max_tokens (11) exceeds the context of 1000 tokens");
  long_answer.max_tokens = 10;
  EXPECT_TRUE(plan_completion(long_answer, refusing).ok()) << "exactly filling the context";

  CompletionAsk hot = ask(false, 10);
  hot.sampling.temperature = -1.0f;
  auto refused = plan_completion(hot, limits());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().reason, Reason::invalid_sampling);
  EXPECT_NE(refused.error().message.find("temperature"), std::string::npos) << refused.error().message;
}

TEST(CompletionPlan, AMaxTokensPastTheRoomLeftIsCutToIt) {
  ServingLimits big_pool = limits();
  big_pool.pool_positions = 5000;
  CompletionAsk agent = ask(true, 990);
  agent.max_tokens = 32000;  // Claude Code's
  EXPECT_EQ(plan_completion(agent, big_pool).value().max_tokens, 10u) << "the context's room";
  agent.longest_prompt = 500;
  EXPECT_EQ(plan_completion(agent, limits()).value().max_tokens, 100u) << "the pool's room";
  agent.max_tokens = 99;
  EXPECT_EQ(plan_completion(agent, limits()).value().max_tokens, 99u) << "what fits is kept";
}

TEST(CompletionPlan, KeepsTheClientsSeedAndDrawsOneOtherwise) {
  EXPECT_EQ(plan_completion(ask(false, 10), limits()).value().sampling.seed, 7u);
  CompletionAsk unseeded = ask(false, 10);
  unseeded.seeded = false;
  // Two draws of 64 random bits: equal (or both 7) once in 2^64 runs.
  const uint64_t first = plan_completion(unseeded, limits()).value().sampling.seed;
  const uint64_t second = plan_completion(unseeded, limits()).value().sampling.seed;
  EXPECT_NE(first, second);
}

TEST(CompletionPlan, OpensAChatAnswerAsTheVariantsTemplateDoesAndACompletionAtOnce) {
  EXPECT_EQ(plan_completion(ask(true, 10), limits()).value().answer_start, chat_answer_start(Variant::instruct, true));
  CompletionAsk quiet = ask(true, 10);
  quiet.thinking = false;
  EXPECT_EQ(plan_completion(quiet, limits()).value().answer_start, AnswerStart::at_once);
  ServingLimits thinking = limits();
  thinking.variant = Variant::thinking_2507;
  EXPECT_EQ(plan_completion(ask(true, 10), thinking).value().answer_start, AnswerStart::after_think);
  EXPECT_EQ(plan_completion(ask(false, 10), thinking).value().answer_start, AnswerStart::at_once);
}

TEST(CompletionPlan, FramesAForcedCallAndBansTheCallTokenUnderToolChoiceNone) {
  CompletionAsk forced = ask(true, 10);
  forced.constraint_is_call = true;
  forced.calls_repeat = true;
  const CompletionRequest framed = plan_completion(forced, limits()).value();
  ASSERT_TRUE(framed.grammar_frame.has_value());
  EXPECT_EQ(framed.grammar_frame->open, 151657u);
  EXPECT_EQ(framed.grammar_frame->close, 151658u);
  EXPECT_TRUE(framed.grammar_frame->repeats);
  EXPECT_TRUE(framed.sampling.banned.empty());

  CompletionAsk none = ask(true, 10);
  none.calls_banned = true;
  const CompletionRequest banned = plan_completion(none, limits()).value();
  EXPECT_FALSE(banned.grammar_frame.has_value());
  EXPECT_EQ(banned.sampling.banned, std::vector<uint32_t>{151657});

  ServingLimits no_call_tokens = limits();
  no_call_tokens.call_tokens.reset();
  EXPECT_TRUE(plan_completion(none, no_call_tokens).value().sampling.banned.empty()) << "no token to ban";
}

}  // namespace
}  // namespace kipp
