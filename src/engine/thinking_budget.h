// A limit on how many tokens an answer may spend thinking. Once the budget is spent and the
// think block is still open, the budget names the tokens that close it, one per step, instead of
// letting the sampler choose: a newline (unless the thought just ended one), </think>, and the
// "\n\n" the chat template puts between a thought and its answer. Then the answer begins, so a
// client gets an answer within its budget instead of a cut-off thought. The forced text is the
// template's own shape (`<think>\n…\n</think>\n\n`), so the turn renders back as the model would
// have written it. Under a grammar the grammar decides what follows </think>, so the separator is
// left to it.
//
// Whether the answer is thinking, and how many tokens it has spent there, is the AnswerLayout's to
// say: the budget counts from the first token inside the block, and an answer that never opens
// one (thinking off, or a hybrid answer that starts without <think>) is never touched.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/answer_layout.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

// The tokens a budget forces, looked up once per tokenizer.
struct ThinkClosing {
  ThinkTokens think;
  std::vector<uint32_t> newline;    // "\n", before </think> when the thought did not end one
  std::vector<uint32_t> separator;  // "\n\n", after </think>
};
// An error when the tokenizer has no <think>/</think> added tokens.
Result<ThinkClosing> find_think_closing(const Tokenizer& tokenizer);

class ThinkingBudget {
 public:
  // `separator`: whether to force the template's "\n\n" after </think> (false under a grammar).
  ThinkingBudget(uint32_t budget, ThinkClosing closing, bool separator);

  // The token that must come next in the answer laid out so far, when the budget decides it.
  std::optional<uint32_t> forced(const AnswerLayout& layout);
  // Takes the token that came (forced or sampled), with its bytes and its role in the layout.
  void accept(std::string_view bytes, TokenRole role);
  // Whether the budget closed the think block (rather than the model).
  bool closed_it() const { return !closing_tokens_.empty(); }

 private:
  const uint32_t budget_;
  const ThinkClosing closing_;
  const bool separator_;
  bool ended_newline_ = true;             // the thought so far ends with "\n" (the prompt's "<think>\n")
  std::vector<uint32_t> closing_tokens_;  // once the budget is spent: the tokens that close the block
  size_t forced_ = 0;                     // of them, the ones taken
};

}  // namespace kipp
