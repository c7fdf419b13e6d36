// Log-probabilities of generated tokens, as the OpenAI API reports them: a numerically stable
// log-softmax of the model's raw logits (before logit_bias, penalties or temperature), for the
// chosen token and for the `top` most likely ones. Under a constraint they are of the constrained
// distribution: the softmax over the allowed tokens only, the others left out of `top`.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/token_constraint.h"

namespace kipp {

struct TokenLogprob {
  uint32_t token = 0;
  float logprob = 0;
};

struct LogprobsAtStep {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // most likely first; equal values by id
};

// `top` (at most 20 in the API) alternatives are found by one pass that keeps the best few, not by
// sorting the vocabulary.
LogprobsAtStep logprobs_at_step(std::span<const float> logits, uint32_t chosen, uint32_t top,
                                const AllowedTokens* allowed = nullptr);

}  // namespace kipp
