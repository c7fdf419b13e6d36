#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>

namespace kipp {
namespace {

bool more_likely(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
}

}  // namespace

LogprobsAtStep logprobs_at_step(std::span<const float> logits, uint32_t chosen, uint32_t top) {
  float max = -INFINITY;
  for (float logit : logits) max = std::max(max, logit);
  double sum = 0;
  for (float logit : logits) sum += std::exp(double(logit) - max);
  const double log_normalizer = max + std::log(sum);

  LogprobsAtStep step;
  step.chosen = {chosen, float(logits[chosen] - log_normalizer)};
  top = std::min<uint32_t>(top, uint32_t(logits.size()));
  if (top == 0) return step;
  // The best `top` so far, kept sorted; a logit enters only if it beats the worst of them.
  std::vector<TokenLogprob>& best = step.top;
  best.reserve(top + 1);
  for (uint32_t id = 0; id < logits.size(); ++id) {
    const TokenLogprob candidate{id, logits[id]};
    if (best.size() == top && !more_likely(candidate, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), candidate, more_likely), candidate);
    if (best.size() > top) best.pop_back();
  }
  for (TokenLogprob& entry : best) entry.logprob = float(entry.logprob - log_normalizer);
  return step;
}

}  // namespace kipp
