// Stop strings over pieces of text, and whole generations on the tiny test checkpoint checked
// against a plain argmax loop over the cpu-ref backend's logits.
#include "engine/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/prompt_lookup.h"
#include "engine/stop_strings.h"
#include "model/model_file.h"
#include "test_paths.h"
#include "tiny_checkpoint.h"

namespace kipp {
namespace {

// Feeds `text` in random pieces and returns what was released, and whether a stop matched.
std::pair<std::string, bool> run_pieces(std::vector<std::string> stops, const std::string& text, uint32_t seed,
                                        std::string* matched = nullptr) {
  StopStrings checker(std::move(stops));
  std::mt19937 rng(seed);
  std::string released;
  size_t at = 0;
  while (at < text.size()) {
    const size_t length = std::min<size_t>(text.size() - at, 1 + rng() % 4);
    const std::string before = released;
    if (checker.push(std::string_view(text).substr(at, length), released)) {
      if (matched) *matched = checker.matched();
      return {released, true};
    }
    EXPECT_EQ(released.compare(0, before.size(), before), 0) << "released text never changes";
    at += length;
  }
  checker.finish(released);
  return {released, false};
}

TEST(StopStrings, StopsAtTheFirstStopStringWhateverThePieces) {
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::string matched;
    const auto [text, stopped] = run_pieces({"END", "ab"}, "xyz a aXb cENDd ab", seed, &matched);
    EXPECT_TRUE(stopped);
    EXPECT_EQ(text, "xyz a aXb c");
    EXPECT_EQ(matched, "END");
  }
}

TEST(StopStrings, HoldsBackOnlyWhatCouldStillBecomeAStopString) {
  StopStrings checker({"</answer>"});
  std::string released;
  EXPECT_FALSE(checker.push("The answer is 4</an", released));
  EXPECT_EQ(released, "The answer is 4");
  EXPECT_FALSE(checker.push("d", released));  // "</and" cannot start "</answer>"
  EXPECT_EQ(released, "The answer is 4</and");
  EXPECT_FALSE(checker.push(" <", released));
  EXPECT_EQ(released, "The answer is 4</and ");
  checker.finish(released);
  EXPECT_EQ(released, "The answer is 4</and <");
}

TEST(StopStrings, WithoutStopsEverythingPassesAndUnicodeIsKeptWhole) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(run_pieces({}, "héllo wörld", seed).first, "héllo wörld");
    const auto [text, stopped] = run_pieces({"ö"}, "héllo wörld", seed);
    EXPECT_TRUE(stopped);
    EXPECT_EQ(text, "héllo w");
  }
}

TEST(StopStrings, EarliestMatchWinsAndOverlappingStopsWork) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::string matched;
    const auto [text, stopped] = run_pieces({"cde", "bcdx", "aab"}, "xxaabcdex", seed, &matched);
    EXPECT_TRUE(stopped);
    EXPECT_EQ(text, "xx");
    EXPECT_EQ(matched, "aab");
  }
}

TEST(PromptLookup, DraftsWhatFollowedTheLatestLongestMatch) {
  const std::vector<uint32_t> seq = {1, 2, 3, 4, 5, 9, 2, 3, 4, 6, 7, 1, 2, 3, 4};
  // The last 3 tokens (2 3 4) occurred at 6 and at 1; the latest is followed by 6 7 1 2 3 4,
  // and the copy goes on periodically (6 7 ...) past the end.
  EXPECT_EQ(lookup_draft(seq, 8), (std::vector<uint32_t>{6, 7, 1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(lookup_draft(seq, 2), (std::vector<uint32_t>{6, 7}));
  // No 3- or 2-gram match: the last token alone.
  EXPECT_EQ(lookup_draft(std::vector<uint32_t>{5, 8, 1, 9, 5, 6, 6}, 8), (std::vector<uint32_t>{6, 6, 6}));
  // A run of repeats: the latest match is one token back, and the draft repeats it.
  EXPECT_EQ(lookup_draft(std::vector<uint32_t>{4, 7, 7, 7, 7}, 5), (std::vector<uint32_t>{7, 7, 7, 7, 7}));
  // A match of one token only drafts kSingleTokenDraft tokens.
  EXPECT_EQ(lookup_draft(std::vector<uint32_t>{5, 8, 1, 9, 2, 5}, 8), (std::vector<uint32_t>{8, 1, 9}));
  EXPECT_TRUE(lookup_draft(std::vector<uint32_t>{1, 2, 3}, 8).empty());
  EXPECT_TRUE(lookup_draft(std::vector<uint32_t>{}, 8).empty());
}

TEST(PromptLookup, TheGatePausesAfterRejectionsAndProbesAgain) {
  SpeculationGate gate;
  EXPECT_TRUE(gate.should_draft());
  for (int i = 0; i < 6; ++i) gate.record(8, 0);
  int paused = 0;
  while (!gate.should_draft()) ++paused;
  EXPECT_GT(paused, 0);
  gate.record(8, 8);
  EXPECT_TRUE(gate.should_draft());
}

class Generate : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TinyCheckpoint tiny;
    ASSERT_NO_FATAL_FAILURE(testing::open_tiny_checkpoint(tiny));
    file_ = std::move(tiny.file);
    tokenizer_ = std::move(tiny.tokenizer);
    stop_ids_ = std::move(tiny.stop_ids);
    auto backend = create_backend("cpu-ref", *file_);
    ASSERT_TRUE(backend) << backend.error().message;
    backend_ = std::move(*backend);
  }

  void use_backend(const char* name) {
    auto backend = create_backend(name, *file_);
    ASSERT_TRUE(backend) << backend.error().message;
    backend_ = std::move(*backend);
  }

  Generation run(const std::vector<uint32_t>& prompt, const GenerateOptions& options, std::string* streamed = nullptr,
                 uint32_t capacity = 256) {
    auto session = backend_->create_session(capacity);
    EXPECT_TRUE(session);
    GenerateContext context{*backend_, **session, *tokenizer_, stop_ids_};
    auto result = generate(context, prompt, options, [&](std::string_view piece, std::span<const PartStart>) {
      EXPECT_FALSE(piece.empty());
      if (streamed) *streamed += piece;
    });
    EXPECT_TRUE(result) << result.error().message;
    return result ? *result : Generation{};
  }

  // A greedy run worked out by hand, without the generator or the sampler: evaluate, add the
  // biases, take the first greatest logit over the tokenizer's ids; up to `max_tokens`, or to
  // and including a stop id.
  std::vector<uint32_t> argmax_loop(const std::vector<uint32_t>& prompt, uint32_t max_tokens,
                                    const std::vector<LogitBias>& biases = {}) {
    auto session = backend_->create_session(256);
    EXPECT_TRUE(session);
    if (!session) return {};
    std::vector<float> logits(family::vocab);
    std::vector<uint32_t> out;
    std::vector<uint32_t> next = prompt;
    for (uint32_t i = 0; i < max_tokens; ++i) {
      EvalItem item{session->get(), next, (*session)->length(), 1, logits.data(), {}};
      EXPECT_TRUE(backend_->eval(std::span(&item, 1)));
      for (const LogitBias& bias : biases) logits[bias.token] += bias.bias;
      const auto end = logits.begin() + tokenizer_->vocab_size();
      const uint32_t token = uint32_t(std::max_element(logits.begin(), end) - logits.begin());
      out.push_back(token);
      if (is_stop_id(token)) break;
      next = {token};
    }
    return out;
  }

  bool is_stop_id(uint32_t token) const {
    return std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end();
  }

  // The text of a run: its tokens decoded, a final stop id left out.
  std::string text_of(std::vector<uint32_t> tokens) {
    if (!tokens.empty() && is_stop_id(tokens.back())) tokens.pop_back();
    auto text = tokenizer_->decode(tokens);
    EXPECT_TRUE(text);
    return text ? *text : std::string();
  }

  std::vector<uint32_t> prompt() {
    auto ids = tokenizer_->encode("The quick brown fox jumps over");
    EXPECT_TRUE(ids);
    return ids ? *ids : std::vector<uint32_t>{};
  }

  std::unique_ptr<ModelFile> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<BackendModel> backend_;
  std::vector<uint32_t> stop_ids_;
};

// The whole run, its length and how it ends, comes from the argmax loop, not from the generator.
TEST_F(Generate, GreedyIsTheArgmaxLoopAndStreamsItsText) {
  GenerateOptions options;
  options.max_tokens = 12;
  options.sampling.temperature = 0.0f;
  std::string streamed;
  const Generation g = run(prompt(), options, &streamed);
  const std::vector<uint32_t> expected = argmax_loop(prompt(), 12);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(g.tokens, expected);
  EXPECT_EQ(g.finish, is_stop_id(expected.back()) ? FinishReason::stop_token : FinishReason::length);
  EXPECT_EQ(g.text, text_of(expected));
  EXPECT_EQ(streamed, g.text);
  EXPECT_EQ(g.timings.prompt_tokens, prompt().size());
  EXPECT_EQ(g.timings.generated_tokens, expected.size());
}

TEST_F(Generate, StopsOnAStopStringThatSpansTokens) {
  GenerateOptions options;
  options.max_tokens = 40;
  options.sampling.temperature = 0.0f;
  options.sampling.logit_bias = {{family::token_im_end, -100.0f}, {family::token_endoftext, -100.0f}};
  const std::vector<uint32_t> expected = argmax_loop(prompt(), 40, options.sampling.logit_bias);
  ASSERT_EQ(expected.size(), 40u) << "the stop ids are biased away";
  const std::string full = text_of(expected);
  EXPECT_EQ(run(prompt(), options).text, full);
  // A stop string taken from the middle of the text, across token boundaries where possible.
  ASSERT_GE(full.size(), 12u);
  size_t from = full.size() / 3, to = from + 6;
  while (from > 0 && (full[from] & 0xC0) == 0x80) --from;  // whole characters at both ends
  while (to < full.size() && (full[to] & 0xC0) == 0x80) ++to;
  const std::string stop = full.substr(from, to - from);
  ASSERT_FALSE(stop.empty());
  options.stop = {stop};
  std::string streamed;
  const Generation cut = run(prompt(), options, &streamed);
  EXPECT_EQ(cut.finish, FinishReason::stop_string);
  EXPECT_EQ(cut.stop, stop);
  EXPECT_EQ(cut.text, full.substr(0, full.find(stop)));
  EXPECT_EQ(streamed, cut.text);
}

TEST_F(Generate, StopsOnTheCheckpointsStopTokens) {
  GenerateOptions options;
  options.max_tokens = 10;
  options.sampling.temperature = 0.0f;
  options.sampling.logit_bias = {{family::token_im_end, 100.0f}};
  const Generation g = run(prompt(), options);
  EXPECT_EQ(g.finish, FinishReason::stop_token);
  EXPECT_EQ(g.tokens, std::vector<uint32_t>{family::token_im_end});
  EXPECT_EQ(g.stop, "<|im_end|>");
  EXPECT_EQ(g.text, "");
}

TEST_F(Generate, SeededSamplingRepeatsAndTheBudgetHolds) {
  GenerateOptions options;
  options.max_tokens = 9;
  options.sampling.temperature = 1.0f;
  options.sampling.top_k = 40;
  options.sampling.seed = 1234;
  options.sampling.logit_bias = {{family::token_im_end, -100.0f}, {family::token_endoftext, -100.0f}};
  const Generation a = run(prompt(), options), b = run(prompt(), options);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.tokens.size(), 9u);
  EXPECT_EQ(a.finish, FinishReason::length);
}

TEST_F(Generate, EndsAtTheSessionCapacityAndRefusesBadPrompts) {
  GenerateOptions options;
  options.max_tokens = 100;
  options.sampling.temperature = 0.0f;
  options.sampling.logit_bias = {{family::token_im_end, -100.0f}, {family::token_endoftext, -100.0f}};
  const std::vector<uint32_t> p = prompt();
  const Generation g = run(p, options, nullptr, uint32_t(p.size()) + 5);
  EXPECT_EQ(g.finish, FinishReason::length);
  EXPECT_EQ(g.tokens.size(), 6u);  // 5 evaluated after the prompt, and the last one sampled

  auto session = backend_->create_session(4);
  GenerateContext context{*backend_, **session, *tokenizer_, stop_ids_};
  EXPECT_FALSE(generate(context, p, options));                              // longer than the session
  EXPECT_FALSE(generate(context, std::vector<uint32_t>{}, options));        // empty
  EXPECT_FALSE(generate(context, std::vector<uint32_t>{200000}, options));  // not a token
  options.sampling.top_p = 0.0f;
  EXPECT_FALSE(generate(context, std::vector<uint32_t>{1, 2}, options));  // bad settings
}

TEST_F(Generate, SpeculativeDecodingGivesExactlyTheGreedyTokens) {
  use_backend("cpu");  // batch-invariant: a row's logits do not depend on the rows beside it
  // Prompts that repeat themselves (drafts accepted), that do not (rejected or none), and that
  // contain the stop tokens so that drafts propose them.
  const std::vector<std::string> texts = {
      "one two three one two three one two three one two",
      "The quick brown fox jumps over the lazy dog.",
      "def f(x):\n    return x + 1\n\ndef g(x):\n    return x + 1\n\ndef h(x):\n",
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n",
      "a",
      "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,",
      "日本語のテキスト、日本語のテキスト、日本語の",
      "<|endoftext|> x <|endoftext|> x <|endoftext|>",
  };
  uint32_t drafted = 0, accepted = 0;
  for (const std::string& text : texts) {
    for (uint32_t max_tokens : {1u, 7u, 40u}) {
      auto ids = tokenizer_->encode(text);
      ASSERT_TRUE(ids);
      GenerateOptions options;
      options.max_tokens = max_tokens;
      options.sampling.temperature = 0.0f;
      // The synthetic model repeats one token, which drafts always guess. Three boosted tokens
      // and a frequency penalty make it rotate irregularly, so that drafts copied from what it
      // wrote are also rejected; this also checks that the penalties see accepted drafts in order.
      if (max_tokens == 40) {
        options.sampling.logit_bias = {{1000, 100.0f}, {2000, 100.0f}, {3000, 100.0f}};
        options.sampling.frequency_penalty = 2.0f;
      }
      options.stop = {"@@"};
      const Generation plain = run(*ids, options);
      options.speculative = true;
      std::string streamed;
      const Generation spec = run(*ids, options, &streamed);
      EXPECT_EQ(spec.tokens, plain.tokens) << text << " n=" << max_tokens;
      EXPECT_EQ(spec.text, plain.text);
      EXPECT_EQ(streamed, spec.text);
      EXPECT_EQ(spec.finish, plain.finish);
      drafted += spec.timings.draft_tokens;
      accepted += spec.timings.accepted_draft_tokens;
    }
  }
  // The set exercised both outcomes of a verification.
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, drafted);
}

TEST_F(Generate, SpeculativeDecodingLeavesTheCacheAsPlainDecodingDoes) {
  use_backend("cpu");
  auto ids = tokenizer_->encode("one two three one two three one two three");
  ASSERT_TRUE(ids);
  GenerateOptions options;
  options.max_tokens = 20;
  options.sampling.temperature = 0.0f;
  for (bool speculative : {false, true}) {
    options.speculative = speculative;
    auto session = backend_->create_session(256);
    GenerateContext context{*backend_, **session, *tokenizer_, stop_ids_};
    auto g = generate(context, *ids, options);
    ASSERT_TRUE(g);
    EXPECT_EQ((*session)->length(), ids->size() + g->tokens.size() - 1) << speculative;
  }
  options.sampling.temperature = 0.7f;
  auto session = backend_->create_session(256);
  GenerateContext context{*backend_, **session, *tokenizer_, stop_ids_};
  EXPECT_FALSE(generate(context, *ids, options));  // drafts need greedy
}

// A budget on a thought the model would not end (</think> biased away): the first `budget`
// tokens are the unbudgeted greedy run's (worked out by hand), then </think> and "\n\n" come, then the answer, the same with
// prompt-lookup drafts.
TEST_F(Generate, AThinkingBudgetClosesTheThoughtAndTheAnswerFollows) {
  auto ids = tokenizer_->encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  ASSERT_TRUE(ids);
  auto close = tokenizer_->encode("</think>");
  auto separator = tokenizer_->encode("\n\n");
  auto newline = tokenizer_->encode("\n");
  ASSERT_TRUE(close && separator && newline);
  ASSERT_EQ(close->size(), 1u);
  GenerateOptions options;
  options.max_tokens = 16;
  options.sampling.temperature = 0.0f;
  options.sampling.logit_bias = {{close->front(), -100.0f},
                                 {family::token_im_end, -100.0f},
                                 {family::token_endoftext, -100.0f}};
  options.answer_start = AnswerStart::after_think;
  const std::vector<uint32_t> free = argmax_loop(*ids, 16, options.sampling.logit_bias);
  ASSERT_EQ(free.size(), 16u);
  ASSERT_EQ(std::count(free.begin(), free.end(), close->front()), 0);
  EXPECT_EQ(run(*ids, options).tokens, free) << "without a budget, the plain greedy run";
  constexpr uint32_t budget = 5;
  options.thinking_budget = budget;
  for (bool speculative : {false, true}) {
    options.speculative = speculative;
    const Generation g = run(*ids, options);
    ASSERT_EQ(g.tokens.size(), 16u);
    EXPECT_TRUE(std::equal(g.tokens.begin(), g.tokens.begin() + budget, free.begin()));
    // "\n" first unless the thought's last token ended in one.
    const bool ended_newline = tokenizer_->token_bytes(g.tokens[budget - 1]).back() == '\n';
    std::vector<uint32_t> closing = ended_newline ? std::vector<uint32_t>{} : *newline;
    closing.push_back(close->front());
    closing.insert(closing.end(), separator->begin(), separator->end());
    EXPECT_TRUE(std::equal(closing.begin(), closing.end(), g.tokens.begin() + budget)) << "speculative " << speculative;
    EXPECT_NE(g.text.find("</think>\n\n"), std::string::npos) << g.text;
  }
}

}  // namespace
}  // namespace kipp
