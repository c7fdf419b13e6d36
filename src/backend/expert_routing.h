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
// order in FP32): transformers' topk followed by norm_topk_prob. Returns the routing margin:
// ln(p_k / p_k+1), the k-th chosen probability against the largest one left out (infinity when
// none is), by which a difference in routing between two engines is judged a near-tie or not.
float choose_experts(std::span<const float> probabilities, std::span<ExpertChoice> chosen);

// The values of the `experts` step (forward_steps.h) for one token's choice: the ids in rank
// order, their weights, the margin. `out` holds 2 x chosen.size() + 1 floats; returns it.
std::span<const float> choice_record(std::span<const ExpertChoice> chosen, float margin, std::span<float> out);

}  // namespace kipp
