#include "engine/thinking_budget.h"

namespace kipp {

Result<ThinkClosing> find_think_closing(const Tokenizer& tokenizer) {
  ThinkClosing closing;
  KIPP_ASSIGN(closing.think, find_think_tokens(tokenizer));
  KIPP_ASSIGN(closing.newline, tokenizer.encode("\n"));
  KIPP_ASSIGN(closing.separator, tokenizer.encode("\n\n"));
  return closing;
}

ThinkingBudget::ThinkingBudget(uint32_t budget, AnswerStart start, ThinkClosing closing, bool separator)
    : budget_(budget),
      closing_(std::move(closing)),
      separator_(separator),
      phase_(start == AnswerStart::at_once       ? Phase::answering
             : start == AnswerStart::after_think ? Phase::thinking
                                                 : Phase::first_token) {
  if (phase_ == Phase::thinking && budget_ == 0) begin_closing();
}

std::optional<uint32_t> ThinkingBudget::forced() const {
  if (phase_ == Phase::closing) return queue_[next_];
  return std::nullopt;
}

void ThinkingBudget::begin_closing() {
  closed_it_ = true;
  if (!ended_newline_) queue_ = closing_.newline;
  queue_.push_back(closing_.think.close);
  if (separator_) queue_.insert(queue_.end(), closing_.separator.begin(), closing_.separator.end());
  phase_ = Phase::closing;
}

void ThinkingBudget::accept(uint32_t token, std::string_view bytes) {
  switch (phase_) {
    case Phase::first_token:
      if (token != closing_.think.open) {
        phase_ = Phase::answering;
        return;
      }
      phase_ = Phase::thinking;
      ended_newline_ = false;  // "<think>" itself: the template's newline is still to come
      if (budget_ == 0) begin_closing();
      return;
    case Phase::thinking:
      if (token == closing_.think.close) {
        phase_ = Phase::answering;
        return;
      }
      if (!bytes.empty()) ended_newline_ = bytes.back() == '\n';
      if (++spent_ >= budget_) begin_closing();
      return;
    case Phase::closing:
      if (++next_ == queue_.size()) phase_ = Phase::answering;
      return;
    case Phase::answering: return;
  }
}

}  // namespace kipp
