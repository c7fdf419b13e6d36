// A limit on how many tokens an answer may spend thinking. Once the budget is spent and the
// think block is still open, the budget names the tokens that close it, one per step, instead of
// letting the sampler choose: a newline (unless the thought just ended one), </think>, and the
// "\n\n" the chat template puts between a thought and its answer. Then the answer begins, so a
// client gets an answer within its budget instead of a cut-off thought. The forced text is the
// template's own shape (`<think>\n…\n</think>\n\n`), so the turn renders back as the model would
// have written it. Under a grammar the grammar decides what follows </think>, so the separator is
// left to it.
//
// Where thinking starts follows AnswerStart: at_once never thinks (the budget does nothing);
// after_think starts inside the block (thinking-2507: the prompt opened it); maybe_think thinks
// only when the answer's first token is <think>. Tokens count from the first one inside the block.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/token_constraint.h"
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
  ThinkingBudget(uint32_t budget, AnswerStart start, ThinkClosing closing, bool separator);

  // The token that must come next, when the budget decides it.
  std::optional<uint32_t> forced() const;
  // Takes the token that came (forced or sampled), with its bytes.
  void accept(uint32_t token, std::string_view bytes);
  // Whether the budget closed the think block (rather than the model).
  bool closed_it() const { return closed_it_; }

 private:
  enum class Phase { first_token, thinking, closing, answering };
  void begin_closing();  // lays out the tokens that close the block

  const uint32_t budget_;
  const ThinkClosing closing_;
  const bool separator_;
  Phase phase_;
  uint32_t spent_ = 0;           // tokens taken inside the block
  bool ended_newline_ = true;    // the thought so far ends with "\n" (the prompt's "<think>\n")
  std::vector<uint32_t> queue_;  // closing: the tokens still to force, in order
  size_t next_ = 0;
  bool closed_it_ = false;
};

}  // namespace kipp
