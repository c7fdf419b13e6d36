// The KV pool's bookkeeping, and the scheduler on the tiny test checkpoint: whatever runs beside
// a request, however its prompt is chunked and whatever prefix it adopts, its answer equals the
// same request generated alone on a private session (the fast CPU backend is batch-invariant).
#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "engine/generator.h"
#include "engine/hidden_rows.h"
#include "engine/logprobs.h"
#include "engine/token_constraint.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "model/model_file.h"
#include "scheduler/kv_block_pool.h"
#include "test_paths.h"
#include "tiny_checkpoint.h"

namespace kipp {
namespace {

std::vector<uint32_t> block_of(uint32_t first) {
  std::vector<uint32_t> tokens(kKvBlockTokens);
  for (uint32_t i = 0; i < kKvBlockTokens; ++i) tokens[i] = first + i;
  return tokens;
}

TEST(KvBlockPool, PublishedPrefixesAreAdoptedByContentAndVerifiedByTokens) {
  KvBlockPool pool(8);
  pool.reserve(2);
  const uint32_t a = pool.take_reserved().value();
  const uint32_t b = pool.take_reserved().value();
  std::vector<uint32_t> prompt = block_of(100);
  const std::vector<uint32_t> second = block_of(500);
  prompt.insert(prompt.end(), second.begin(), second.end());
  const uint64_t first_address = pool.publish(a, 0, std::span(prompt).first(32));
  EXPECT_EQ(first_address, KvBlockPool::chain(0, std::span(prompt).first(32)));
  pool.publish(b, first_address, std::span(prompt).subspan(32, 32));
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.stats().cached, 2u);
  EXPECT_EQ(pool.stats().free, 8u);

  EXPECT_EQ(pool.adopt_prefix(prompt, 8), (std::vector<uint32_t>{a, b}));
  EXPECT_EQ(pool.stats().cached, 0u);
  EXPECT_EQ(pool.stats().free, 6u);
  EXPECT_EQ(pool.adopt_prefix(prompt, 1), (std::vector<uint32_t>{a})) << "at most max_blocks";
  std::vector<uint32_t> other = prompt;
  other[40] = 7;  // same first block, different second
  EXPECT_EQ(pool.adopt_prefix(other, 8), (std::vector<uint32_t>{a}));
  other[0] = 7;  // the chain breaks at the first block
  EXPECT_TRUE(pool.adopt_prefix(other, 8).empty());
  EXPECT_EQ(pool.stats().reused, 4u);
}

TEST(KvBlockPool, CachedBlocksAreEvictedOldestFirstAndOnlyWhenNeeded) {
  KvBlockPool pool(3);
  pool.reserve(3);
  std::vector<uint32_t> held;
  for (uint32_t i = 0; i < 3; ++i) {
    held.push_back(pool.take_reserved().value());
    const auto tokens = block_of(1000 * (i + 1));
    pool.publish(held[i], 0, tokens);
  }
  EXPECT_FALSE(pool.can_reserve(1)) << "every block is held";
  pool.release(held[1]);
  pool.release(held[0]);
  EXPECT_TRUE(pool.can_reserve(2));
  EXPECT_FALSE(pool.can_reserve(3));
  pool.reserve(1);
  EXPECT_EQ(pool.take_reserved().value(), held[1]) << "the least recently released cached block goes first";
  EXPECT_EQ(pool.stats().evicted, 1u);
  EXPECT_TRUE(pool.adopt_prefix(block_of(2000), 1).empty()) << "an evicted block is no longer found";
  EXPECT_EQ(pool.adopt_prefix(block_of(1000), 1), (std::vector<uint32_t>{held[0]}));
  EXPECT_FALSE(pool.take_reserved()) << "nothing is reserved any more: a bug, reported as an error";
}

// Token-granular reuse: after a prefix, the published block (full, or a finished sequence's tail)
// that begins with the longest run of the prompt's next tokens lends its rows; it is pinned while
// the caller copies them, and an evicted one is found no more.
TEST(KvBlockPool, TheBlockThatBeginsLikeThePromptLendsItsFirstRows) {
  KvBlockPool pool(4);
  pool.reserve(3);
  const uint32_t full = pool.take_reserved().value(), tail = pool.take_reserved().value(),
                 other = pool.take_reserved().value();
  const std::vector<uint32_t> prefix = block_of(100);
  const uint64_t after = pool.publish(full, 0, prefix);
  std::vector<uint32_t> next = block_of(500);
  pool.publish_tail(tail, after, std::span(next).first(10));  // 500..509, after the prefix
  pool.publish_tail(other, 0, std::span(next).first(20));     // after nothing: another prefix
  for (uint32_t block : {full, tail, other}) pool.release(block);
  EXPECT_EQ(pool.stats().cached, 3u);

  std::vector<uint32_t> prompt = next;
  prompt[6] = 7;  // the prompt goes on like the tail for 6 tokens
  auto found = pool.find_rows(after, prompt);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->block, tail);
  EXPECT_EQ(found->rows, 6u);
  EXPECT_EQ(pool.stats().cached, 2u) << "pinned while the caller copies";
  pool.release(tail);
  EXPECT_EQ(pool.find_rows(after, std::span(next).first(3))->rows, 3u) << "no more than the tokens asked about";
  pool.release(tail);
  // A full block lends its first rows too, when the prompt parts from it inside the block.
  std::vector<uint32_t> parting = prefix;
  parting[20] = 7;
  found = pool.find_rows(0, parting);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->block, full);
  EXPECT_EQ(found->rows, 20u) << "the full block shares 20, the other tail none";
  pool.release(full);
  EXPECT_FALSE(pool.find_rows(after, block_of(9000))) << "no block begins with that token";
  EXPECT_EQ(pool.stats().reused_rows, 29u);

  // Evicted for new data, a block lends nothing any more.
  pool.reserve(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pool.take_reserved());
  EXPECT_FALSE(pool.find_rows(after, next));
  EXPECT_FALSE(pool.find_rows(0, prefix));
}

TEST(KvBlockPool, ReservationsCountAgainstFreeBlocks) {
  KvBlockPool pool(4);
  EXPECT_TRUE(pool.can_reserve(4));
  pool.reserve(3);
  EXPECT_TRUE(pool.can_reserve(1));
  EXPECT_FALSE(pool.can_reserve(2));
  pool.unreserve(3);
  EXPECT_TRUE(pool.can_reserve(4));
  EXPECT_EQ(pool.stats().reserved, 0u);
}

TEST(Logprobs, LogSoftmaxAndTheBestAlternativesInOrder) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l));
  const LogprobsAtStep step = logprobs_at_step(logits, 2, 3);
  EXPECT_NEAR(step.chosen.logprob, 2.0 - std::log(sum), 1e-6);
  ASSERT_EQ(step.top.size(), 3u);
  EXPECT_EQ(step.top[0].token, 1u) << "equal logits are ordered by id";
  EXPECT_EQ(step.top[1].token, 3u);
  EXPECT_EQ(step.top[2].token, 2u);
  EXPECT_NEAR(step.top[0].logprob, 3.0 - std::log(sum), 1e-6);
  EXPECT_TRUE(logprobs_at_step(logits, 0, 0).top.empty());
  EXPECT_EQ(logprobs_at_step(logits, 0, 20).top.size(), logits.size());
}

TEST(Logprobs, UnderAConstraintOfTheAllowedTokensOnly) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  auto set = std::make_shared<grammar::TokenSet>(5);
  set->add(0);
  set->add(2);
  const AllowedTokens allowed{set, {4}};
  const double sum = std::exp(1.0) + std::exp(2.0) + std::exp(-1.0);
  const LogprobsAtStep step = logprobs_at_step(logits, 2, 5, &allowed);
  EXPECT_NEAR(step.chosen.logprob, 2.0 - std::log(sum), 1e-6);
  ASSERT_EQ(step.top.size(), 3u);  // the refused ids 1 and 3 are no alternatives
  EXPECT_EQ(step.top[0].token, 2u);
  EXPECT_EQ(step.top[1].token, 0u);
  EXPECT_EQ(step.top[2].token, 4u);
}

// Keeps the scheduler thread inside one request's callback (on_update and on_done run on that
// thread) from the callback's first call until release(). Meanwhile nothing is admitted or
// evaluated, so whatever a test submits in between is in the queue, all of it, when the scheduler
// next admits: which requests run together is then up to the scheduler alone, not to timing.
class SchedulerHold {
 public:
  // On the scheduler thread: holds it the first time, returns at once after that.
  void hold_here() {
    std::unique_lock lock(mutex_);
    if (held_) return;
    held_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_; });
  }

  // True once the scheduler thread is held (the deadline only guards against a hang).
  bool wait_until_held() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(60), [&] { return held_; });
  }

  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;
  bool released_ = false;
};

// Steps that evaluated more than `bound` sequences together (`bound` one of the histogram's).
uint64_t steps_above(const Histogram& batch_sizes, double bound) {
  const size_t at =
      size_t(std::find(batch_sizes.bounds.begin(), batch_sizes.bounds.end(), bound) - batch_sizes.bounds.begin());
  EXPECT_LT(at, batch_sizes.bounds.size()) << bound << " is not a bound of the histogram";
  return at < batch_sizes.bounds.size() ? batch_sizes.count - batch_sizes.counts[at] : 0;
}

struct Outcome {
  std::vector<std::string> text;
  std::vector<std::optional<FinishReason>> finish;
  std::vector<std::vector<TokenReport>> tokens;
  RequestReport report;
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(testing::open_tiny_checkpoint(tiny_));
    auto reference = create_backend("cpu", *tiny_.file, {2});
    ASSERT_TRUE(reference) << reference.error().message;
    reference_ = std::move(*reference);
  }

  // The scheduler over a fresh backend; with another KV cache format, the reference takes it too.
  void start(SchedulerOptions options, KvFormat kv_cache = KvFormat::bf16) {
    BackendOptions backend_options{2};
    backend_options.kv_cache = kv_cache;
    if (kv_cache != KvFormat::bf16) {
      auto reference = create_backend("cpu", *tiny_.file, backend_options);
      ASSERT_TRUE(reference) << reference.error().message;
      reference_ = std::move(*reference);
    }
    auto backend = create_backend("cpu", *tiny_.file, backend_options);
    ASSERT_TRUE(backend) << backend.error().message;
    backend_ = std::move(*backend);
    auto scheduler =
        Scheduler::create(*backend_, *tiny_.tokenizer, tiny_.stop_ids, tiny_.file->checkpoint().context, options);
    ASSERT_TRUE(scheduler) << scheduler.error().message;
    scheduler_ = std::move(*scheduler);
  }

  // A held scheduler thread is let go before the scheduler is destroyed (its destructor joins it),
  // also when a test failed while holding it.
  void TearDown() override { hold_.release(); }

  // Submits and returns a future of everything the request produced. Callbacks the request
  // already has run after the outcome has been recorded.
  std::future<Outcome> submit(CompletionRequest request, std::shared_ptr<RequestTicket>* ticket = nullptr) {
    auto outcome = std::make_shared<Outcome>();
    auto done = std::make_shared<std::promise<Outcome>>();
    outcome->text.resize(request.n);
    outcome->finish.resize(request.n);
    outcome->tokens.resize(request.n);
    request.on_update = [outcome, then = std::move(request.on_update)](const ChoiceUpdate& update) {
      EXPECT_FALSE(outcome->finish[update.choice]) << "no update after a choice's last";
      outcome->text[update.choice] += update.text;
      outcome->finish[update.choice] = update.finish;
      for (const TokenReport& token : update.tokens) outcome->tokens[update.choice].push_back(token);
      if (then) then(update);
    };
    request.on_done = [outcome, done, then = std::move(request.on_done)](const RequestReport& report) {
      outcome->report = report;
      done->set_value(*outcome);
      if (then) then(report);
    };
    Submission submission = scheduler_->submit(std::move(request));
    EXPECT_EQ(submission.verdict, Verdict::queued) << submission.reason;
    if (ticket) *ticket = submission.ticket;
    return done->get_future();
  }

  enum class HoldAt { first_update, end };

  // Submits a request that holds the scheduler thread (hold_) in its first update (it is then
  // running and holds its KV) or at its end (it is then no longer counted as running), and
  // returns once the thread is held.
  std::future<Outcome> submit_holding(CompletionRequest request, HoldAt at,
                                      std::shared_ptr<RequestTicket>* ticket = nullptr) {
    if (at == HoldAt::first_update) request.on_update = [this](const ChoiceUpdate&) { hold_.hold_here(); };
    else request.on_done = [this](const RequestReport&) { hold_.hold_here(); };
    auto outcome = submit(std::move(request), ticket);
    EXPECT_TRUE(hold_.wait_until_held()) << "the holding request never reached its callback";
    return outcome;
  }

  // The same request generated alone on a private session of another backend instance.
  Generation alone(const CompletionRequest& request, uint32_t choice = 0) {
    auto session = reference_->create_session(uint32_t(request.prompt.size()) + request.max_tokens);
    EXPECT_TRUE(session);
    GenerateContext context{*reference_, **session, *tiny_.tokenizer, tiny_.stop_ids};
    GenerateOptions options;
    options.max_tokens = request.max_tokens;
    options.sampling = request.sampling;
    options.sampling.seed += choice;
    options.stop = request.stop;
    options.answer_start = request.answer_start;
    options.constraint_frame = request.grammar_frame;
    options.thinking_budget = request.thinking_budget;
    if (request.constraint) {
      // A matcher of its own: the scheduler's may still be in use by other requests.
      auto automaton = grammar::Automaton::create(request.constraint->grammar());
      EXPECT_TRUE(automaton);
      if (automaton)
        options.constraint =
            std::make_shared<grammar::TokenMasks>(*automaton, constrained_vocabulary(*tiny_.tokenizer));
    }
    auto result = generate(context, request.prompt, options);
    EXPECT_TRUE(result) << result.error().message;
    return result ? *result : Generation{};
  }

  // The first choice's text, finish reason and token count (and logprob entries, when asked for)
  // are those of the same request generated alone.
  void expect_answered_as_alone(const Outcome& outcome, const CompletionRequest& request, const std::string& what) {
    const Generation expected = alone(request);
    EXPECT_EQ(outcome.text[0], expected.text) << what;
    ASSERT_TRUE(outcome.finish[0]) << what;
    EXPECT_EQ(*outcome.finish[0], expected.finish) << what;
    EXPECT_EQ(outcome.report.completion_tokens, expected.tokens.size()) << what;
    if (request.logprobs) {
      EXPECT_EQ(outcome.tokens[0].size(), expected.tokens.size()) << what;
    }
  }

  static std::vector<uint32_t> random_prompt(std::mt19937& rng, uint32_t length) {
    std::vector<uint32_t> prompt(length);
    for (uint32_t& id : prompt) id = rng() % 150000;
    return prompt;
  }

  static CompletionRequest greedy(std::vector<uint32_t> prompt, uint32_t max_tokens) {
    CompletionRequest request;
    request.prompt = std::move(prompt);
    request.max_tokens = max_tokens;
    request.sampling.temperature = 0.0f;
    return request;
  }

  void expect_pool_idle() {
    // Finished sequences give their blocks back: everything is free (cached or unused).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (scheduler_->stats().running > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const SchedulerStats stats = scheduler_->stats();
    EXPECT_EQ(stats.pool.free, stats.pool.total);
    EXPECT_EQ(stats.pool.reserved, 0u);
  }

  testing::TinyCheckpoint tiny_;
  std::unique_ptr<BackendModel> reference_;
  std::unique_ptr<BackendModel> backend_;
  SchedulerHold hold_;  // outlives the scheduler, whose thread may be in it
  std::unique_ptr<Scheduler> scheduler_;
};

// The 16 requests are queued while the scheduler thread is held at the end of a first one, so
// the next step admits all of them at once and the steps that follow are the same on every run.
TEST_F(SchedulerTest, ConcurrentGreedyRequestsEachEqualTheSameRequestAlone) {
  start({.pool_blocks = 256, .max_sequences = 16, .max_waiting = 64, .step_tokens = 48});
  std::mt19937 rng(7);
  auto first = submit_holding(greedy({1, 2, 3}, 1), HoldAt::end);
  const SchedulerStats held = scheduler_->stats();
  std::vector<CompletionRequest> requests;
  std::vector<std::future<Outcome>> outcomes;
  for (uint32_t i = 0; i < 16; ++i) {
    CompletionRequest request = greedy(random_prompt(rng, 1 + rng() % 120), 4 + rng() % 20);
    if (i % 5 == 0) request.stop = {"e"};
    requests.push_back(request);
    outcomes.push_back(submit(request));
  }
  EXPECT_EQ(scheduler_->stats().waiting, 16u) << "all of them queued while the scheduler was held";
  hold_.release();
  first.get();
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome outcome = outcomes[i].get();
    expect_answered_as_alone(outcome, requests[i], "request " + std::to_string(i));
    EXPECT_EQ(outcome.report.prompt_tokens, requests[i].prompt.size());
    EXPECT_FALSE(outcome.report.error);
  }
  const SchedulerStats stats = scheduler_->stats();
  EXPECT_EQ(steps_above(held.batch_size, 1), 0u) << "the first request ran alone";
  EXPECT_GT(steps_above(stats.batch_size, 8), 0u) << "more than 8 of the 16 were evaluated in one step";
  expect_pool_idle();
}

TEST_F(SchedulerTest, ChoicesShareThePromptAndEachEqualsItsSeedAlone) {
  start({.pool_blocks = 64, .max_sequences = 8, .max_waiting = 8, .step_tokens = 64});
  std::mt19937 rng(11);
  CompletionRequest request;
  request.prompt = random_prompt(rng, 100);
  request.max_tokens = 12;
  request.n = 3;
  request.sampling.temperature = 4.0f;  // the tiny model is sure of itself: flatten it so seeds matter
  request.sampling.seed = 1234;
  request.logprobs = true;
  request.top_logprobs = 3;
  const Outcome outcome = submit(request).get();
  for (uint32_t choice = 0; choice < 3; ++choice) {
    const Generation expected = alone(request, choice);
    EXPECT_EQ(outcome.text[choice], expected.text) << "choice " << choice;
    std::string joined;
    for (const TokenReport& token : outcome.tokens[choice]) {
      joined += token.text;
      EXPECT_EQ(token.logprobs.top.size(), 3u);
      EXPECT_LE(token.logprobs.chosen.logprob, 0.0f);
    }
    EXPECT_EQ(joined, outcome.text[choice]) << "the logprob tokens concatenate to the text";
  }
  EXPECT_NE(outcome.text[0], outcome.text[1]) << "choices sample with different seeds";
  expect_pool_idle();
}

TEST_F(SchedulerTest, ALaterRequestAdoptsThePublishedPrefixAndAnswersTheSame) {
  start({.pool_blocks = 64, .max_sequences = 4, .max_waiting = 8, .step_tokens = 512});
  std::mt19937 rng(5);
  const std::vector<uint32_t> shared = random_prompt(rng, 130);
  CompletionRequest first = greedy(shared, 6);
  EXPECT_EQ(submit(first).get().report.cached_tokens, 0u);
  std::vector<uint32_t> longer = shared;
  for (uint32_t id : random_prompt(rng, 20)) longer.push_back(id);
  CompletionRequest second = greedy(longer, 6);
  const Outcome outcome = submit(second).get();
  EXPECT_EQ(outcome.report.cached_tokens, 130u)
      << "the four full blocks of the shared 130 tokens, and the 2 rows the first request's tail shares";
  EXPECT_EQ(outcome.text[0], alone(second).text);
  const SchedulerStats stats = scheduler_->stats();
  EXPECT_EQ(stats.prefix_tokens_reused, 130u);
  EXPECT_GE(stats.pool.reused, 4u);
  EXPECT_EQ(stats.pool.reused_rows, 2u);
  // The identical prompt again: all but its last token, which is evaluated for the first logits.
  EXPECT_EQ(submit(first).get().report.cached_tokens, 129u);
  expect_pool_idle();
}

// The next turn of a conversation repeats the last one's prompt and answer: it adopts the full
// blocks, copies the rows of the last turn's partly filled block, and evaluates only its new
// tokens, answering exactly as a cold run does.
TEST_F(SchedulerTest, TheNextTurnEvaluatesOnlyWhatIsNew) {
  start({.pool_blocks = 64, .max_sequences = 4, .max_waiting = 8, .step_tokens = 512});
  std::mt19937 rng(9);
  CompletionRequest turn = greedy(random_prompt(rng, 70), 9);
  EXPECT_EQ(submit(turn).get().report.cached_tokens, 0u);
  const Generation answer = alone(turn);
  ASSERT_EQ(answer.tokens.size(), 9u);
  // Its KV holds the prompt and all but the last answer token: 70 + 8 = 78 positions, 2 full
  // blocks and 14 rows of a third.
  std::vector<uint32_t> next = turn.prompt;
  next.insert(next.end(), answer.tokens.begin(), answer.tokens.end());
  for (uint32_t id : random_prompt(rng, 12)) next.push_back(id);
  CompletionRequest second = greedy(next, 8);
  const Outcome outcome = submit(second).get();
  EXPECT_EQ(outcome.report.cached_tokens, 78u);
  EXPECT_EQ(outcome.text[0], alone(second).text);
  EXPECT_EQ(scheduler_->stats().pool.reused_rows, 14u);
  expect_pool_idle();
}

// A request that needs every block of the pool, whose prompt begins as a cached block does: the
// rows it could copy from that block must not keep it from being admitted (it goes without the
// copy), nor the requests queued behind it.
TEST_F(SchedulerTest, ARequestNeedingTheWholePoolIsAdmittedPastARowSourceItWouldHold) {
  start({.pool_blocks = 8, .max_sequences = 2, .max_waiting = 4, .step_tokens = 64});
  EXPECT_EQ(scheduler_->stats().pool.total, 8u) << "the pool as the stats show it before any request";
  EXPECT_EQ(scheduler_->stats().pool.free, 8u);
  ASSERT_TRUE(submit(greedy({5, 6, 7}, 4)).get().finish[0].has_value());  // leaves a cached block starting 5
  CompletionRequest whole_pool = greedy({5, 9}, 254);                     // 256 positions: all 8 blocks
  CompletionRequest behind = greedy({8, 9}, 254);
  auto first = submit(whole_pool);
  auto second = submit(behind);
  // A guard against hanging, not a measurement: the answer takes well under a second.
  ASSERT_EQ(first.wait_for(std::chrono::seconds(120)), std::future_status::ready) << "never admitted";
  const Outcome outcome = first.get();
  EXPECT_EQ(outcome.report.cached_tokens, 0u);
  expect_answered_as_alone(outcome, whole_pool, "the request needing the whole pool");
  expect_answered_as_alone(second.get(), behind, "the request queued behind it");
  expect_pool_idle();
}

// The Q8_0 cache through the scheduler: concurrent requests sharing a prefix (adopted blocks, the
// copied first rows of a tail) each answer as the same request alone on a private Q8_0 session.
TEST_F(SchedulerTest, WithTheQ8_0CacheSharedAndConcurrentRequestsEachEqualTheRequestAlone) {
  start({.pool_blocks = 128, .max_sequences = 8, .max_waiting = 16, .step_tokens = 64}, KvFormat::q8_0);
  std::mt19937 rng(11);
  const std::vector<uint32_t> shared = random_prompt(rng, 75);
  CompletionRequest first = greedy(shared, 5);
  EXPECT_EQ(submit(first).get().text[0], alone(first).text);
  std::vector<CompletionRequest> requests;
  std::vector<std::future<Outcome>> outcomes;
  for (uint32_t i = 0; i < 6; ++i) {
    std::vector<uint32_t> prompt = shared;
    for (uint32_t id : random_prompt(rng, 1 + rng() % 40)) prompt.push_back(id);
    requests.push_back(greedy(prompt, 4 + rng() % 8));
    outcomes.push_back(submit(requests.back()));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome outcome = outcomes[i].get();
    EXPECT_EQ(outcome.text[0], alone(requests[i]).text) << "request " << i;
    EXPECT_GE(outcome.report.cached_tokens, 64u) << "request " << i;
  }
  EXPECT_GT(scheduler_->stats().pool.reused_rows, 0u) << "a tail's first rows were copied";
  expect_pool_idle();
}

// Speculation under load: greedy requests whose prompts give prompt lookup something to find (a
// phrase said three times; or, up front, the token the model will answer with, followed by
// others, so that lookup drafts a continuation the model does not take), beside sampled requests
// (which never draft), budgets that cut drafts short, stop strings and logprobs: each answer
// equals the same request generated alone without speculation, and the counts add up.
TEST_F(SchedulerTest, SpeculationUnderLoadAnswersExactlyAsPlainDecodingAlone) {
  start({.pool_blocks = 256, .max_sequences = 12, .max_waiting = 32, .step_tokens = 96, .speculate = true});
  std::mt19937 rng(13);
  std::vector<CompletionRequest> requests;
  std::vector<std::future<Outcome>> outcomes;
  for (uint32_t i = 0; i < 12; ++i) {
    std::vector<uint32_t> prompt = random_prompt(rng, 1 + rng() % 30);
    if (i % 2 == 0) {
      const std::vector<uint32_t> phrase = random_prompt(rng, 3 + rng() % 6);
      for (int r = 0; r < 3; ++r) prompt.insert(prompt.end(), phrase.begin(), phrase.end());
    } else {
      const Generation first = alone(greedy(prompt, 1));
      ASSERT_EQ(first.tokens.size(), 1u);
      std::vector<uint32_t> lead = {first.tokens[0]};
      for (uint32_t id : random_prompt(rng, 4)) lead.push_back(id);
      prompt.insert(prompt.begin(), lead.begin(), lead.end());
    }
    CompletionRequest request = greedy(prompt, i % 4 == 0 ? 2 + i % 3 : 12 + rng() % 20);
    if (i % 6 == 1) request.stop = {"e"};
    if (i % 5 == 2) {
      request.sampling.temperature = 0.8f;
      request.sampling.seed = i;
    }
    if (i % 7 == 3) {
      request.logprobs = true;
      request.top_logprobs = 2;
    }
    requests.push_back(request);
    outcomes.push_back(submit(request));
  }
  uint32_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome outcome = outcomes[i].get();
    expect_answered_as_alone(outcome, requests[i], "request " + std::to_string(i));
    if (!requests[i].sampling.greedy()) {
      EXPECT_EQ(outcome.report.draft_tokens, 0u) << "request " << i;
    }
    EXPECT_LE(outcome.report.accepted_draft_tokens, outcome.report.draft_tokens);
    drafted += outcome.report.draft_tokens;
    accepted += outcome.report.accepted_draft_tokens;
  }
  EXPECT_GT(accepted, 0u) << "some drafts were kept";
  EXPECT_LT(accepted, drafted) << "some were not";
  EXPECT_EQ(scheduler_->stats().draft_tokens, drafted);
  EXPECT_EQ(scheduler_->stats().accepted_draft_tokens, accepted);
  expect_pool_idle();
}

// Requests under a grammar, a thinking budget or both, greedy and sampled, run in the same steps as
// plain ones (and with drafts on): each answers as it would alone, so the scheduler and the
// generator take their tokens the same way.
TEST_F(SchedulerTest, GrammarsAndThinkingBudgetsAmongOthersAnswerAsAlone) {
  start({.pool_blocks = 256, .max_sequences = 12, .max_waiting = 32, .step_tokens = 48, .speculate = true});
  const std::string prefix = "{\"n\": ";
  auto grammar = grammar::compile_gbnf(R"(root ::= "{\"n\": " [0-9]+ "}")");
  ASSERT_TRUE(grammar) << grammar.error().message;
  std::mt19937 rng(17);
  auto first = submit_holding(greedy({1, 2, 3}, 1), HoldAt::end);
  std::vector<CompletionRequest> requests;
  std::vector<std::future<Outcome>> outcomes;
  for (uint32_t i = 0; i < 12; ++i) {
    CompletionRequest request = greedy(random_prompt(rng, 1 + rng() % 60), 6 + rng() % 14);
    if (i % 2 == 1) {
      request.sampling.temperature = 1.5f;
      request.sampling.seed = 100 + i;
    }
    if (i % 4 < 2) {
      auto automaton = grammar::Automaton::create(*grammar);
      ASSERT_TRUE(automaton);
      request.constraint = *automaton;
    }
    if (i >= 4) {
      request.answer_start = AnswerStart::after_think;
      request.thinking_budget = 2 + i % 3;
    }
    if (i >= 8) request.logprobs = true;
    requests.push_back(request);
    outcomes.push_back(submit(request));
  }
  EXPECT_EQ(scheduler_->stats().waiting, 12u) << "all of them queued while the scheduler was held";
  hold_.release();
  first.get();
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome outcome = outcomes[i].get();
    const std::string what = "request " + std::to_string(i);
    EXPECT_FALSE(outcome.report.error) << what << ": " << outcome.report.error->message;
    expect_answered_as_alone(outcome, requests[i], what);
    const std::string& text = outcome.text[0];
    if (requests[i].constraint && !requests[i].thinking_budget) {
      EXPECT_TRUE(text.starts_with(prefix) || prefix.starts_with(text)) << what << ": " << text;
    }
    if (requests[i].thinking_budget && outcome.report.completion_tokens > *requests[i].thinking_budget + 2) {
      EXPECT_NE(text.find("</think>"), std::string::npos) << what << ": the budget closed the thought: " << text;
    }
  }
  expect_pool_idle();
}

// The six are queued while the scheduler is held, so all of them ask for room at once; each
// update records how many were still waiting when it came.
TEST_F(SchedulerTest, ATinyPoolDelaysAdmissionButEveryAnswerIsRight) {
  // 6 blocks: room for one request of up to 192 positions at a time.
  start({.pool_blocks = 6, .max_sequences = 8, .max_waiting = 16, .step_tokens = 64});
  std::mt19937 rng(3);
  auto first = submit_holding(greedy({1, 2, 3}, 1), HoldAt::end);
  auto waiting_seen = std::make_shared<std::atomic<uint32_t>>(0);
  std::vector<CompletionRequest> requests;
  std::vector<std::future<Outcome>> outcomes;
  for (uint32_t i = 0; i < 6; ++i) {
    requests.push_back(greedy(random_prompt(rng, 60 + rng() % 100), 8));
    CompletionRequest request = requests.back();
    request.on_update = [this, waiting_seen](const ChoiceUpdate&) {  // on the scheduler thread
      const uint32_t waiting = scheduler_->stats().waiting;
      if (waiting > waiting_seen->load()) waiting_seen->store(waiting);
    };
    outcomes.push_back(submit(request));
  }
  hold_.release();
  first.get();
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome outcome = outcomes[i].get();
    EXPECT_FALSE(outcome.report.error) << outcome.report.error->message;
    EXPECT_EQ(outcome.text[0], alone(requests[i]).text) << "request " << i;
  }
  // Each needs at least 3 of the 6 blocks (68 positions or more): two run at most, four wait.
  EXPECT_GE(waiting_seen->load(), 4u) << "requests waited for room in the pool while others generated";
  expect_pool_idle();
}

// Admission is fair: a request that does not fit yet keeps its place and waits, and a smaller one
// behind it that fits goes first instead of waiting behind it (issue 32). Both answers are right.
TEST_F(SchedulerTest, ARequestThatDoesNotFitYetHoldsUpNoSmallerOne) {
  // 6 blocks of 32 positions; the running request holds 3 of them.
  start({.pool_blocks = 6, .max_sequences = 8, .max_waiting = 8, .step_tokens = 64});
  std::mt19937 rng(5);
  auto running = submit_holding(greedy(random_prompt(rng, 60), 8), HoldAt::first_update);  // 68 positions
  const CompletionRequest big = greedy(random_prompt(rng, 150), 8);                        // 158 positions: 5 blocks
  const CompletionRequest small = greedy(random_prompt(rng, 30), 8);                       // 38 positions: 2 blocks
  auto big_updates = std::make_shared<std::atomic<uint32_t>>(0);
  auto big_updates_when_small_began = std::make_shared<std::atomic<int64_t>>(-1);
  CompletionRequest big_request = big;
  big_request.on_update = [big_updates](const ChoiceUpdate&) { ++*big_updates; };
  CompletionRequest small_request = small;
  small_request.on_update = [big_updates, big_updates_when_small_began](const ChoiceUpdate&) {
    int64_t unset = -1;
    big_updates_when_small_began->compare_exchange_strong(unset, big_updates->load());
  };
  auto big_outcome = submit(big_request);
  auto small_outcome = submit(small_request);
  hold_.release();
  running.get();
  const Outcome small_done = small_outcome.get(), big_done = big_outcome.get();
  // Under first-come-first-served the small one would have waited for all of the big one.
  EXPECT_EQ(big_updates_when_small_began->load(), 0) << "the small request began only after the big one had";
  EXPECT_EQ(small_done.text[0], alone(small).text);
  EXPECT_EQ(big_done.text[0], alone(big).text);
  expect_pool_idle();
}

// ...and a request that does not fit cannot starve either: once 64 smaller ones (the scheduler's
// kMaxOvertakes) have gone past it, none goes past it until it is in. A long request holds most
// of the pool until it is cancelled; 70 small ones that each fit queue behind a big one that does
// not. Without the bound all 70 would begin before the big one.
TEST_F(SchedulerTest, ABigRequestIsOvertakenAtMost64TimesThenGoesFirst) {
  // 40 blocks of 32 positions: the long request reserves 32, a small one 1, the big one 9.
  start({.pool_blocks = 40, .max_sequences = 8, .max_waiting = 80, .step_tokens = 64});
  std::mt19937 rng(21);
  std::shared_ptr<RequestTicket> long_ticket;
  auto long_outcome = submit(greedy(random_prompt(rng, 20), 1000), &long_ticket);
  const CompletionRequest big = greedy(random_prompt(rng, 250), 8);
  auto big_outcome = submit(big);
  std::vector<std::future<Outcome>> small_outcomes;
  for (int i = 0; i < 70; ++i) small_outcomes.push_back(submit(greedy(random_prompt(rng, 20), 1)));
  for (int i = 0; i < 64; ++i) EXPECT_FALSE(small_outcomes[size_t(i)].get().report.error);
  long_ticket->cancel();  // its room goes to the big one, which no small one may pass now
  EXPECT_TRUE(long_outcome.get().report.cancelled);
  const Outcome big_done = big_outcome.get();
  for (size_t i = 64; i < small_outcomes.size(); ++i) {
    const Outcome small = small_outcomes[i].get();
    EXPECT_FALSE(small.report.error);
    EXPECT_EQ(small.report.overtaken, 0u) << "behind the big one, nothing passed them";
  }
  EXPECT_EQ(big_done.report.overtaken, 64u) << "small requests admitted past the big one";
  EXPECT_EQ(big_done.text[0], alone(big).text);
  expect_pool_idle();
}

// The prefill budget is shared: a short prompt that comes while a long one is evaluated chunk by
// chunk gets its first token long before the long one does, and both answer as alone.
TEST_F(SchedulerTest, AShortPromptBesideALongOneIsNotKeptWaitingForItsWholePrefill) {
  start({.pool_blocks = 64, .max_sequences = 4, .max_waiting = 8, .step_tokens = 32});
  std::mt19937 rng(31);
  auto firsts = std::make_shared<std::pair<std::mutex, std::vector<std::string>>>();
  const auto on_first_update = [firsts](std::string label) {
    return [firsts, label, seen = std::make_shared<bool>(false)](const ChoiceUpdate&) {
      if (std::exchange(*seen, true)) return;
      std::lock_guard lock(firsts->first);
      firsts->second.push_back(label);
    };
  };
  const CompletionRequest long_request = greedy(random_prompt(rng, 640), 4);
  const CompletionRequest short_request = greedy(random_prompt(rng, 24), 4);
  CompletionRequest first = long_request, second = short_request;
  first.on_update = on_first_update("long");
  second.on_update = on_first_update("short");
  // Both queued while the scheduler is held, so that they start in the same step.
  auto holder = submit_holding(greedy({1, 2, 3}, 1), HoldAt::end);
  auto long_outcome = submit(first);
  auto short_outcome = submit(second);
  hold_.release();
  holder.get();
  EXPECT_EQ(short_outcome.get().text[0], alone(short_request).text);
  EXPECT_EQ(long_outcome.get().text[0], alone(long_request).text);
  std::lock_guard lock(firsts->first);
  // FIFO prefill took 20 steps of the long prompt first; shared, the short one needs 2.
  EXPECT_EQ(firsts->second, (std::vector<std::string>{"short", "long"}));
  expect_pool_idle();
}

TEST_F(SchedulerTest, ACancelledRequestEndsAndOthersAreUntouched) {
  start({.pool_blocks = 64, .max_sequences = 8, .max_waiting = 8, .step_tokens = 64});
  std::mt19937 rng(9);
  CompletionRequest victim = greedy(random_prompt(rng, 40), 2000);
  CompletionRequest bystander = greedy(random_prompt(rng, 50), 30);
  std::shared_ptr<RequestTicket> ticket;
  auto victim_outcome = submit(victim, &ticket);
  auto bystander_outcome = submit(bystander);
  // Cancelled once it is generating (tokens counted), however long that took to happen.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (scheduler_->stats().generated_tokens < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(scheduler_->stats().generated_tokens, 3u) << "the requests never started generating";
  ticket->cancel();
  const Outcome cancelled = victim_outcome.get();
  EXPECT_TRUE(cancelled.report.cancelled);
  EXPECT_LT(cancelled.report.completion_tokens, 2000u);
  EXPECT_EQ(bystander_outcome.get().text[0], alone(bystander).text);
  expect_pool_idle();
  EXPECT_EQ(scheduler_->stats().cancelled, 1u);
}

// Embeddings and reranking in the scheduler: hidden-row requests queued with generation ones, all
// admitted together. Each row equals, bit for bit, the prompt's row evaluated alone; a second
// prompt with the first one's 64-token prefix adopts its blocks; generation answers as alone; the
// pool ends idle. A hidden-row request that asks for tokens or choices is refused up front.
TEST_F(SchedulerTest, HiddenRowRequestsAmongGenerationEqualTheRowAlone) {
  const uint32_t hidden = tiny_.file->checkpoint().hidden;
  start({.pool_blocks = 64, .max_sequences = 8, .max_waiting = 16, .step_tokens = 64, .hidden = hidden});
  std::mt19937 rng(13);
  const std::vector<uint32_t> prefix = random_prompt(rng, 64);
  std::vector<std::vector<uint32_t>> prompts = {random_prompt(rng, 1), random_prompt(rng, 33), prefix};
  prompts.push_back(prefix);
  prompts.back().push_back(7);
  auto first = submit_holding(greedy(random_prompt(rng, 5), 2), HoldAt::end);
  std::vector<std::future<Outcome>> rows;
  for (const auto& prompt : prompts) {
    CompletionRequest request;
    request.prompt = prompt;
    request.max_tokens = 0;
    request.hidden_row = true;
    rows.push_back(submit(std::move(request)));
    if (rows.size() == 3) hold_.release();  // the prefix is published before its continuation comes
    if (rows.size() == 3) rows.back().wait();
  }
  const CompletionRequest generation = greedy(random_prompt(rng, 20), 12);
  auto generated = submit(generation);
  first.get();
  auto want = final_hidden_rows(*reference_, tiny_.file->checkpoint(), prompts);
  ASSERT_TRUE(want) << want.error().message;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Outcome outcome = rows[i].get();
    EXPECT_FALSE(outcome.report.error) << i;
    EXPECT_EQ(outcome.report.completion_tokens, 0u) << i;
    EXPECT_EQ(outcome.report.hidden, (*want)[i]) << "prompt " << i;
    if (i == 3) {
      EXPECT_EQ(outcome.report.cached_tokens, 64u) << "the first prompt's published blocks";
    }
  }
  expect_answered_as_alone(generated.get(), generation, "generation beside hidden rows");
  expect_pool_idle();

  CompletionRequest asks_tokens;
  asks_tokens.prompt = {1, 2, 3};
  asks_tokens.hidden_row = true;
  asks_tokens.max_tokens = 4;
  EXPECT_EQ(scheduler_->submit(asks_tokens).verdict, Verdict::too_large);
  asks_tokens.max_tokens = 0;
  asks_tokens.n = 2;
  EXPECT_EQ(scheduler_->submit(asks_tokens).verdict, Verdict::too_large);
}

TEST_F(SchedulerTest, OversizedRequestsAndAFullQueueAreRefusedUpFront) {
  start({.pool_blocks = 8, .max_sequences = 2, .max_waiting = 1, .step_tokens = 64});
  const uint32_t context = tiny_.file->checkpoint().context;
  CompletionRequest too_long = greedy(std::vector<uint32_t>(10, 1), context);
  Submission refused = scheduler_->submit(too_long);
  EXPECT_EQ(refused.verdict, Verdict::too_large);
  EXPECT_NE(refused.reason.find("exceeds the context"), std::string::npos) << refused.reason;
  EXPECT_EQ(scheduler_->submit(greedy(std::vector<uint32_t>(300, 1), 10)).verdict, Verdict::too_large)
      << "more blocks than the whole pool";
  CompletionRequest many = greedy({1, 2, 3}, 4);
  many.n = 3;
  EXPECT_EQ(scheduler_->submit(many).verdict, Verdict::too_large) << "more choices than sequences";

  // One long request holds the pool (and the scheduler thread, in its first update); the queue
  // holds one more; the next is refused as busy.
  CompletionRequest slow = greedy({1, 2, 3}, 250);  // all 8 blocks: the next one waits
  std::shared_ptr<RequestTicket> ticket;
  auto running = submit_holding(slow, HoldAt::first_update, &ticket);
  EXPECT_EQ(scheduler_->stats().running, 1u);
  auto queued = submit(greedy({4, 5, 6}, 4));
  Submission busy = scheduler_->submit(greedy({7, 8, 9}, 4));
  EXPECT_EQ(busy.verdict, Verdict::queue_full);
  ticket->cancel();
  hold_.release();
  EXPECT_TRUE(running.get().report.cancelled);
  EXPECT_FALSE(queued.get().report.error);
}

}  // namespace
}  // namespace kipp
