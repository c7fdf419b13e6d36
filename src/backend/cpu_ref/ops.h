// The scalar operations of the cpu-ref oracle, one function per step of the Qwen3 forward pass.
// FP32 activations, weights widened from their stored format while computing, and sequential FP32
// accumulation in index order, so every result is reproducible and easy to check by hand.
// What this does not own: model state, KV storage, threading (there is none here).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/weights.h"

namespace kipp::cpu_ref {

// out = x / sqrt(mean(x^2) + eps) * weight, over n elements (out may alias x).
void rms_norm(const float* x, const float* weight, size_t n, float eps, float* out);

// out[r] = sum_c W[r][c] * x[c] for every row r of W (any WeightFormat), accumulating in column order.
void matvec(const WeightView& w, const float* x, float* out);

// One weight row widened to FP32 (the embedding lookup). Widths are multiples of 32, as in
// every Qwen3 tensor.
void widen_row(const WeightView& w, uint64_t row, float* out);

// NeoX-style rotary embedding of one head in place: element i pairs with i + head_dim/2 and both
// rotate by position * theta^(-2i/head_dim). Angles are computed in double precision.
void rope_neox(float* head, size_t head_dim, uint32_t position, float theta);

// In-place softmax over n values (max-subtracted, sequential sum).
void softmax(float* x, size_t n);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void silu_mul(const float* gate, const float* up, size_t n, float* out);

}  // namespace kipp::cpu_ref
