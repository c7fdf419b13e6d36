#include "backend/expert_routing.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <limits>

#include "util/invariant.h"

namespace kipp {

float choose_experts(std::span<const float> probabilities, std::span<ExpertChoice> chosen) {
  std::bitset<256> taken;  // the registry's layers have 128 experts
  KIPP_INVARIANT(chosen.size() <= probabilities.size() && probabilities.size() <= taken.size());
  float sum = 0.0f;
  for (ExpertChoice& choice : chosen) {
    int best = -1;
    for (uint32_t e = 0; e < probabilities.size(); ++e) {
      if (taken[e]) continue;
      if (best < 0 || probabilities[e] > probabilities[size_t(best)]) best = int(e);
    }
    taken[size_t(best)] = true;
    choice = {uint32_t(best), probabilities[size_t(best)]};
    sum += choice.weight;
  }
  float last = chosen.empty() ? 0.0f : chosen.back().weight, next = -1.0f;
  for (uint32_t e = 0; e < probabilities.size(); ++e)
    if (!taken[e]) next = std::max(next, probabilities[e]);
  for (ExpertChoice& choice : chosen) choice.weight /= sum;
  return next < 0.0f ? std::numeric_limits<float>::infinity() : std::log(last / next);
}

std::span<const float> choice_record(std::span<const ExpertChoice> chosen, float margin, std::span<float> out) {
  KIPP_INVARIANT(out.size() == 2 * chosen.size() + 1);
  for (size_t r = 0; r < chosen.size(); ++r) {
    out[r] = float(chosen[r].expert);
    out[chosen.size() + r] = chosen[r].weight;
  }
  out.back() = margin;
  return out;
}

}  // namespace kipp
