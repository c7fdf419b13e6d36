#include "engine/thinking_budget.h"

namespace kipp {

Result<ThinkClosing> find_think_closing(const Tokenizer& tokenizer) {
  ThinkClosing closing;
  KIPP_ASSIGN(closing.think, find_think_tokens(tokenizer));
  KIPP_ASSIGN(closing.newline, tokenizer.encode("\n"));
  KIPP_ASSIGN(closing.separator, tokenizer.encode("\n\n"));
  return closing;
}

ThinkingBudget::ThinkingBudget(uint32_t budget, ThinkClosing closing, bool separator)
    : budget_(budget), closing_(std::move(closing)), separator_(separator) {}

std::optional<uint32_t> ThinkingBudget::forced(const AnswerLayout& layout) {
  if (closing_tokens_.empty() && layout.in_thought() && layout.thought_tokens() >= budget_) {
    if (!ended_newline_) closing_tokens_ = closing_.newline;
    closing_tokens_.push_back(closing_.think.close);
    if (separator_) closing_tokens_.insert(closing_tokens_.end(), closing_.separator.begin(), closing_.separator.end());
  }
  if (forced_ < closing_tokens_.size()) return closing_tokens_[forced_];
  return std::nullopt;
}

void ThinkingBudget::accept(std::string_view bytes, TokenRole role) {
  if (!closing_tokens_.empty()) {
    forced_ += forced_ < closing_tokens_.size();
    return;
  }
  if (role == TokenRole::opens_thought)
    ended_newline_ = false;  // "<think>" itself: the template's newline is still to come
  if (role == TokenRole::thought && !bytes.empty()) ended_newline_ = bytes.back() == '\n';
}

}  // namespace kipp
