// Which experts a token of a MoE layer goes to, and with what weights: the part of step 8 that
// every backend must decide alike (../shared/REVIEW-QWEN3-MOE.md, points 4 and 5). A backend
// computes the router's softmax its own way; the choice made from those probabilities is this one.
#pragma once

#include <cstdint>
#include <span>

namespace kipp {

struct ExpertChoice {
  uint32_t expert = 0;
  float weight = 0.0f;  // the expert's probability over the sum of the chosen ones
};

// The chosen.size() experts of largest probability, in rank order (largest first; of equal
// probabilities the lower id first: Kipp's rule, and an exact tie is a near-tie that gates count),
// each weighted by its probability divided by the sum of the chosen probabilities (summed in rank
// order in FP32): transformers' topk followed by norm_topk_prob.
void choose_experts(std::span<const float> probabilities, std::span<ExpertChoice> chosen);

}  // namespace kipp
