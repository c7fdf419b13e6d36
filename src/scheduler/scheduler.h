// The server's scheduler: requests in FIFO order, continuous batching over the model's shared KV
// pool. It knows token ids, sampling settings and text, never HTTP.
//
// Each step evaluates, in one `eval` call, one prefill chunk or one decode token for every active
// sequence, so the weights are read once per step for all of them. A request of `n` choices is
// n sequences; the siblings share the full blocks of the first choice's prompt instead of
// evaluating them again. Full blocks are published to the pool as soon as they are written, so a
// later (or concurrent) request with the same prefix adopts them. Admission reserves the
// worst-case blocks of every choice, so a running sequence never runs out of KV; a request that
// does not fit yet keeps its place while smaller ones behind it go first, a bounded number of
// times (admission.cpp). The fast CPU backend is batch- and chunk-invariant, so a greedy answer
// is the same whatever else runs beside it. With `speculate`, a greedy sequence's decode item
// also carries a prompt-lookup draft; each row's token is chosen exactly as a plain step would
// choose it, and the draft is kept up to the first token that differs, so the answer is still
// the same.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "engine/answer_decoder.h"
#include "engine/logprobs.h"
#include "engine/sampler.h"
#include "engine/thinking_budget.h"
#include "scheduler/constraint_cache.h"
#include "scheduler/histogram.h"
#include "scheduler/kv_block_pool.h"
#include "tokenizer/tokenizer.h"

namespace kipp {

struct SchedulerOptions {
  uint32_t pool_blocks = 0;     // 32-position KV blocks in the shared pool
  uint32_t max_sequences = 16;  // sequences (choices) evaluated together
  uint32_t max_waiting = 64;    // queued requests; beyond it submit() says the server is full
  // Tokens evaluated per step: every decoding sequence's token (and draft) first, then prompt
  // chunks fill what is left (never less than a quarter of it), shared evenly among the
  // prefilling sequences (Scheduler::evaluate).
  uint32_t step_tokens = 512;
  // Greedy sequences draft by prompt lookup (prompt_lookup.h) and verify the draft in the same
  // step as their next token. On a batch-invariant backend the output is the same, bitwise.
  bool speculate = false;
  uint32_t hidden = 0;  // the model's hidden width: the length of a hidden_row request's row
};

// One generated token of one choice, for logprobs: the text it released (the pieces of a choice
// concatenate to its text exactly) and its log-probabilities.
struct TokenReport {
  std::string text;
  LogprobsAtStep logprobs;
};

// What became final for one choice since its last update.
struct ChoiceUpdate {
  uint32_t choice = 0;
  std::string text;
  std::vector<TokenReport> tokens;     // only when the request asked for logprobs
  std::vector<PartStart> parts;        // where the answer's layout changes (offsets in the choice's text)
  uint32_t generated = 0;              // tokens the choice has sampled so far, this update's included
  std::optional<FinishReason> finish;  // set on the choice's last update
  std::string stop;                    // FinishReason::stop_string: the stop string that matched
};

struct RequestReport {
  // The request failed; the text so far stands. over_limit: a bound on what one request may cost
  // was met while generating (its constraint's matcher steps), the client's doing, not the engine's.
  std::optional<Error> error;
  bool cancelled = false;
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;          // prompt positions adopted from the pool by the first choice
  uint32_t completion_tokens = 0;      // sampled tokens over all choices, stop tokens included
  uint32_t draft_tokens = 0;           // tokens drafted by prompt lookup (speculate), over all choices
  uint32_t accepted_draft_tokens = 0;  // of them, the ones the model confirmed
  double queue_seconds = 0;            // submitted -> admitted
  uint32_t overtaken = 0;              // requests admitted past it while it was the oldest waiting
  double prompt_seconds = 0;           // admitted -> first sampled token
  double decode_seconds = 0;           // first sampled token -> done
  // A hidden_row request's final-normed hidden state at its last prompt token.
  std::vector<float> hidden;
};

struct CompletionRequest {
  std::vector<uint32_t> prompt;  // at least one token
  uint32_t max_tokens = 16;
  uint32_t n = 1;
  SamplingParams sampling;  // choice i samples with seed + i
  std::vector<std::string> stop;
  bool logprobs = false;
  uint32_t top_logprobs = 0;  // under a grammar: of the constrained distribution
  // How the answer opens (thinking first, maybe, or not at all): where a grammar starts and
  // what a thinking budget counts.
  AnswerStart answer_start = AnswerStart::at_once;
  // Structured output: every choice follows this grammar's matcher from `answer_start` on. Built
  // by the caller, off the scheduler thread, and not touched by it after submit: the scheduler
  // shares the matcher of an equal grammar it already runs (ConstraintCache), or adopts this one.
  std::shared_ptr<grammar::Automaton> constraint;
  std::optional<TokenFrame> grammar_frame;  // forced tool calls: the grammar between <tool_call> tags
  // At most this many tokens inside the think block; then it is closed for the answer (ThinkingBudget).
  std::optional<uint32_t> thinking_budget;
  // Embeddings and reranking: the prompt is evaluated for its final hidden row (RequestReport::
  // hidden), and nothing is sampled: max_tokens is 0 and n is 1. It is admitted, batched,
  // prefix-cached, counted and cancelled like any other request.
  bool hidden_row = false;
  // Both run on the scheduler thread and must not block; on_done runs exactly once, last.
  std::function<void(const ChoiceUpdate&)> on_update;
  std::function<void(const RequestReport&)> on_done;
};

// Held by the front end to cancel its request (e.g. the client disconnected); thread-safe.
class RequestTicket {
 public:
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  std::atomic<bool> cancelled_{false};
};

enum class Verdict { queued, queue_full, too_large };

struct Submission {
  Verdict verdict = Verdict::queued;
  std::string reason;  // why it was not queued
  std::shared_ptr<RequestTicket> ticket;
};

struct SchedulerStats {
  uint32_t running = 0, waiting = 0;
  uint64_t finished = 0, failed = 0, cancelled = 0;
  uint64_t prompt_tokens = 0, generated_tokens = 0, prefix_tokens_reused = 0;
  uint64_t draft_tokens = 0, accepted_draft_tokens = 0;
  uint64_t steps = 0;
  KvPoolStats pool;
  Histogram queue_seconds{{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  Histogram first_token_seconds{{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  Histogram batch_size{{1, 2, 4, 8, 16, 32, 64}};
  Histogram request_seconds{
      {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}};  // submitted -> done, finished ones
};

class Scheduler {
 public:
  // Creates the model's KV pool of options.pool_blocks blocks and starts the scheduler thread.
  static Result<std::unique_ptr<Scheduler>> create(BackendModel& model, const Tokenizer& tokenizer,
                                                   std::vector<uint32_t> stop_ids, uint32_t context,
                                                   const SchedulerOptions& options);
  ~Scheduler();  // cancels what is left (each gets on_done) and joins the thread

  // Checks what can be checked up front (a prompt plus max_tokens beyond the context or the pool
  // is too_large; a full queue is queue_full) and queues the request.
  Submission submit(CompletionRequest request);
  SchedulerStats stats() const;

  struct Sequence;
  struct Request;

 private:
  Scheduler(BackendModel& model, const Tokenizer& tokenizer, std::vector<uint32_t> stop_ids, uint32_t context,
            const SchedulerOptions& options);
  void run();
  void step();
  void cancel_abandoned();
  void admit();
  // How many requests may be admitted past the oldest waiting one (see admit()).
  static constexpr uint32_t kMaxOvertakes = 64;
  bool try_admit(Request& request);
  struct PrefixReuse;
  PrefixReuse reuse_prefix(std::span<const uint32_t> prompt, uint32_t prefix_blocks);
  void make_sequences(Request& request, uint32_t blocks, uint32_t shared, PrefixReuse reuse);
  Status copy_prefix_rows(Sequence& first, std::optional<KvBlockPool::RowSource> rows);
  Status start_sequences(Request& request, uint32_t positions);
  void start_siblings(Request& request);
  void evaluate();
  void share_prefill(std::span<Sequence* const> prefilling, uint32_t budget);
  uint32_t draft(Sequence& sequence);
  Status after_eval(Sequence& sequence, uint32_t evaluated, const float* logits);
  Status verify_draft(Sequence& sequence, const float* logits);
  Status sample(Sequence& sequence, std::span<const float> logits);
  void publish_full_blocks(Sequence& sequence);
  void finish_sequence(Sequence& sequence);
  void fail_request(Request& request, Error error);
  void retire_finished();

  BackendModel& model_;
  const Tokenizer& tokenizer_;
  const std::vector<uint32_t> stop_ids_;
  const uint32_t context_;
  const uint32_t vocab_;
  const SchedulerOptions options_;
  KvBlockPool pool_;
  ConstraintCache constraints_;  // scheduler thread only
  const Result<ThinkTokens> think_tokens_;
  const Result<CallTokens> call_tokens_;      // every answer's layout follows its calls where the tokenizer has them
  const Result<ThinkClosing> think_closing_;  // for thinking budgets

  mutable std::mutex mutex_;  // guards waiting_, stopping_ and stats_
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Request>> waiting_;
  bool stopping_ = false;
  SchedulerStats stats_;

  // Scheduler thread only.
  std::vector<std::unique_ptr<Request>> running_;
  std::vector<EvalItem> items_;
  std::vector<Sequence*> item_sequences_;
  std::vector<uint32_t> item_counts_;
  std::vector<Sequence*> prefilling_;  // this step's, in admission order
  std::thread thread_;
};

}  // namespace kipp
