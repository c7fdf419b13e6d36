// Turns one row of logits into the next token. One entry point for the CLI and the server.
//
// The order of operations, for every token:
//   0. Under a constraint (structured output), tokens outside the allowed set are removed: every
//      step below sees only the allowed ones, so probabilities are renormalized over them.
//   1. logit_bias is added to the listed ids.
//   2. Penalties over the last `penalty_window` generated tokens (not the prompt): a token seen
//      there has its logit divided by repetition_penalty when positive, multiplied when negative
//      (the Hugging Face rule), then lowered by frequency_penalty x its count and by
//      presence_penalty once (the OpenAI rule).
//   3. temperature 0: the highest logit wins (the lowest id among equals). Nothing below applies
//      and no random number is drawn.
//   4. top_k (0 = off) keeps the k highest logits.
//   5. The logits are divided by temperature and turned into probabilities (softmax).
//   6. top_p keeps the most probable tokens, in order, until their total reaches top_p.
//   7. min_p keeps the tokens whose probability is at least min_p x the highest one.
//   8. One draw from what is left, renormalized.
// Equal logits are ordered by id, and the random numbers come from a generator fixed by the
// seed alone, so the same logits, settings and seed give the same token on every run, machine
// and backend.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/random.h"
#include "engine/token_constraint.h"
#include "registry/registry.h"
#include "util/error.h"

namespace kipp {

struct LogitBias {
  uint32_t token;
  float bias;  // -100 .. 100
};

struct SamplingParams {
  float temperature = 1.0f;         // >= 0; 0 is greedy
  uint32_t top_k = 0;               // 0 keeps every token
  float top_p = 1.0f;               // (0, 1]
  float min_p = 0.0f;               // [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 is off
  float frequency_penalty = 0.0f;   // -2 .. 2
  float presence_penalty = 0.0f;    // -2 .. 2
  std::vector<LogitBias> logit_bias;
  std::vector<uint32_t> banned;  // never sampled, whatever the logits (tool_choice "none": <tool_call>)
  uint64_t seed = 0;
  uint32_t penalty_window = 64;  // generated tokens the penalties look at

  bool greedy() const { return temperature == 0.0f; }
};

// What the checkpoint's authors recommend for its variant (generation_config.json and the model
// cards): thinking (hybrid instruct, thinking-2507) temperature 0.6, top_p 0.95, top_k 20;
// instruct-2507 and base temperature 0.7, top_p 0.8, top_k 20. min_p 0 and no penalties in all.
SamplingParams recommended_sampling(Variant variant);

// Every setting checked against its range, the first bad one named with its value.
Status validate(const SamplingParams& params, uint32_t vocab);

class Sampler {
 public:
  // The settings are validated here; `vocab` is the width of the logit rows to come.
  static Result<Sampler> create(const SamplingParams& params, uint32_t vocab);

  // The next token for this row of logits (vocab values), given the tokens accepted so far, from
  // `allowed` only when it is given (it must not be empty). The row is not changed. NaN logits are
  // an error (a broken model, not a choice to make).
  Result<uint32_t> sample(std::span<const float> logits, const AllowedTokens* allowed = nullptr);

  // Records a generated token for the penalties.
  void accept(uint32_t token);
  // Forgets the generated tokens and restarts the random sequence from the seed.
  void reset();

  const SamplingParams& params() const { return params_; }

 private:
  Sampler(const SamplingParams& params, uint32_t vocab);
  Status check_row(std::span<const float> logits, const AllowedTokens* allowed) const;
  void adjust(std::span<const float> logits, const AllowedTokens* allowed);
  // Steps 3 to 8, over the candidates in order_ (weights relative to the highest candidate logit).
  Status gather_candidates(const AllowedTokens* allowed);
  bool keep_top_k();  // true when it sorted the candidates
  void keep_top_p(float max_logit, bool sorted);
  void keep_min_p(float max_logit);
  uint32_t draw(float max_logit);
  // Higher logit first, then lower id: the one order every step uses.
  bool before(uint32_t a, uint32_t b) const {
    return adjusted_[a] > adjusted_[b] || (adjusted_[a] == adjusted_[b] && a < b);
  }
  double weight(uint32_t id, float max_logit) const {
    return std::exp((double(adjusted_[id]) - max_logit) / double(params_.temperature));
  }

  SamplingParams params_;
  uint32_t vocab_;
  Random random_;
  std::vector<uint32_t> recent_;  // the last penalty_window accepted tokens, oldest first
  std::vector<uint32_t> counts_;  // per token: occurrences in recent_
  std::vector<float> adjusted_;   // the row after steps 1-2
  std::vector<uint32_t> order_;   // candidate ids
  std::vector<double> weights_;   // their probabilities
};

}  // namespace kipp
