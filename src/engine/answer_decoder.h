// One answer's token step, the same for the CLI's generator and the server's scheduler: a row of
// logits becomes the next token (the one a spent thinking budget names, else a sample from the
// tokens the constraint allows), the answer's layout takes that token, and so do the sampler's
// penalties, the constraint and the budget (each told the token's role in the layout); the stop
// tokens and stop strings are checked, and the text that became final is released with where the
// layout changes in it. What drives the steps (one session or a batch of them, drafts, max_tokens,
// cancellation, timing) stays with the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/answer_layout.h"
#include "engine/logprobs.h"
#include "engine/output_text.h"
#include "engine/sampler.h"
#include "engine/thinking_budget.h"
#include "engine/token_constraint.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

enum class FinishReason {
  stop_token,   // the model produced one of the checkpoint's stop tokens
  stop_string,  // the text reached one of the request's stop strings
  length,       // max_tokens, or the session's capacity
  cancelled,    // the caller said so (Ctrl-C in `kipp chat`, a client gone)
};
std::string_view finish_reason_name(FinishReason reason);

// Log-probabilities wanted for a token: from the row it was chosen from, with the `top` likeliest.
struct LogprobsWanted {
  std::span<const float> row;
  uint32_t top = 0;
};

// What taking one token did.
struct TakenToken {
  std::string text;                        // the text that became final with it
  std::vector<PartStart> parts;            // where the answer's layout changes with it
  std::optional<FinishReason> finish;      // stop_token or stop_string: nothing more may be taken
  std::optional<LogprobsAtStep> logprobs;  // when wanted, for a token that is not a stop token
};

class AnswerDecoder {
 public:
  AnswerDecoder(const Tokenizer& tokenizer, std::span<const uint32_t> stop_ids, Sampler sampler,
                std::vector<std::string> stop_strings, AnswerLayout layout,
                std::optional<TokenConstraint> constraint = std::nullopt,
                std::optional<ThinkingBudget> budget = std::nullopt);

  // The next token for a row of logits. Under a constraint, the seconds spent finding the allowed
  // set open a new entry of constraint_seconds().
  Result<uint32_t> choose(std::span<const float> row);
  // Takes the token choose() gave (or a draft token that equals it). Under a constraint, the
  // seconds the grammar spends taking it are added to the last entry of constraint_seconds().
  Result<TakenToken> take(uint32_t token, const LogprobsWanted* logprobs = nullptr);
  // The end for another reason (length, cancelled, a stop token): appends the text held back for
  // a stop string that may have begun; true when it completes one after all.
  bool finish(std::string& released) { return output_.finish(released); }
  // The stop string that matched.
  const std::string& matched_stop() const { return output_.matched(); }
  // Per chosen token under a constraint: the seconds spent finding its allowed set and taking it
  // into the grammar (the mask's cost; applying it is part of sampling).
  const std::vector<double>& constraint_seconds() const { return constraint_seconds_; }

 private:
  const Tokenizer& tokenizer_;
  std::vector<uint32_t> stop_ids_;
  Sampler sampler_;
  OutputText output_;
  AnswerLayout layout_;
  std::optional<TokenConstraint> constraint_;
  std::optional<ThinkingBudget> budget_;
  // The set the last sampled token came from, for its logprobs; null when nothing constrained it
  // (a budget forces tokens only while the reasoning runs free).
  const AllowedTokens* allowed_ = nullptr;
  std::vector<double> constraint_seconds_;
};

}  // namespace kipp
