#include "engine/answer_layout.h"

namespace kipp {

AnswerStart chat_answer_start(Variant variant, bool enable_thinking) {
  switch (variant) {
    case Variant::instruct: return enable_thinking ? AnswerStart::maybe_think : AnswerStart::at_once;
    case Variant::thinking_2507: return AnswerStart::after_think;
    default: return AnswerStart::at_once;
  }
}

Result<uint32_t> find_added_token(const Tokenizer& tokenizer, const std::string& text, std::string_view without) {
  KIPP_ASSIGN(const std::vector<TokenId> ids, tokenizer.encode(text));
  if (ids.size() != 1 || tokenizer.is_normal(ids[0]))
    return fail("the tokenizer has no single added token for ", text, ": ", without);
  return ids[0];
}

Result<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer) {
  constexpr std::string_view without = "thinking cannot be told apart from the answer";
  ThinkTokens think;
  KIPP_ASSIGN(think.open, find_added_token(tokenizer, "<think>", without));
  KIPP_ASSIGN(think.close, find_added_token(tokenizer, "</think>", without));
  return think;
}

AnswerLayout::AnswerLayout(AnswerStart start, ThinkTokens think)
    : think_(think),
      starts_in_thought_(start == AnswerStart::after_think),
      phase_(start == AnswerStart::at_once ? Phase::answer
             : starts_in_thought_          ? Phase::thought
                                           : Phase::opening) {}

TokenRole AnswerLayout::take(uint32_t token) {
  ++taken_;
  switch (phase_) {
    case Phase::opening:
      if (token == think_.open) {
        phase_ = Phase::thought;
        return TokenRole::opens_thought;
      }
      phase_ = Phase::answer;
      return TokenRole::answer;
    case Phase::thought:
      if (token == think_.close) {
        phase_ = Phase::answer;
        return TokenRole::closes_thought;
      }
      ++thought_tokens_;
      return TokenRole::thought;
    case Phase::answer: return TokenRole::answer;
  }
  return TokenRole::answer;
}

void AnswerLayout::report_starts(TokenRole role, size_t offset, size_t bytes, std::vector<PartStart>& starts) const {
  if (taken_ == 1 && starts_in_thought_) starts.push_back({.offset = 0, .tag_bytes = 0, .thought = true});
  if (role == TokenRole::opens_thought || role == TokenRole::closes_thought)
    starts.push_back({.offset = offset, .tag_bytes = bytes, .thought = role == TokenRole::opens_thought});
}

AnswerLayout answer_layout(AnswerStart start, const Result<ThinkTokens>& think) {
  return think ? AnswerLayout(start, *think) : AnswerLayout(AnswerStart::at_once, ThinkTokens{});
}

}  // namespace kipp
