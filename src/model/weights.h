// The explicit per-layer weight struct: named views into the read-only mapping, bound once at
// load after every tensor's name, type and shape was checked. Nothing here owns or copies data.
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/gguf_reader.h"
#include "model/artifact_layout.h"
#include "util/error.h"

namespace kipp {

enum class WeightFormat { f32, bf16, q8_0, affine4 };

struct WeightView {
  const uint8_t* data = nullptr;
  WeightFormat format = WeightFormat::f32;
  uint64_t rows = 0;  // output features (1 for a vector)
  uint64_t cols = 0;  // input features, contiguous
  uint64_t bytes = 0;
  uint64_t experts = 0;  // a stack of this many [rows, cols] matrices; 0: one matrix

  // Expert e's matrix of a stack (whose blocks never straddle two experts: cols is a multiple of 32).
  WeightView expert(uint64_t e) const {
    const uint64_t each = bytes / experts;
    return WeightView{data + e * each, format, rows, cols, each, 0};
  }
};

struct LayerWeights {
  WeightView attn_norm;    // [hidden] RMSNorm before attention
  WeightView attn_q;       // [q_heads*128, hidden]
  WeightView attn_k;       // [8*128, hidden]
  WeightView attn_v;       // [8*128, hidden]
  WeightView attn_q_norm;  // [128] per-head RMSNorm of Q
  WeightView attn_k_norm;  // [128] per-head RMSNorm of K
  WeightView attn_output;  // [hidden, q_heads*128]
  WeightView ffn_norm;     // [hidden] RMSNorm before the feed-forward block
  // dense: one SwiGLU MLP
  WeightView ffn_gate;  // [ffn, hidden]
  WeightView ffn_up;    // [ffn, hidden]
  WeightView ffn_down;  // [hidden, ffn]
  // moe: the router and the experts' SwiGLU MLPs
  WeightView ffn_gate_inp;   // [experts, hidden] F32
  WeightView ffn_gate_exps;  // experts x [expert_ffn, hidden]
  WeightView ffn_up_exps;    // experts x [expert_ffn, hidden]
  WeightView ffn_down_exps;  // experts x [hidden, expert_ffn]
};

struct ModelWeights {
  WeightView token_embedding;  // [vocab, hidden] BF16
  std::vector<LayerWeights> layers;
  WeightView output_norm;          // [hidden]
  WeightView lm_head;              // [vocab, hidden]: the token embedding itself when tied
  uint32_t experts_per_token = 0;  // how many experts of each stack a token reads (moe)
};

// Bytes of weights one decode step reads: every layer tensor (of a stack of experts, the share
// of the experts a token uses), the output norm and head, and one row of the token embedding.
// Divided into a memory bandwidth, this is the decode roofline.
uint64_t weight_bytes_per_token(const ModelWeights& weights);

// Checks the tensor directory against the entry (exact set, types, shapes) and binds views.
Result<ModelWeights> bind_weights(const gguf::File& file, const Checkpoint& checkpoint, QuantScheme scheme,
                                  HeadScheme head = HeadScheme::bf16);

}  // namespace kipp
