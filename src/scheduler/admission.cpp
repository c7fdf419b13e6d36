// Admission: which waiting requests go in, what each reuses of the KV pool, and its sequences
// set up (decoders, sessions, the prefix adopted or copied).
#include <algorithm>

#include "registry/registry.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_state.h"

namespace kipp {

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
  request.admitted = SchedulerClock::now();
  request.shared_blocks = shared;
  request.report.queue_seconds = seconds_between(request.submitted, request.admitted);
  request.report.overtaken = request.overtaken;
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
    if (spec.hidden_row) sequence->hidden.resize(options_.hidden);
    else sequence->logits.resize(vocab_);
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
    if (masks) constraint.emplace(masks, stop_ids_, spec.grammar_frame);
    std::optional<ThinkingBudget> budget;
    if (spec.thinking_budget) budget.emplace(*spec.thinking_budget, think_closing_.value(), !masks);
    SamplingParams sampling = spec.sampling;
    sampling.seed += sequence->choice;
    auto sampler = Sampler::create(sampling, vocab_);
    auto session = model_.create_pooled_session(positions);
    if (!sampler) return sampler.error();
    if (!session) return session.error();
    sequence->decoder.emplace(tokenizer_, stop_ids_, std::move(sampler).value(), spec.stop,
                              answer_layout(spec.answer_start, think_tokens_, call_tokens_), std::move(constraint),
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

}  // namespace kipp
