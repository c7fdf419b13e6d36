#include "scheduler/scheduler.h"

#include <algorithm>
#include <chrono>

#include "engine/answer_decoder.h"
#include "engine/prompt_lookup.h"
#include "scheduler/scheduler_state.h"

namespace kipp {

Result<std::unique_ptr<Scheduler>> Scheduler::create(BackendModel& model, const Tokenizer& tokenizer,
                                                     std::vector<uint32_t> stop_ids, uint32_t context,
                                                     const SchedulerOptions& options) {
  if (options.pool_blocks == 0) return fail("the KV pool needs at least one block");
  if (options.max_sequences == 0) return fail("the scheduler needs room for at least one sequence");
  if (options.step_tokens == 0) return fail("the scheduler needs a prefill budget of at least one token");
  KIPP_TRY(model.create_kv_pool(options.pool_blocks));
  std::unique_ptr<Scheduler> scheduler(new Scheduler(model, tokenizer, std::move(stop_ids), context, options));
  scheduler->thread_ = std::thread([s = scheduler.get()] { s->run(); });
  return scheduler;
}

Scheduler::Scheduler(BackendModel& model, const Tokenizer& tokenizer, std::vector<uint32_t> stop_ids, uint32_t context,
                     const SchedulerOptions& options)
    : model_(model),
      tokenizer_(tokenizer),
      stop_ids_(std::move(stop_ids)),
      context_(context),
      vocab_(uint32_t(tokenizer.vocab_size())),
      options_(options),
      pool_(options.pool_blocks),
      constraints_(tokenizer),
      think_tokens_(find_think_tokens(tokenizer)),
      call_tokens_(find_call_tokens(tokenizer)),
      think_closing_(find_think_closing(tokenizer)) {
  stats_.pool = pool_.stats();  // what /metrics shows before the first request: the whole pool, free
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Submission Scheduler::submit(CompletionRequest spec) {
  Submission submission;
  const uint64_t positions = uint64_t(spec.prompt.size()) + spec.max_tokens;
  if (spec.prompt.empty() || spec.n == 0 || spec.max_tokens == 0) {
    if (!spec.hidden_row || spec.prompt.empty() || spec.n != 1 || spec.max_tokens != 0 || options_.hidden == 0) {
      submission.verdict = Verdict::too_large;
      submission.reason = spec.hidden_row ? "a hidden-row request needs at least one prompt token, one choice, no "
                                            "token to generate, and a scheduler told the hidden width"
                                          : "a request needs at least one prompt token, one choice and one token "
                                            "to generate";
      return submission;
    }
  } else if (spec.hidden_row) {
    submission.verdict = Verdict::too_large;
    submission.reason = "a hidden-row request generates no tokens (max_tokens 0) and has one choice";
    return submission;
  }
  if (positions > context_) {
    submission.verdict = Verdict::too_large;
    submission.reason = "the prompt (" + std::to_string(spec.prompt.size()) + " tokens) plus max_tokens (" +
                        std::to_string(spec.max_tokens) + ") exceeds the context of " + std::to_string(context_) +
                        " tokens";
    return submission;
  }
  const uint64_t blocks = uint64_t(kv_blocks_for(uint32_t(positions))) * spec.n;
  if (blocks > options_.pool_blocks || spec.n > options_.max_sequences) {
    submission.verdict = Verdict::too_large;
    submission.reason = "the request needs up to " + std::to_string(blocks) + " KV blocks for " +
                        std::to_string(spec.n) + " choice(s) of " + std::to_string(positions) +
                        " positions; the server's pool has " + std::to_string(options_.pool_blocks) +
                        " blocks and runs at most " + std::to_string(options_.max_sequences) + " sequences";
    return submission;
  }
  auto request = std::make_unique<Request>();
  request->spec = std::move(spec);
  request->ticket = std::make_shared<RequestTicket>();
  request->submitted = SchedulerClock::now();
  request->report.prompt_tokens = uint32_t(request->spec.prompt.size());
  submission.ticket = request->ticket;
  {
    std::lock_guard lock(mutex_);
    if (waiting_.size() >= options_.max_waiting) {
      submission.verdict = Verdict::queue_full;
      submission.reason = "the server is busy: " + std::to_string(waiting_.size()) + " requests are waiting";
      submission.ticket.reset();
      return submission;
    }
    waiting_.push_back(std::move(request));
    stats_.waiting = uint32_t(waiting_.size());
  }
  wake_.notify_one();
  return submission;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Scheduler::run() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running_.empty(); });
      if (stopping_) break;
    }
    step();
  }
  // Shutting down: everything still queued or running ends as cancelled (a request never
  // admitted has no sequences, so it retires at once).
  std::deque<std::unique_ptr<Request>> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(waiting_);
  }
  for (auto& request : left) running_.push_back(std::move(request));
  for (auto& request : running_) request->ticket->cancel();
  cancel_abandoned();
  retire_finished();
}

void Scheduler::step() {
  cancel_abandoned();
  admit();
  evaluate();
  retire_finished();
}

void Scheduler::cancel_abandoned() {
  // A cancelled request still waiting leaves the queue without being admitted; it retires with
  // the running ones (it has no sequences to finish).
  {
    std::lock_guard lock(mutex_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if ((*it)->ticket->cancelled()) {
        running_.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    stats_.waiting = uint32_t(waiting_.size());
  }
  for (auto& request : running_) {
    if (!request->ticket->cancelled()) continue;
    request->report.cancelled = true;
    for (auto& sequence : request->sequences)
      if (sequence->state != Sequence::State::done) finish_sequence(*sequence);
  }
}
// One step: every decoding sequence's token (and draft), then prompt chunks in what is left of
// the step's budget (share_prefill), evaluated together in one backend call.
void Scheduler::evaluate() {
  items_.clear();
  item_sequences_.clear();
  item_counts_.clear();
  prefilling_.clear();
  uint32_t decode_tokens = 0;
  for (auto& request : running_)
    for (auto& sequence : request->sequences) {
      if (sequence->state == Sequence::State::decode) {
        sequence->chunk = 1 + draft(*sequence);
        decode_tokens += sequence->chunk;
      } else if (sequence->state == Sequence::State::prefill) {
        prefilling_.push_back(sequence.get());
      }
    }
  // Prompts always keep a quarter of the step, so that a --step-tokens below what a full batch of
  // drafting sequences decodes slows admissions instead of stopping them until the batch ends.
  const uint32_t prompt_floor = std::max<uint32_t>(1, options_.step_tokens / 4);
  share_prefill(prefilling_,
                std::max(prompt_floor,
                         options_.step_tokens > decode_tokens ? options_.step_tokens - decode_tokens : 0u));
  for (auto& request : running_) {
    for (auto& sequence : request->sequences) {
      const bool decoding = sequence->state == Sequence::State::decode;
      if (!decoding && sequence->state != Sequence::State::prefill) continue;
      const uint32_t count = sequence->chunk;
      if (count == 0) continue;
      const uint32_t prompt = uint32_t(request->spec.prompt.size());
      const bool prompt_done = !decoding && sequence->evaluated + count == prompt;
      const bool hidden = prompt_done && request->spec.hidden_row;
      const uint32_t logit_rows = decoding ? count : prompt_done && !hidden ? 1 : 0;
      // Blocks for the positions this item writes come out of the sequence's reservation.
      while (sequence->blocks.size() < kv_blocks_for(sequence->evaluated + count)) {
        auto block = pool_.take_reserved();
        if (!block) {
          fail_request(*request, block.error());
          break;
        }
        sequence->blocks.push_back(*block);
        --sequence->reservation;
      }
      if (sequence->state == Sequence::State::done) break;
      const std::span<const uint32_t> tokens = decoding && count > 1
                                                   ? std::span<const uint32_t>(sequence->draft_item)
                                                   : std::span(sequence->tokens).subspan(sequence->evaluated, count);
      items_.push_back(EvalItem{sequence->session.get(), tokens, sequence->evaluated, logit_rows,
                                sequence->logits.data(), sequence->blocks, hidden ? sequence->hidden.data() : nullptr});
      item_sequences_.push_back(sequence.get());
      item_counts_.push_back(count);
    }
  }
  if (items_.empty()) return;
  {
    std::lock_guard lock(mutex_);
    ++stats_.steps;
    stats_.batch_size.observe(double(items_.size()));
  }
  if (auto ok = model_.eval(items_); !ok) {
    for (Sequence* sequence : item_sequences_)
      if (sequence->state != Sequence::State::done) fail_request(*sequence->request, ok.error());
    return;
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    Sequence& sequence = *item_sequences_[i];
    if (sequence.state == Sequence::State::done) continue;  // its request failed during this pass
    const float* logits = items_[i].logit_rows ? sequence.logits.data() : nullptr;
    const Status ok = item_counts_[i] > 1 && sequence.state == Sequence::State::decode
                          ? verify_draft(sequence, logits)
                          : after_eval(sequence, item_counts_[i], logits);
    if (!ok) fail_request(*sequence.request, ok.error());
  }
}

// The prompt chunks of a step: `budget` tokens shared evenly among the prefilling sequences, none
// taking more than its prompt has left, what one leaves going to the others (in admission order
// for the odd tokens). A short prompt that comes beside a long one is not kept waiting for the
// long one's whole prefill (opencode's title request beside its turn); a sequence's chunks do not
// change what it computes (the backends are chunk-invariant), only when.
void Scheduler::share_prefill(std::span<Sequence* const> prefilling, uint32_t budget) {
  for (Sequence* sequence : prefilling) sequence->chunk = 0;
  size_t open = prefilling.size();  // sequences whose prompt has tokens beyond their chunk
  while (budget > 0 && open > 0) {
    const uint32_t share = std::max<uint32_t>(1, budget / uint32_t(open));
    open = 0;
    for (Sequence* sequence : prefilling) {
      const uint32_t left = uint32_t(sequence->request->spec.prompt.size()) - sequence->evaluated - sequence->chunk;
      const uint32_t take = std::min({share, left, budget});
      sequence->chunk += take;
      budget -= take;
      if (take < left) ++open;
      if (budget == 0) break;
    }
  }
}

// A decode sequence's draft (into draft_item after its last sampled token), or 0 tokens. The
// draft stays within max_tokens: the item then writes no position beyond the request's reservation.
uint32_t Scheduler::draft(Sequence& sequence) {
  if (!sequence.gate || !sequence.gate->should_draft()) return 0;
  const uint32_t room = sequence.request->spec.max_tokens - sequence.generated - 1;
  const std::vector<uint32_t> guess = lookup_draft(sequence.tokens, std::min(kMaxDraftTokens, room));
  if (guess.empty()) return 0;
  sequence.draft_item.assign(1, sequence.tokens.back());
  sequence.draft_item.insert(sequence.draft_item.end(), guess.begin(), guess.end());
  return uint32_t(guess.size());
}

// Row i of the logits follows draft token i - 1 (row 0 the last sampled token). Each row's token
// is chosen as a plain step would choose it; while it equals the next draft token, that token's
// KV row is the one a plain step would have written, and the next row is its logits. The first
// difference ends it: the rows after it are dropped from the cache.
Status Scheduler::verify_draft(Sequence& sequence, const float* logits) {
  const uint32_t drafted = uint32_t(sequence.draft_item.size() - 1);
  uint32_t accepted = 0;
  sequence.evaluated += 1;
  for (uint32_t row = 0;; ++row) {
    publish_full_blocks(sequence);
    KIPP_TRY(sample(sequence, std::span(logits + size_t(row) * vocab_, vocab_)));
    if (row == drafted || sequence.state == Sequence::State::done) break;
    if (sequence.tokens.back() != sequence.draft_item[row + 1]) break;
    ++accepted;
    sequence.evaluated += 1;
  }
  sequence.gate->record(drafted, accepted);
  sequence.request->report.draft_tokens += drafted;
  sequence.request->report.accepted_draft_tokens += accepted;
  {
    std::lock_guard lock(mutex_);
    stats_.draft_tokens += drafted;
    stats_.accepted_draft_tokens += accepted;
  }
  if (sequence.state == Sequence::State::done) return {};
  return sequence.session->truncate(sequence.evaluated);
}

Status Scheduler::after_eval(Sequence& sequence, uint32_t evaluated, const float* logits) {
  sequence.evaluated += evaluated;
  publish_full_blocks(sequence);
  Request& request = *sequence.request;
  if (sequence.choice == 0 && sequence.state == Sequence::State::prefill &&
      sequence.evaluated == request.spec.prompt.size())
    start_siblings(request);  // before this choice can finish and let its blocks go
  if (request.spec.hidden_row && sequence.evaluated == request.spec.prompt.size() &&
      sequence.state != Sequence::State::done) {
    request.report.prompt_seconds = seconds_between(request.admitted, SchedulerClock::now());
    request.report.hidden = std::move(sequence.hidden);
    finish_sequence(sequence);
    return {};
  }
  if (!logits || sequence.state == Sequence::State::done) return {};
  return sample(sequence, std::span(logits, vocab_));
}

Status Scheduler::sample(Sequence& sequence, std::span<const float> logits) {
  Request& request = *sequence.request;
  const SchedulerClock::time_point now = SchedulerClock::now();
  if (!request.has_first_token) {
    request.has_first_token = true;
    request.first_token = now;
    request.report.prompt_seconds = seconds_between(request.admitted, now);
    std::lock_guard lock(mutex_);
    stats_.first_token_seconds.observe(seconds_between(request.submitted, now));
  }
  AnswerDecoder& decoder = *sequence.decoder;
  KIPP_ASSIGN(const uint32_t token, decoder.choose(logits));
  const LogprobsWanted logprobs{logits, request.spec.top_logprobs};
  KIPP_ASSIGN(TakenToken taken, decoder.take(token, request.spec.logprobs ? &logprobs : nullptr));
  sequence.tokens.push_back(token);
  ++sequence.generated;
  ++request.report.completion_tokens;
  {
    std::lock_guard lock(mutex_);
    ++stats_.generated_tokens;
  }
  sequence.state = Sequence::State::decode;

  ChoiceUpdate update;
  update.choice = sequence.choice;
  update.generated = sequence.generated;
  update.text = std::move(taken.text);
  update.parts = std::move(taken.parts);
  std::optional<FinishReason> finish = taken.finish;
  if (finish == FinishReason::stop_string) update.stop = decoder.matched_stop();
  if (taken.logprobs) update.tokens.push_back({update.text, std::move(*taken.logprobs)});
  // The next token needs this one in the KV: stop at the session's end as at max_tokens.
  if (!finish &&
      (sequence.generated >= request.spec.max_tokens || sequence.evaluated + 1 > sequence.session->capacity()))
    finish = FinishReason::length;
  if (finish && *finish != FinishReason::stop_string) {
    std::string tail;
    if (decoder.finish(tail)) {
      finish = FinishReason::stop_string;
      update.stop = decoder.matched_stop();
    }
    update.text += tail;
    if (!update.tokens.empty()) update.tokens.back().text += tail;
  }
  update.finish = finish;
  // Part starts may come before their text, which a stop string can hold back.
  if (!update.text.empty() || !update.tokens.empty() || !update.parts.empty() || finish)
    if (request.spec.on_update) request.spec.on_update(update);
  if (finish) finish_sequence(sequence);
  return {};
}

void Scheduler::publish_full_blocks(Sequence& sequence) {
  while ((sequence.published + 1) * kKvBlockTokens <= sequence.evaluated) {
    const auto block_tokens = std::span(sequence.tokens).subspan(sequence.published * kKvBlockTokens, kKvBlockTokens);
    sequence.address = pool_.publish(sequence.blocks[sequence.published], sequence.address, block_tokens);
    ++sequence.published;
  }
}

// Ends a sequence without touching its output: the caller has sent its last update (a cancelled
// or failed sequence gets none). Its blocks go back to the pool, published ones stay cached, and
// its partly filled last block is published as a tail for a later prompt that goes on the same way.
void Scheduler::finish_sequence(Sequence& sequence) {
  if (sequence.state == Sequence::State::done) return;
  sequence.state = Sequence::State::done;
  const uint32_t tail = sequence.evaluated - sequence.published * kKvBlockTokens;
  if (tail > 0 && tail < kKvBlockTokens && sequence.published < sequence.blocks.size())
    pool_.publish_tail(sequence.blocks[sequence.published], sequence.address,
                       std::span(sequence.tokens).subspan(sequence.published * kKvBlockTokens, tail));
  for (uint32_t block : sequence.blocks) pool_.release(block);
  sequence.blocks.clear();
  pool_.unreserve(sequence.reservation);
  sequence.reservation = 0;
  sequence.session.reset();
  ++sequence.request->finished;
}

void Scheduler::fail_request(Request& request, Error error) {
  if (!request.report.error) request.report.error = std::move(error);
  for (auto& sequence : request.sequences)
    if (sequence->state != Sequence::State::done) finish_sequence(*sequence);
}

void Scheduler::retire_finished() {
  const SchedulerClock::time_point now = SchedulerClock::now();
  for (auto it = running_.begin(); it != running_.end();) {
    Request& request = **it;
    if (request.finished < request.sequences.size()) {
      ++it;
      continue;
    }
    if (request.has_first_token) request.report.decode_seconds = seconds_between(request.first_token, now);
    // Counted before its answer goes out, so that a client holding the answer finds it in /metrics.
    {
      std::lock_guard lock(mutex_);
      if (request.report.error) ++stats_.failed;
      else if (request.report.cancelled) ++stats_.cancelled;
      else ++stats_.finished;
      if (!request.report.error && !request.report.cancelled)
        stats_.request_seconds.observe(seconds_between(request.submitted, now));
    }
    if (request.spec.on_done) request.spec.on_done(request.report);
    it = running_.erase(it);
  }
  std::lock_guard lock(mutex_);
  stats_.running = uint32_t(running_.size());
  stats_.pool = pool_.stats();
}

}  // namespace kipp
