// Step 8 of a MoE layer in the fast CPU backend, over a pass of tokens. cpu-ref's mix_experts is
// the definition; this computes the same, arranged for the weights' sake: the router's logits
// for every token, their softmax and the choice (expert_routing.h), then the tokens grouped by
// expert, so that each chosen expert's matrices are read once for all the tokens that chose it
// (in decode, only the 8 chosen experts are read at all). Gate and up run on the same thread's
// rows in one pass, as the dense MLP's do. A token's result never depends on what else is in the
// pass: its rows go through the same kernels, which give each row the same bits in any batch, and
// its experts' outputs are added in rank order from zero, as in cpu-ref.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/activations.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/thread_pool.h"
#include "backend/expert_routing.h"
#include "registry/registry.h"

namespace kipp::cpu {

class ExpertMixer {
 public:
  ExpertMixer(const Checkpoint& checkpoint, ThreadPool& pool, const Kernels& kernels, bool int8_activations,
              uint32_t max_tokens);

  // Rows 0..tokens-1 of `out` get the mixture of the experts each row of `x_norm` chooses.
  void mix(const PackedLayer& layer, const Activations& x_norm, uint32_t tokens, Activations& out);

  // What token t of the last mix chose, in rank order, and its routing margin.
  std::span<const ExpertChoice> choice(uint32_t t) const {
    return std::span(choices_).subspan(size_t(t) * per_token_, per_token_);
  }
  float margin(uint32_t t) const { return margins_[t]; }

 private:
  // The rows of the gathered matrices that hold one expert's tokens; first is a multiple of
  // kPlaneTokens, where a group of the tile sets' activation planes begins.
  struct Segment {
    uint32_t expert, first, count;
  };

  void choose(const PackedLayer& layer, const Activations& x_norm, uint32_t tokens);
  void gather(const PackedLayer& layer, const Activations& x_norm, uint32_t tokens);
  void run_experts(const PackedLayer& layer);
  // Never x rounded to BF16 (--bf16-activations is refused for a mixture of experts, forward.cpp).
  ActivationForm form(const PackedMatrix& weight) const {
    return activation_form(weight.format, int8_activations_, false);
  }

  ThreadPool& pool_;
  const Kernels& kernels_;
  const bool int8_activations_;
  const uint32_t experts_, per_token_, hidden_, expert_ffn_;
  Activations router_;                       // [tokens, experts]: logits, then probabilities
  std::vector<ExpertChoice> choices_;        // [tokens, per_token]
  std::vector<float> margins_;               // [tokens]
  std::vector<uint32_t> counts_, next_row_;  // per expert: its tokens, and gather's next free row
  std::vector<Segment> segments_;
  std::vector<uint32_t> gathered_row_;   // [tokens, per_token]: the row of expert_in_ holding that choice
  Activations expert_in_;                // the tokens' normed rows, grouped by expert
  Activations expert_gate_, expert_up_;  // each gathered row's SwiGLU, [rows, expert_ffn]
  Activations expert_out_;               // [tokens * per_token, hidden]: each choice's down projection
  std::vector<float*> down_rows_;        // gathered row -> its row of expert_out_
};

}  // namespace kipp::cpu
