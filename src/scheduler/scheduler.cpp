#include "scheduler/scheduler.h"

#include <algorithm>
#include <chrono>

#include "engine/answer_decoder.h"
#include "engine/prompt_lookup.h"
#include "model/model_file.h"

namespace kipp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

struct Scheduler::Sequence {
  enum class State { waiting_for_first_choice, prefill, decode, done };

  Request* request = nullptr;
  uint32_t choice = 0;
  State state = State::prefill;
  std::unique_ptr<BackendSession> session;
  std::vector<uint32_t> blocks;  // block table: logical block -> pool block
  std::vector<uint32_t> tokens;  // the prompt, then every sampled token (the last not yet in the KV)
  uint32_t evaluated = 0;        // positions in the KV
  uint32_t published = 0;        // leading blocks published (or adopted, hence already published)
  uint64_t address = 0;          // content address of the last of them
  uint32_t reservation = 0;      // blocks promised by the pool, not yet taken
  uint32_t generated = 0;
  std::optional<AnswerDecoder> decoder;
  std::vector<float> logits;     // a row per evaluated token that wants one
  // Speculation: the last sampled token then the draft, evaluated together; and when to draft.
  std::vector<uint32_t> draft_item;
  std::optional<SpeculationGate> gate;
};

struct Scheduler::Request {
  CompletionRequest spec;
  std::shared_ptr<RequestTicket> ticket;
  std::vector<std::unique_ptr<Sequence>> sequences;
  uint32_t shared_blocks = 0;  // full prompt blocks the other choices take from the first
  uint32_t finished = 0;
  RequestReport report;
  Clock::time_point submitted, admitted, first_token;
  bool has_first_token = false;
  uint32_t overtaken = 0;  // requests admitted past it while it was the oldest waiting
};

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

Scheduler::Scheduler(BackendModel& model, const Tokenizer& tokenizer, std::vector<uint32_t> stop_ids,
                     uint32_t context, const SchedulerOptions& options)
    : model_(model),
      tokenizer_(tokenizer),
      stop_ids_(std::move(stop_ids)),
      context_(context),
      vocab_(uint32_t(tokenizer.vocab_size())),
      options_(options),
      pool_(options.pool_blocks),
      constraints_(tokenizer),
      think_tokens_(find_think_tokens(tokenizer)),
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
    submission.verdict = Verdict::too_large;
    submission.reason = "a request needs at least one prompt token, one choice and one token to generate";
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
  request->submitted = Clock::now();
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

// Requests are taken in the order they came. One that does not fit yet (its reservation is more
// than the pool or the batch has room for now) keeps its place, and those behind it that fit go
// first: a request that asks for much waits, and never holds up smaller ones. So that it cannot
// wait for ever either, once kMaxOvertakes requests have gone past the oldest one waiting, none
// goes past it until it is in (the running ones finish and make its room).
void Scheduler::admit() {
  uint32_t sequences = 0;
  for (const auto& request : running_) sequences += uint32_t(request->sequences.size());
  // Only this thread takes from waiting_ (submit appends), so the places before `place` stay put.
  for (size_t place = 0;;) {
    std::unique_ptr<Request> request;
    {
      std::lock_guard lock(mutex_);
      if (place >= waiting_.size() || (place > 0 && waiting_.front()->overtaken >= kMaxOvertakes)) break;
      if (sequences + waiting_[place]->spec.n > options_.max_sequences) {
        ++place;
        continue;
      }
      request = std::move(waiting_[place]);
      waiting_.erase(waiting_.begin() + long(place));
    }
    if (!try_admit(*request)) {  // does not fit the pool yet: it keeps its place
      std::lock_guard lock(mutex_);
      waiting_.insert(waiting_.begin() + long(place), std::move(request));
      ++place;
      continue;
    }
    if (place > 0) {
      std::lock_guard lock(mutex_);
      ++waiting_.front()->overtaken;
    }
    sequences += request->spec.n;
    running_.push_back(std::move(request));
  }
  std::lock_guard lock(mutex_);
  stats_.waiting = uint32_t(waiting_.size());
  stats_.running = uint32_t(running_.size());
  stats_.pool = pool_.stats();
}

// The KV a request's prompt can start from: the published blocks it begins with (adopted), and
// the rows of a published block that its next tokens begin (copied rather than evaluated).
struct Scheduler::PrefixReuse {
  std::vector<uint32_t> adopted;
  uint64_t address = 0;  // content address of the last adopted block
  std::optional<KvBlockPool::RowSource> rows;
  uint32_t cached_tokens() const { return uint32_t(adopted.size()) * kKvBlockTokens + (rows ? rows->rows : 0); }
};

Scheduler::PrefixReuse Scheduler::reuse_prefix(std::span<const uint32_t> prompt, uint32_t prefix_blocks) {
  PrefixReuse reuse;
  reuse.adopted = pool_.adopt_prefix(prompt, prefix_blocks);
  for (uint32_t b = 0; b < reuse.adopted.size(); ++b)
    reuse.address = KvBlockPool::chain(reuse.address, prompt.subspan(b * kKvBlockTokens, kKvBlockTokens));
  // The prompt's next tokens, up to the last (always evaluated) and within the next block, may
  // start a published block.
  const uint32_t after = uint32_t(reuse.adopted.size()) * kKvBlockTokens;
  const uint32_t prompt_size = uint32_t(prompt.size());
  reuse.rows = pool_.find_rows(reuse.address, prompt.subspan(after, std::min(kKvBlockTokens, prompt_size - 1 - after)));
  return reuse;
}

bool Scheduler::try_admit(Request& request) {
  const CompletionRequest& spec = request.spec;
  const uint32_t prompt = uint32_t(spec.prompt.size());
  const uint32_t positions = prompt + spec.max_tokens;
  const uint32_t blocks = kv_blocks_for(positions);
  // At least one prompt token is evaluated, for the logits of the first sampled token.
  const uint32_t prefix_blocks = (prompt - 1) / kKvBlockTokens;
  PrefixReuse reuse = reuse_prefix(spec.prompt, prefix_blocks);
  const uint32_t shared = spec.n > 1 ? prefix_blocks : 0;
  const uint32_t needed = (blocks - uint32_t(reuse.adopted.size())) + (spec.n - 1) * (blocks - shared);
  // The block the rows would be copied from is held, so it cannot be evicted for this request's
  // reservation: one that needs that block too goes without the copy rather than wait forever.
  if (reuse.rows && !pool_.can_reserve(needed)) {
    pool_.release(reuse.rows->block);
    reuse.rows.reset();
  }
  if (!pool_.can_reserve(needed)) {
    for (uint32_t block : reuse.adopted) pool_.release(block);
    return false;
  }
  pool_.reserve(needed);
  request.admitted = Clock::now();
  request.shared_blocks = shared;
  request.report.queue_seconds = seconds_between(request.submitted, request.admitted);
  request.report.cached_tokens = reuse.cached_tokens();
  {
    std::lock_guard lock(mutex_);
    stats_.queue_seconds.observe(request.report.queue_seconds);
    stats_.prefix_tokens_reused += request.report.cached_tokens;
    stats_.prompt_tokens += prompt;
  }
  const std::optional<KvBlockPool::RowSource> rows = reuse.rows;
  make_sequences(request, blocks, shared, std::move(reuse));
  // Admitted either way; a failure from here on finishes the request at once.
  Status started = copy_prefix_rows(*request.sequences[0], rows);
  if (started) started = start_sequences(request, positions);
  if (!started) fail_request(request, started.error());
  return true;
}

// One sequence per choice; the first takes the adopted blocks, and the copied rows.
void Scheduler::make_sequences(Request& request, uint32_t blocks, uint32_t shared, PrefixReuse reuse) {
  const CompletionRequest& spec = request.spec;
  const uint32_t adopted = uint32_t(reuse.adopted.size());
  for (uint32_t choice = 0; choice < spec.n; ++choice) {
    auto sequence = std::make_unique<Sequence>();
    sequence->request = &request;
    sequence->choice = choice;
    sequence->tokens = spec.prompt;
    sequence->logits.resize(family::vocab);
    sequence->reservation = choice == 0 ? blocks - adopted : blocks - shared;
    sequence->state = choice > 0 && shared > 0 ? Sequence::State::waiting_for_first_choice : Sequence::State::prefill;
    request.sequences.push_back(std::move(sequence));
  }
  Sequence& first = *request.sequences[0];
  first.blocks = std::move(reuse.adopted);
  first.published = adopted;
  first.address = reuse.address;
}

// The rows go into the first block the sequence writes, then the source is let go.
Status Scheduler::copy_prefix_rows(Sequence& first, std::optional<KvBlockPool::RowSource> rows) {
  if (!rows) return {};
  auto target = pool_.take_reserved();
  const Status copied = target ? model_.copy_pool_rows(rows->block, *target, rows->rows) : Status(target.error());
  pool_.release(rows->block);
  if (target) {
    first.blocks.push_back(*target);
    --first.reservation;
  }
  return copied;
}

// Each choice's constraint, thinking budget, sampler (seeded by choice) and session; the first
// session starts from the prefix reused.
Status Scheduler::start_sequences(Request& request, uint32_t positions) {
  const CompletionRequest& spec = request.spec;
  std::shared_ptr<grammar::TokenMasks> masks;
  if (spec.constraint) {
    if (!think_tokens_) return think_tokens_.error();
    masks = constraints_.masks_for(spec.constraint);
  }
  if (spec.thinking_budget && !think_closing_)
    return fail("a thinking budget needs the <think> tokens: ", think_closing_.error().message);
  for (auto& sequence : request.sequences) {
    std::optional<TokenConstraint> constraint;
    if (masks) constraint.emplace(masks, spec.answer_start, stop_ids_, think_tokens_.value(), spec.grammar_frame);
    std::optional<ThinkingBudget> budget;
    if (spec.thinking_budget) budget.emplace(*spec.thinking_budget, spec.answer_start, think_closing_.value(), !masks);
    SamplingParams sampling = spec.sampling;
    sampling.seed += sequence->choice;
    auto sampler = Sampler::create(sampling, vocab_);
    auto session = model_.create_pooled_session(positions);
    if (!sampler) return sampler.error();
    if (!session) return session.error();
    sequence->decoder.emplace(tokenizer_, stop_ids_, std::move(sampler).value(), spec.stop, std::move(constraint),
                              std::move(budget));
    if (options_.speculate && spec.sampling.greedy()) {
      sequence->gate.emplace();
      sequence->logits.resize(size_t(kMaxDraftTokens + 1) * vocab_);
    }
    sequence->session = std::move(session).value();
  }
  Sequence& first = *request.sequences[0];
  KIPP_TRY(first.session->adopt_prefix(request.report.cached_tokens));
  first.evaluated = request.report.cached_tokens;
  return {};
}
void Scheduler::start_siblings(Request& request) {
  const Sequence& first = *request.sequences[0];
  const uint32_t shared = request.shared_blocks;
  uint64_t address = 0;
  for (uint32_t b = 0; b < shared; ++b)
    address = KvBlockPool::chain(address, std::span(first.tokens).subspan(b * kKvBlockTokens, kKvBlockTokens));
  for (auto& sequence : request.sequences) {
    if (sequence->state != Sequence::State::waiting_for_first_choice) continue;
    sequence->blocks.assign(first.blocks.begin(), first.blocks.begin() + shared);
    for (uint32_t block : sequence->blocks) pool_.share(block);
    if (auto ok = sequence->session->adopt_prefix(shared * kKvBlockTokens); !ok) {
      fail_request(request, ok.error());
      return;
    }
    sequence->evaluated = shared * kKvBlockTokens;
    sequence->published = shared;
    sequence->address = address;
    sequence->state = Sequence::State::prefill;
  }
}

void Scheduler::evaluate() {
  items_.clear();
  item_sequences_.clear();
  item_counts_.clear();
  uint32_t prefill_budget = options_.step_tokens;
  for (auto& request : running_) {
    for (auto& sequence : request->sequences) {
      uint32_t count = 0;
      uint32_t logit_rows = 1;
      const uint32_t prompt = uint32_t(request->spec.prompt.size());
      std::span<const uint32_t> tokens;
      if (sequence->state == Sequence::State::decode) {
        const uint32_t drafted = draft(*sequence);
        count = 1 + drafted;
        logit_rows = count;
        if (drafted > 0) tokens = sequence->draft_item;
      } else if (sequence->state == Sequence::State::prefill) {
        count = std::min(prompt - sequence->evaluated, prefill_budget);
        prefill_budget -= count;
        logit_rows = sequence->evaluated + count == prompt ? 1 : 0;
      }
      if (count == 0) continue;
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
      if (tokens.empty()) tokens = std::span(sequence->tokens).subspan(sequence->evaluated, count);
      items_.push_back(EvalItem{sequence->session.get(), tokens, sequence->evaluated, logit_rows,
                                sequence->logits.data(), sequence->blocks});
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
  if (!logits || sequence.state == Sequence::State::done) return {};
  return sample(sequence, std::span(logits, vocab_));
}

Status Scheduler::sample(Sequence& sequence, std::span<const float> logits) {
  Request& request = *sequence.request;
  const Clock::time_point now = Clock::now();
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
  update.added = std::move(taken.added);
  std::optional<FinishReason> finish = taken.finish;
  if (finish == FinishReason::stop_string) update.stop = decoder.matched_stop();
  if (taken.logprobs) update.tokens.push_back({update.text, std::move(*taken.logprobs)});
  // The next token needs this one in the KV: stop at the session's end as at max_tokens.
  if (!finish && (sequence.generated >= request.spec.max_tokens ||
                  sequence.evaluated + 1 > sequence.session->capacity()))
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
  if (!update.text.empty() || !update.tokens.empty() || finish)
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
  const Clock::time_point now = Clock::now();
  for (auto it = running_.begin(); it != running_.end();) {
    Request& request = **it;
    if (request.finished < request.sequences.size()) {
      ++it;
      continue;
    }
    if (request.has_first_token) request.report.decode_seconds = seconds_between(request.first_token, now);
    if (request.spec.on_done) request.spec.on_done(request.report);
    {
      std::lock_guard lock(mutex_);
      if (request.report.error)
        ++stats_.failed;
      else if (request.report.cancelled)
        ++stats_.cancelled;
      else
        ++stats_.finished;
      if (!request.report.error && !request.report.cancelled)
        stats_.request_seconds.observe(seconds_between(request.submitted, now));
    }
    it = running_.erase(it);
  }
  std::lock_guard lock(mutex_);
  stats_.running = uint32_t(running_.size());
  stats_.pool = pool_.stats();
}

}  // namespace kipp
