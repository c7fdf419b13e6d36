// The layout of one chat answer, followed token by token: an optional think block (between the
// <think> and </think> added tokens), then the answer proper, with tool calls (between
// <tool_call> and </tool_call>) in either. Qwen3 answers open in one of three ways, decided by the
// checkpoint's template (AnswerStart). The decoder feeds every token it takes to one AnswerLayout;
// the constraint (where the grammar starts), the thinking budget (what it counts and when it
// closes the block), the tool-call extractor and the split of reasoning from content all consult
// it, the last two through the PartStarts the decoder reports with the text, instead of following
// the tags themselves. A tag is a tag only as its added token, in its place: the same characters
// spelled by ordinary tokens, a <tool_call> inside a call or a </tool_call> outside one are text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "registry/registry.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

enum class AnswerStart {
  at_once,      // no thinking: instruct-2507, base checkpoints, thinking off, a raw completion
  after_think,  // thinking-2507: the prompt opened <think>, the answer starts inside it
  maybe_think,  // a hybrid checkpoint thinking: the answer opens with <think> itself, or not at all
};

// A chat answer's start for the checkpoint's variant, with thinking on or off where it can be.
AnswerStart chat_answer_start(Variant variant, bool enable_thinking);

// The added tokens that open and close a part of an answer.
struct TagTokens {
  uint32_t open = 0;
  uint32_t close = 0;
};
using ThinkTokens = TagTokens;  // <think>, </think>
using CallTokens = TagTokens;   // <tool_call>, </tool_call>
// Look them up in the tokenizer; an error when it has no such single added tokens.
Result<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer);
Result<CallTokens> find_call_tokens(const Tokenizer& tokenizer);
// The id of the added token spelled `text`; an error, saying what cannot be done without it
// (`without`), when the tokenizer has no such single added token.
Result<uint32_t> find_added_token(const Tokenizer& tokenizer, const std::string& text, std::string_view without);

// What a token was in the answer's think block.
enum class TokenRole {
  opens_thought,   // the <think> that opened the block
  thought,         // a token inside the block
  closes_thought,  // the </think> that closed it
  answer,          // a token of the answer proper (a <think> there is only text)
};

// Where the answer's layout changes in its text: at `offset`, after the `tag_bytes` of the tag
// that changed it (the tag's text belongs to no part).
struct PartStart {
  enum class Part {
    thought,     // the reasoning begins
    answer,      // the answer proper begins
    call,        // a tool call begins
    after_call,  // the call ended: the part around it goes on
  };
  size_t offset = 0;
  size_t tag_bytes = 0;
  Part part = Part::answer;

  bool operator==(const PartStart&) const = default;
};

class AnswerLayout {
 public:
  // Without `call`, calls are not followed (a tokenizer without the call tokens).
  AnswerLayout(AnswerStart start, ThinkTokens think, std::optional<CallTokens> call = std::nullopt);

  // The next token may open the think block: the first one of a hybrid answer that thinks.
  bool may_open_thought() const { return phase_ == Phase::opening; }
  // The next token is inside the think block.
  bool in_thought() const { return phase_ == Phase::thought; }
  // Tokens taken inside the block so far, its tags not counted.
  uint32_t thought_tokens() const { return thought_tokens_; }
  const ThinkTokens& think() const { return think_; }

  // Takes the next token. A think tag inside a call ends the call unfinished.
  TokenRole take(uint32_t token);
  // Appends where the token just taken (with `role`; its text at `offset` in the answer, `bytes`
  // long) changes the layout: the first token of an answer whose prompt opened the block begins
  // the reasoning, and each tag in its place begins its part.
  void report_starts(TokenRole role, size_t offset, size_t bytes, std::vector<PartStart>& starts) const;

 private:
  enum class Phase { opening, thought, answer };
  // Follows the call tags: the part the token starts, if any.
  std::optional<PartStart::Part> take_call_tag(uint32_t token);

  const ThinkTokens think_;
  const std::optional<CallTokens> call_;
  const bool starts_in_thought_;
  Phase phase_;
  bool in_call_ = false;
  std::optional<PartStart::Part> call_change_;  // what the last token did to a call
  uint32_t taken_ = 0;
  uint32_t thought_tokens_ = 0;
};

// The layout of an answer that starts as `start`, in a tokenizer whose think and call tokens are
// these: without the think tokens (a tokenizer that cannot think) nothing is a think block, as for
// at_once; without the call tokens no call is followed.
AnswerLayout answer_layout(AnswerStart start, const Result<ThinkTokens>& think, const Result<CallTokens>& call);

}  // namespace kipp
