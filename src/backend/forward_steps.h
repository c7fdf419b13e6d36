// The named intermediates of the Qwen3 forward pass: the values every backend and the NumPy oracle
// (tests/reference/qwen3_reference.py, which spells the same names in the same order) can hand to a
// recorder, so that two runs are compared step by step and the first place they part is named
// (`kipp logits --dump-steps`, tests/reference/first_divergence.py). Recording is for diagnosis:
// a backend copies the values out after the step, and nothing it computes changes.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace kipp {

// In the order a token meets them. Layer steps repeat per layer; the others happen once.
enum class ForwardStep : uint8_t {
  embedding,      // the token's embedding row, widened: [hidden]
  attn_norm,      // the layer's input after the attention RMSNorm: [hidden]
  q_rope,         // the query heads after the per-head norm and RoPE: [q_heads x head_dim]
  k_rope,         // the key heads after the per-head norm and RoPE, before the cache rounds them: [kv_width]
  attention,      // softmax(q k^T / sqrt(d)) v per query head, before the output projection: [q_heads x head_dim]
  attn_residual,  // the residual stream after the attention block's projection is added: [hidden]
  ffn_norm,       // that stream after the FFN RMSNorm: [hidden]
  // MoE layers only: the router's choice, the chosen experts' ids in rank order, then their
  // renormalised weights, then the routing margin (expert_routing.h): [2 x experts per token + 1]
  // (ids as exact floats)
  experts,
  ffn_out,  // down(silu(gate) * up), or in a MoE layer the weighted sum of the chosen experts', before it is added: [hidden]
  residual,    // the residual stream leaving the layer: [hidden]
  final_norm,  // the last layer's output after the final RMSNorm: [hidden]
  logits,      // the output head: [vocab]
};

inline constexpr std::array<std::string_view, 12> kForwardStepNames = {"embedding", "attn_norm",  "q_rope",
                                                                       "k_rope",    "attention",  "attn_residual",
                                                                       "ffn_norm",  "experts",    "ffn_out",
                                                                       "residual",  "final_norm", "logits"};

inline std::string_view forward_step_name(ForwardStep step) { return kForwardStepNames[size_t(step)]; }

// Whether a step happens in every layer (the others have no layer).
inline bool is_layer_step(ForwardStep step) {
  return step != ForwardStep::embedding && step != ForwardStep::final_norm && step != ForwardStep::logits;
}

// Receives the values of a step for one token. `layer` is 0 for steps outside the layers;
// `position` is the token's position in its sequence. Called from the thread that called eval.
class StepRecorder {
 public:
  virtual ~StepRecorder() = default;
  virtual void record(ForwardStep step, uint32_t layer, uint32_t position, std::span<const float> values) = 0;
};

}  // namespace kipp
