#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>

namespace kipp {
namespace {

bool more_likely(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
}

}  // namespace

LogprobsAtStep logprobs_at_step(std::span<const float> logits, uint32_t chosen, uint32_t top,
                                const AllowedTokens* allowed) {
  const auto counted = [&](uint32_t id) { return !allowed || allowed->has(id); };
  float max = -INFINITY;
  for (uint32_t id = 0; id < logits.size(); ++id)
    if (counted(id)) max = std::max(max, logits[id]);
  double sum = 0;
  for (uint32_t id = 0; id < logits.size(); ++id)
    if (counted(id)) sum += std::exp(double(logits[id]) - max);
  const double log_normalizer = max + std::log(sum);

  LogprobsAtStep step;
  step.chosen = {chosen, float(logits[chosen] - log_normalizer)};
  top = std::min<uint32_t>(top, uint32_t(logits.size()));
  if (top == 0) return step;
  // The best `top` so far, kept sorted; a logit enters only if it beats the worst of them.
  std::vector<TokenLogprob>& best = step.top;
  best.reserve(top + 1);
  for (uint32_t id = 0; id < logits.size(); ++id) {
    if (!counted(id)) continue;
    const TokenLogprob candidate{id, logits[id]};
    if (best.size() == top && !more_likely(candidate, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), candidate, more_likely), candidate);
    if (best.size() > top) best.pop_back();
  }
  for (TokenLogprob& entry : best) entry.logprob = float(entry.logprob - log_normalizer);
  return step;
}

}  // namespace kipp
