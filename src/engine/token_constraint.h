// A grammar applied to one answer, token by token: which tokens may come next, and the grammar's
// state after each one taken.
//
// Where thinking is on, the reasoning is free and the grammar starts after </think>. The answer's
// AnswerLayout says where that is: while it is in its think block nothing is constrained, and
// where it may still open one, <think> is allowed beside the grammar's first tokens.
// While the grammar runs, its tokens are allowed, plus the stop tokens once the text is a whole
// sentence (only they, when nothing can follow). Added tokens (<think>, <tool_call>, ...) are
// never part of constrained text.
//
// A frame puts the grammar between two added tokens (a forced tool call: <tool_call>, the call's
// JSON, </tool_call>): the open token is the only one allowed where the grammar would start, the
// close token takes the stop tokens' place at the sentence's end, and after it come the stop
// tokens, or, when the frame repeats (parallel calls), another open token and a fresh sentence.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/answer_layout.h"
#include "grammar/token_mask.h"
#include "registry/registry.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

// The tokens a sampler may choose from: the grammar's set and a few more.
struct AllowedTokens {
  std::shared_ptr<const grammar::TokenSet> set;  // may be null: only `extra`
  std::vector<uint32_t> extra;

  bool has(uint32_t id) const;
  size_t count() const;  // `extra` ids in `set` counted once
};

// The trie of the tokens constrained text is spelled with: the normal ones (added tokens never are).
std::shared_ptr<const grammar::TokenTrie> constrained_vocabulary(const Tokenizer& tokenizer);

struct TokenFrame {
  uint32_t open = 0;
  uint32_t close = 0;
  bool repeats = false;  // another framed sentence may follow the close token
};

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<grammar::TokenMasks> masks, std::span<const uint32_t> stop_ids,
                  std::optional<TokenFrame> frame = std::nullopt, uint64_t max_steps = kMaxStepsPerAnswer);

  // The tokens allowed next in the answer laid out so far, or null while the reasoning runs free.
  // Valid until the next call.
  Result<const AllowedTokens*> allowed(const AnswerLayout& layout);
  // Takes the sampled token, with its role in the layout: only the answer proper's tokens go to
  // the grammar. A token the grammar refuses is an error (the sampler was given the allowed set,
  // so it means a caller skipped it).
  Status accept(uint32_t token, std::string_view bytes, TokenRole role);

  // Matcher steps one answer may take in all. Each token set is bounded on its own
  // (TokenMasks::kMaxStepsPerSet); this bounds how long one answer can keep busy the thread that
  // advances the constraints, which in the server every other stream waits on. Past it, allowed()
  // and accept() fail over_limit. A few seconds of one core; random walks through every test and
  // JSONSchemaBench schema take at most ~0.75 M steps for 600 tokens.
  static constexpr uint64_t kMaxStepsPerAnswer = 20'000'000;

 private:
  // Framed, the grammar's part begins at its open token.
  enum class Phase { frame_open, grammar, after_frame };
  // Adds the matcher steps taken since `steps_before` to the answer's; an error past its limit.
  Status charge(uint64_t steps_before);

  std::shared_ptr<grammar::TokenMasks> masks_;
  std::vector<uint32_t> stop_ids_;
  std::optional<TokenFrame> frame_;
  Phase phase_;
  grammar::StateId state_;
  AllowedTokens allowed_;
  uint64_t steps_ = 0;
  uint64_t max_steps_;
};

}  // namespace kipp
