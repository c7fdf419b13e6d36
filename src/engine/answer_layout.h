// The layout of one chat answer, followed token by token: an optional think block (between the
// <think> and </think> added tokens), then the answer proper. Qwen3 answers open in one of three
// ways, decided by the checkpoint's template (AnswerStart). The decoder feeds every token it takes
// to one AnswerLayout; the constraint (where the grammar starts), the thinking budget (what it
// counts and when it closes the block) and the split of reasoning from content (the PartStarts
// the decoder reports) all consult it instead of following the tags themselves.
#pragma once

#include <cstddef>
#include <cstdint>
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

// The added tokens that open and close the reasoning (<think>, </think>).
struct ThinkTokens {
  uint32_t open = 0;
  uint32_t close = 0;
};
// Looks them up in the tokenizer; an error when it has no such single tokens.
Result<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer);
// The id of the added token spelled `text`; an error, saying what cannot be done without it
// (`without`), when the tokenizer has no such single added token.
Result<uint32_t> find_added_token(const Tokenizer& tokenizer, const std::string& text, std::string_view without);

// What a token was in the answer's layout.
enum class TokenRole {
  opens_thought,   // the <think> that opened the block
  thought,         // a token inside the block
  closes_thought,  // the </think> that closed it
  answer,          // a token of the answer proper (a <think> there is only text)
};

// Where the reasoning or the answer proper begins in the answer's text: at `offset`, after
// `tag_bytes` of the tag that opened it (its text is part of neither).
struct PartStart {
  size_t offset = 0;
  size_t tag_bytes = 0;
  bool thought = false;  // the reasoning begins (else the answer proper)

  bool operator==(const PartStart&) const = default;
};

class AnswerLayout {
 public:
  AnswerLayout(AnswerStart start, ThinkTokens think);

  // The next token may open the think block: the first one of a hybrid answer that thinks.
  bool may_open_thought() const { return phase_ == Phase::opening; }
  // The next token is inside the think block.
  bool in_thought() const { return phase_ == Phase::thought; }
  // Tokens taken inside the block so far, its tags not counted.
  uint32_t thought_tokens() const { return thought_tokens_; }
  const ThinkTokens& think() const { return think_; }

  // Takes the next token.
  TokenRole take(uint32_t token);
  // Appends where the token just taken (with `role`; its text at `offset` in the answer, `bytes`
  // long) begins the reasoning or the answer proper: the first token of an answer whose prompt
  // opened the block begins the reasoning, and the block's tags begin each part.
  void report_starts(TokenRole role, size_t offset, size_t bytes, std::vector<PartStart>& starts) const;

 private:
  enum class Phase { opening, thought, answer };

  const ThinkTokens think_;
  const bool starts_in_thought_;
  Phase phase_;
  uint32_t taken_ = 0;
  uint32_t thought_tokens_ = 0;
};

// The layout of an answer that starts as `start`, in a tokenizer whose think tokens are `think`:
// without them (a tokenizer that cannot think) nothing is a think block, as for at_once.
AnswerLayout answer_layout(AnswerStart start, const Result<ThinkTokens>& think);

}  // namespace kipp
