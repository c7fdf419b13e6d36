#include "engine/answer_decoder.h"

#include <algorithm>
#include <chrono>

namespace kipp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop_token: return "stop_token";
    case FinishReason::stop_string: return "stop_string";
    case FinishReason::length: return "length";
    case FinishReason::cancelled: return "cancelled";
  }
  return "?";
}

AnswerDecoder::AnswerDecoder(const Tokenizer& tokenizer, std::span<const uint32_t> stop_ids, Sampler sampler,
                             std::vector<std::string> stop_strings, AnswerLayout layout,
                             std::optional<TokenConstraint> constraint, std::optional<ThinkingBudget> budget)
    : tokenizer_(tokenizer),
      stop_ids_(stop_ids.begin(), stop_ids.end()),
      sampler_(std::move(sampler)),
      output_(tokenizer, std::move(stop_strings)),
      layout_(layout),
      constraint_(std::move(constraint)),
      budget_(std::move(budget)) {}

Result<uint32_t> AnswerDecoder::choose(std::span<const float> row) {
  allowed_ = nullptr;
  if (const std::optional<uint32_t> forced = budget_ ? budget_->forced(layout_) : std::nullopt) return *forced;
  if (constraint_) {
    const Clock::time_point start = Clock::now();
    KIPP_ASSIGN(allowed_, constraint_->allowed(layout_));
    constraint_seconds_.push_back(seconds_since(start));
  }
  return sampler_.sample(row, allowed_);
}

Result<TakenToken> AnswerDecoder::take(uint32_t token, const LogprobsWanted* logprobs) {
  const std::string_view bytes = tokenizer_.token_bytes(token);
  sampler_.accept(token);
  const TokenRole role = layout_.take(token);
  if (constraint_) {
    const Clock::time_point start = Clock::now();
    KIPP_TRY(constraint_->accept(token, bytes, role));
    if (!constraint_seconds_.empty()) constraint_seconds_.back() += seconds_since(start);
  }
  if (budget_) budget_->accept(bytes, role);
  TakenToken taken;
  if (std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end()) {
    taken.finish = FinishReason::stop_token;
    return taken;
  }
  std::vector<AddedTokenMark> marks;
  KIPP_ASSIGN(const bool stopped, output_.push(token, taken.text, &marks));
  // The layout's tags are added tokens: where the token's text begins is its mark's offset.
  layout_.report_starts(role, marks.empty() ? 0 : marks.back().offset, bytes.size(), taken.parts);
  if (stopped) taken.finish = FinishReason::stop_string;
  if (logprobs) taken.logprobs = logprobs_at_step(logprobs->row, token, logprobs->top, allowed_);
  return taken;
}

}  // namespace kipp
