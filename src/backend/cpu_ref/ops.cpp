#include "backend/cpu_ref/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/kv_store.h"
#include "quant/blocks.h"
#include "quant/float_formats.h"

namespace kipp::cpu_ref {

void rms_norm(const float* x, const float* weight, size_t n, float eps, float* out) {
  float sum_of_squares = 0.0f;
  for (size_t i = 0; i < n; ++i) sum_of_squares += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum_of_squares / float(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

namespace {

// Widens the 32 weights of row `row` starting at column `col` (a multiple of 32) to FP32.
void widen_block(const WeightView& w, uint64_t row, uint64_t col, float* out) {
  const uint64_t index = row * w.cols + col;
  switch (w.format) {
    case WeightFormat::f32: std::memcpy(out, w.data + index * 4, kBlockSize * 4); return;
    case WeightFormat::bf16: {
      uint16_t bits[kBlockSize];
      std::memcpy(bits, w.data + index * 2, sizeof bits);
      for (size_t i = 0; i < kBlockSize; ++i) out[i] = bf16_to_f32(bits[i]);
      return;
    }
    case WeightFormat::q8_0: {
      BlockQ8_0 block;
      std::memcpy(&block, w.data + index / kBlockSize * sizeof block, sizeof block);
      dequantize_q8_0(block, out);
      return;
    }
    case WeightFormat::affine4: {
      BlockAffine4 block;
      std::memcpy(&block, w.data + index / kBlockSize * sizeof block, sizeof block);
      dequantize_affine4(block, out);
      return;
    }
  }
}

// Rows first .. first + kRows - 1 of W times x. Each output is one sum, column by column from the
// first; the rows are summed side by side only so that their independent sums overlap in the
// processor's pipeline, and each is the same sequence of roundings as if it were computed alone.
template <uint64_t kRows>
void matvec_rows(const WeightView& w, const float* x, uint64_t first, float* out) {
  float blocks[kRows][kBlockSize];
  float sums[kRows] = {};
  for (uint64_t col = 0; col < w.cols; col += kBlockSize) {
    for (uint64_t r = 0; r < kRows; ++r) widen_block(w, first + r, col, blocks[r]);
    for (size_t i = 0; i < kBlockSize; ++i) {
      // Unrolled, the sums stay in registers; rolled, GCC keeps them in memory.
#pragma GCC unroll 8
      for (uint64_t r = 0; r < kRows; ++r) sums[r] += blocks[r][i] * x[col + i];
    }
  }
  for (uint64_t r = 0; r < kRows; ++r) out[first + r] = sums[r];
}

}  // namespace

void widen_row(const WeightView& w, uint64_t row, float* out) {
  for (uint64_t col = 0; col < w.cols; col += kBlockSize) widen_block(w, row, col, out + col);
}

void matvec(const WeightView& w, const float* x, float* out) {
  constexpr uint64_t kRowGroup = 8;
  uint64_t first = 0;
  for (; first + kRowGroup <= w.rows; first += kRowGroup) matvec_rows<kRowGroup>(w, x, first, out);
  for (; first < w.rows; ++first) matvec_rows<1>(w, x, first, out);
}

void rope_cos_sin(uint32_t position, uint32_t head_dim, float theta, float* cos_sin) {
  const uint32_t half = head_dim / 2;
  for (uint32_t i = 0; i < half; ++i) {
    const double inverse_frequency = std::pow(double(theta), -2.0 * double(i) / double(head_dim));
    const double angle = double(position) * inverse_frequency;
    cos_sin[i] = float(std::cos(angle));
    cos_sin[half + i] = float(std::sin(angle));
  }
}

void rotate_heads(float* heads, uint32_t count, uint32_t head_dim, const float* cos_sin) {
  const uint32_t half = head_dim / 2;
  for (uint32_t h = 0; h < count; ++h) {
    float* head = heads + size_t(h) * head_dim;
    for (uint32_t i = 0; i < half; ++i) {
      const float a = head[i], b = head[i + half];
      head[i] = a * cos_sin[i] - b * cos_sin[half + i];
      head[i + half] = b * cos_sin[i] + a * cos_sin[half + i];
    }
  }
}

void softmax(float* x, size_t n) {
  float max = x[0];
  for (size_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  for (size_t i = 0; i < n; ++i) x[i] /= sum;
}

void silu_mul(const float* gate, const float* up, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void rms_norm_heads(float* heads, uint32_t count, uint32_t head_dim, const float* weight, float eps) {
  for (uint32_t h = 0; h < count; ++h) rms_norm(heads + h * head_dim, weight, head_dim, eps, heads + h * head_dim);
}

void attend_gqa(const float* q, uint32_t q_heads, uint32_t kv_heads, uint32_t head_dim, KvFormat format,
                std::span<const std::byte* const> keys, std::span<const std::byte* const> values, float* scores,
                float* out) {
  const uint32_t group = q_heads / kv_heads;
  const size_t positions = keys.size();
  const float scale = 1.0f / std::sqrt(float(head_dim));
  std::vector<float> row(head_dim);
  for (uint32_t h = 0; h < q_heads; ++h) {
    const float* query = q + h * head_dim;
    const uint32_t kv_offset = h / group * head_dim;
    for (size_t p = 0; p < positions; ++p) {
      widen_kv_values(format, keys[p], kv_offset, head_dim, row.data());
      float dot = 0.0f;
      for (uint32_t i = 0; i < head_dim; ++i) dot += query[i] * row[i];
      scores[p] = dot * scale;
    }
    softmax(scores, positions);
    float* head_out = out + h * head_dim;
    std::fill(head_out, head_out + head_dim, 0.0f);
    for (size_t p = 0; p < positions; ++p) {
      widen_kv_values(format, values[p], kv_offset, head_dim, row.data());
      for (uint32_t i = 0; i < head_dim; ++i) head_out[i] += scores[p] * row[i];
    }
  }
}

void add_in_place(float* x, const float* delta, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += delta[i];
}

}  // namespace kipp::cpu_ref
