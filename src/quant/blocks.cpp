#include "quant/blocks.h"

#include <algorithm>
#include <cmath>

#include "quant/float_formats.h"

namespace kipp {

BlockQ8_0 quantize_q8_0(const float* values) {
  float amax = 0.0f;
  for (size_t i = 0; i < kBlockSize; ++i) amax = std::max(amax, std::fabs(values[i]));
  BlockQ8_0 block{};
  block.scale_fp16 = f32_to_fp16(amax / 127.0f);
  const float scale = fp16_to_f32(block.scale_fp16);
  const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (size_t i = 0; i < kBlockSize; ++i) {
    float q = std::nearbyint(values[i] * inverse);
    block.q[i] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
  return block;
}

BlockAffine4 quantize_affine4(const float* values) {
  float lo = values[0], hi = values[0];
  for (size_t i = 1; i < kBlockSize; ++i) {
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
  }
  BlockAffine4 block{};
  block.scale_fp16 = f32_to_fp16((hi - lo) / 15.0f);
  block.min_fp16 = f32_to_fp16(lo);
  const float scale = fp16_to_f32(block.scale_fp16);
  const float min = fp16_to_f32(block.min_fp16);
  const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
  uint8_t q[kBlockSize];
  for (size_t i = 0; i < kBlockSize; ++i) {
    float level = std::nearbyint((values[i] - min) * inverse);
    q[i] = static_cast<uint8_t>(std::clamp(level, 0.0f, 15.0f));
  }
  for (size_t j = 0; j < kBlockSize / 2; ++j)
    block.nibbles[j] = static_cast<uint8_t>(q[j] | (q[j + kBlockSize / 2] << 4));
  return block;
}

void dequantize_q8_0(const BlockQ8_0& block, float* out) {
  const float scale = fp16_to_f32(block.scale_fp16);
  for (size_t i = 0; i < kBlockSize; ++i) out[i] = scale * static_cast<float>(block.q[i]);
}

void dequantize_affine4(const BlockAffine4& block, float* out) {
  const float scale = fp16_to_f32(block.scale_fp16);
  const float min = fp16_to_f32(block.min_fp16);
  for (size_t j = 0; j < kBlockSize / 2; ++j) {
    out[j] = scale * static_cast<float>(block.nibbles[j] & 15) + min;
    out[j + kBlockSize / 2] = scale * static_cast<float>(block.nibbles[j] >> 4) + min;
  }
}

}  // namespace kipp
