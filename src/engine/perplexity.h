// Perplexity of a token sequence: the sequence is cut into consecutive windows of `window`
// tokens, each evaluated from an empty cache, and every token of a window after its first is
// scored by the log-probability the model gave it (log-softmax over the tokenizer's ids, in
// double). Perplexity is exp of the mean negative log-likelihood over all scored tokens.
#pragma once

#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "util/error.h"

namespace kipp {

struct PerplexityResult {
  double perplexity = 0;
  double mean_nll = 0;  // nats per scored token
  uint64_t scored = 0;  // tokens scored (each window's first is context only)
  uint32_t windows = 0;
  double seconds = 0;  // evaluation time
};

// `vocab` is the number of real token ids (rows past it in the logits are padding).
Result<PerplexityResult> perplexity(BackendModel& model, std::span<const uint32_t> tokens, uint32_t window,
                                    uint32_t vocab);

}  // namespace kipp
