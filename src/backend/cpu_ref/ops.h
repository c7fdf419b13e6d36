// The scalar operations of the cpu-ref oracle, one function per step of the Qwen3 forward pass.
// FP32 activations, weights widened from their stored format while computing, and sequential FP32
// accumulation in index order, so every result is reproducible and easy to check by hand.
// What this does not own: model state, KV storage, threading (there is none here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "model/weights.h"

namespace kipp::cpu_ref {

// out = x / sqrt(mean(x^2) + eps) * weight, over n elements (out may alias x).
void rms_norm(const float* x, const float* weight, size_t n, float eps, float* out);

// out[r] = sum_c W[r][c] * x[c] for every row r of W (any WeightFormat), accumulating in column order.
void matvec(const WeightView& w, const float* x, float* out);

// One weight row widened to FP32 (the embedding lookup). Widths are multiples of 32, as in
// every Qwen3 tensor.
void widen_row(const WeightView& w, uint64_t row, float* out);

// RoPE, NeoX style, in two parts so that a token's angles are computed once for all its heads:
// cos_sin gets head_dim values, cos then sin of pair i's angle position * theta^(-2i/head_dim)
// (computed in double, rounded to FP32) at i and head_dim/2 + i; rotate_heads turns element i of
// each of `count` heads with element i + head_dim/2 by its pair's angle, in place.
void rope_cos_sin(uint32_t position, uint32_t head_dim, float theta, float* cos_sin);
void rotate_heads(float* heads, uint32_t count, uint32_t head_dim, const float* cos_sin);

// In-place softmax over n values (max-subtracted, sequential sum).
void softmax(float* x, size_t n);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void silu_mul(const float* gate, const float* up, size_t n, float* out);

// Q/K norm: RMSNorm of each of `count` heads of head_dim values in place, with one shared weight.
void rms_norm_heads(float* heads, uint32_t count, uint32_t head_dim, const float* weight, float eps);

// Causal grouped-query attention of one position's queries. Query head h (of q_heads, head_dim
// each) reads KV head h / (q_heads / kv_heads) of rows 0..keys.size()-1, each row holding
// kv_heads x head_dim values cached in `format` (backend/kv_store.h), widened exactly to FP32 as
// they are read. Scores are scaled by 1/sqrt(head_dim) and softmaxed in `scores` (keys.size()
// floats of scratch); out gets q_heads x head_dim values.
void attend_gqa(const float* q, uint32_t q_heads, uint32_t kv_heads, uint32_t head_dim, KvFormat format,
                std::span<const std::byte* const> keys, std::span<const std::byte* const> values, float* scores,
                float* out);

// The residual connection: x[i] += delta[i].
void add_in_place(float* x, const float* delta, size_t n);

}  // namespace kipp::cpu_ref
