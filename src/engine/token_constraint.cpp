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

ConstraintStart chat_constraint_start(Variant variant, bool enable_thinking) {
  switch (variant) {
    case Variant::instruct: return enable_thinking ? ConstraintStart::maybe_think : ConstraintStart::at_once;
    case Variant::thinking_2507: return ConstraintStart::after_think;
    default: return ConstraintStart::at_once;
  }
}

Result<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer) {
  ThinkTokens think;
  for (auto [text, id] : {std::pair{"<think>", &think.open}, std::pair{"</think>", &think.close}}) {
    KIPP_ASSIGN(const std::vector<TokenId> ids, tokenizer.encode(text));
    if (ids.size() != 1 || tokenizer.is_normal(ids[0]))
      return fail("the tokenizer has no single added token for ", text, ": thinking cannot be told apart from the answer");
    *id = ids[0];
  }
  return think;
}

TokenConstraint::TokenConstraint(std::shared_ptr<grammar::TokenMasks> masks, ConstraintStart start,
                                 std::span<const uint32_t> stop_ids, ThinkTokens think)
    : masks_(std::move(masks)),
      stop_ids_(stop_ids.begin(), stop_ids.end()),
      think_(think),
      phase_(start == ConstraintStart::at_once       ? Phase::grammar
             : start == ConstraintStart::after_think ? Phase::reasoning
                                                     : Phase::first_token),
      state_(masks_->automaton().start()) {}

bool TokenConstraint::complete() const { return phase_ == Phase::grammar && masks_->automaton().accepts(state_); }

Result<const AllowedTokens*> TokenConstraint::allowed() {
  if (phase_ == Phase::reasoning) return nullptr;
  grammar::Automaton& automaton = masks_->automaton();
  allowed_.extra.clear();
  allowed_.set = nullptr;
  if (automaton.continues(state_)) {
    KIPP_ASSIGN(allowed_.set, masks_->allowed(state_));
  }
  if (automaton.accepts(state_)) allowed_.extra = stop_ids_;
  if (phase_ == Phase::first_token) allowed_.extra.push_back(think_.open);
  return &allowed_;
}

Status TokenConstraint::accept(uint32_t token, std::string_view bytes) {
  switch (phase_) {
    case Phase::reasoning:
      if (token == think_.close) phase_ = Phase::grammar;
      return {};
    case Phase::first_token:
      phase_ = Phase::grammar;
      if (token == think_.open) {
        phase_ = Phase::reasoning;
        return {};
      }
      break;
    case Phase::grammar:
      break;
  }
  if (std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end()) {
    if (!masks_->automaton().accepts(state_)) return fail("token ", token, " ended the answer before the grammar's text was whole");
    return {};
  }
  KIPP_ASSIGN(const std::shared_ptr<const grammar::TokenSet> tokens, masks_->allowed(state_));
  KIPP_ASSIGN(const grammar::StateId next, masks_->after(state_, bytes));
  if (next == grammar::kDeadState || !tokens->has(token)) return fail("token ", token, " is not allowed by the grammar here");
  state_ = next;
  return {};
}

}  // namespace kipp
