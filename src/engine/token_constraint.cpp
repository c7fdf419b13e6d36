#include "engine/token_constraint.h"

#include <algorithm>

namespace kipp {

bool AllowedTokens::has(uint32_t id) const {
  return (set && set->has(id)) || std::find(extra.begin(), extra.end(), id) != extra.end();
}

size_t AllowedTokens::count() const {
  size_t count = set ? set->count() : 0;
  for (uint32_t id : extra) count += !(set && set->has(id));
  return count;
}

std::shared_ptr<const grammar::TokenTrie> constrained_vocabulary(const Tokenizer& tokenizer) {
  return std::make_shared<const grammar::TokenTrie>(
      grammar::TokenTrie::build(uint32_t(tokenizer.vocab_size()), [&](uint32_t id) {
        return tokenizer.is_normal(id) ? tokenizer.token_bytes(id) : std::string_view();
      }));
}

TokenConstraint::TokenConstraint(std::shared_ptr<grammar::TokenMasks> masks, std::span<const uint32_t> stop_ids,
                                 std::optional<TokenFrame> frame, uint64_t max_steps)
    : masks_(std::move(masks)),
      stop_ids_(stop_ids.begin(), stop_ids.end()),
      frame_(frame),
      phase_(frame_ ? Phase::frame_open : Phase::grammar),
      state_(masks_->automaton().start()),
      max_steps_(max_steps) {}

Status TokenConstraint::charge(uint64_t steps_before) {
  steps_ += masks_->automaton().steps() - steps_before;
  if (steps_ > max_steps_)
    return limit_exceeded("the constraint took more than the limit of ", max_steps_,
                          " matcher steps for one answer (the grammar is too ambiguous to follow at this cost)");
  return {};
}

Result<const AllowedTokens*> TokenConstraint::allowed(const AnswerLayout& layout) {
  if (layout.in_thought()) return nullptr;
  allowed_.extra.clear();
  allowed_.set = nullptr;
  if (layout.may_open_thought()) allowed_.extra.push_back(layout.think().open);  // and what the answer may begin with
  switch (phase_) {
    case Phase::frame_open: allowed_.extra.push_back(frame_->open); return &allowed_;
    case Phase::after_frame:
      allowed_.extra = stop_ids_;
      if (frame_->repeats) allowed_.extra.push_back(frame_->open);
      return &allowed_;
    case Phase::grammar: break;
  }
  grammar::Automaton& automaton = masks_->automaton();
  if (automaton.continues(state_)) {
    const uint64_t steps_before = automaton.steps();
    KIPP_ASSIGN(allowed_.set, masks_->allowed(state_));
    KIPP_TRY(charge(steps_before));
  }
  if (automaton.accepts(state_)) {
    if (frame_) allowed_.extra.push_back(frame_->close);
    else allowed_.extra.insert(allowed_.extra.end(), stop_ids_.begin(), stop_ids_.end());
  }
  return &allowed_;
}

Status TokenConstraint::accept(uint32_t token, std::string_view bytes, TokenRole role) {
  if (role != TokenRole::answer) return {};  // the think block and its tags are free
  const auto is_stop = [&] { return std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end(); };
  switch (phase_) {
    case Phase::frame_open:
      if (token != frame_->open) return fail("token ", token, " is not the call's opening token");
      phase_ = Phase::grammar;
      state_ = masks_->automaton().start();
      return {};
    case Phase::after_frame:
      if (is_stop()) return {};
      if (frame_->repeats && token == frame_->open) {
        phase_ = Phase::grammar;
        state_ = masks_->automaton().start();
        return {};
      }
      return fail("token ", token, " follows a closed call");
    case Phase::grammar: break;
  }
  const bool ends = frame_ ? token == frame_->close : is_stop();
  if (ends) {
    if (!masks_->automaton().accepts(state_))
      return fail("token ", token, " ended the answer before the grammar's text was whole");
    if (frame_) phase_ = Phase::after_frame;
    return {};
  }
  const uint64_t steps_before = masks_->automaton().steps();
  KIPP_ASSIGN(const std::shared_ptr<const grammar::TokenSet> tokens, masks_->allowed(state_));
  KIPP_ASSIGN(const grammar::StateId next, masks_->after(state_, bytes));
  KIPP_TRY(charge(steps_before));
  if (next == grammar::kDeadState || !tokens->has(token))
    return fail("token ", token, " is not allowed by the grammar here");
  state_ = next;
  return {};
}

}  // namespace kipp
