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

namespace {

Result<TagTokens> find_tag_tokens(const Tokenizer& tokenizer, const std::string& open, const std::string& close,
                                  std::string_view without) {
  TagTokens tags;
  KIPP_ASSIGN(tags.open, find_added_token(tokenizer, open, without));
  KIPP_ASSIGN(tags.close, find_added_token(tokenizer, close, without));
  return tags;
}

}  // namespace

Result<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer) {
  return find_tag_tokens(tokenizer, "<think>", "</think>", "thinking cannot be told apart from the answer");
}

Result<CallTokens> find_call_tokens(const Tokenizer& tokenizer) {
  return find_tag_tokens(tokenizer, "<tool_call>", "</tool_call>", "tool calls cannot be told apart from text");
}

AnswerLayout::AnswerLayout(AnswerStart start, ThinkTokens think, std::optional<CallTokens> call)
    : think_(think),
      call_(call),
      starts_in_thought_(start == AnswerStart::after_think),
      phase_(start == AnswerStart::at_once ? Phase::answer
             : starts_in_thought_          ? Phase::thought
                                           : Phase::opening) {}

TokenRole AnswerLayout::take(uint32_t token) {
  ++taken_;
  call_change_.reset();
  switch (phase_) {
    case Phase::opening:
      if (token == think_.open) {
        phase_ = Phase::thought;
        return TokenRole::opens_thought;
      }
      phase_ = Phase::answer;
      call_change_ = take_call_tag(token);
      return TokenRole::answer;
    case Phase::thought:
      if (token == think_.close) {
        phase_ = Phase::answer;
        in_call_ = false;
        return TokenRole::closes_thought;
      }
      ++thought_tokens_;
      call_change_ = take_call_tag(token);
      return TokenRole::thought;
    case Phase::answer: call_change_ = take_call_tag(token); return TokenRole::answer;
  }
  return TokenRole::answer;
}

std::optional<PartStart::Part> AnswerLayout::take_call_tag(uint32_t token) {
  if (!call_) return std::nullopt;
  if (!in_call_ && token == call_->open) {
    in_call_ = true;
    return PartStart::Part::call;
  }
  if (in_call_ && token == call_->close) {
    in_call_ = false;
    return PartStart::Part::after_call;
  }
  return std::nullopt;
}

void AnswerLayout::report_starts(TokenRole role, size_t offset, size_t bytes, std::vector<PartStart>& starts) const {
  using Part = PartStart::Part;
  if (taken_ == 1 && starts_in_thought_) starts.push_back({.offset = 0, .tag_bytes = 0, .part = Part::thought});
  if (role == TokenRole::opens_thought) starts.push_back({.offset = offset, .tag_bytes = bytes, .part = Part::thought});
  if (role == TokenRole::closes_thought) starts.push_back({.offset = offset, .tag_bytes = bytes, .part = Part::answer});
  if (call_change_) starts.push_back({.offset = offset, .tag_bytes = bytes, .part = *call_change_});
}

AnswerLayout answer_layout(AnswerStart start, const Result<ThinkTokens>& think, const Result<CallTokens>& call) {
  const std::optional<CallTokens> calls = call ? std::optional(*call) : std::nullopt;
  return think ? AnswerLayout(start, *think, calls) : AnswerLayout(AnswerStart::at_once, ThinkTokens{}, calls);
}

}  // namespace kipp
