#include "backend/expert_routing.h"

#include <bitset>

#include "util/invariant.h"

namespace kipp {

void choose_experts(std::span<const float> probabilities, std::span<ExpertChoice> chosen) {
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
  for (ExpertChoice& choice : chosen) choice.weight /= sum;
}

}  // namespace kipp
