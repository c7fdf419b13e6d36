// A grammar applied to one answer, token by token: which tokens may come next, and the grammar's
// state after each one taken.
//
// Where thinking is on, the reasoning is free and the grammar starts after </think>:
//   - at_once: no thinking (thinking off, or a checkpoint that does not think): the first token;
//   - after_think: the prompt opened <think> already (thinking-2507): free until </think>;
//   - maybe_think: a hybrid checkpoint thinking: the first token may be <think> (then free until
//     </think>) or the grammar's first token.
// While the grammar runs, its tokens are allowed, plus the stop tokens once the text is a whole
// sentence (only they, when nothing can follow). Added tokens (<think>, <tool_call>, ...) are
// never part of constrained text.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

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

enum class ConstraintStart { at_once, after_think, maybe_think };

// Where a chat answer's constraint starts, from how the checkpoint's template opens the answer:
// hybrid checkpoints thinking (the model may open <think>), thinking-2507 (the prompt opened it),
// everything else at once (a raw completion is at_once too).
ConstraintStart chat_constraint_start(Variant variant, bool enable_thinking);

// The added tokens that open and close the reasoning (<think>, </think>).
struct ThinkTokens {
  uint32_t open = 0;
  uint32_t close = 0;
};
// Looks them up in the tokenizer; an error when it has no such single tokens.
Result<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer);

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<grammar::TokenMasks> masks, ConstraintStart start,
                  std::span<const uint32_t> stop_ids, ThinkTokens think);

  // The tokens allowed next, or null while the reasoning runs free. Valid until the next call.
  Result<const AllowedTokens*> allowed();
  // Takes the sampled token. A token the grammar refuses is an error (the sampler was given
  // the allowed set, so it means a caller skipped it).
  Status accept(uint32_t token, std::string_view bytes);

  bool constraining() const { return phase_ == Phase::grammar; }
  // The grammar's text so far is a whole sentence.
  bool complete() const;

 private:
  enum class Phase { first_token, reasoning, grammar };

  std::shared_ptr<grammar::TokenMasks> masks_;
  std::vector<uint32_t> stop_ids_;
  ThinkTokens think_;
  Phase phase_;
  grammar::StateId state_;
  AllowedTokens allowed_;
};

}  // namespace kipp
