// q8_0 and affine4_gs32 blocks: byte layout, exact decode of what was encoded, error bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "quant/blocks.h"
#include "quant/float_formats.h"

namespace kipp {
namespace {

std::vector<float> random_block(std::mt19937& rng, float scale, float offset) {
  std::normal_distribution<float> normal(offset, scale);
  std::vector<float> values(kBlockSize);
  for (float& v : values) v = normal(rng);
  return values;
}

TEST(Q8_0, LayoutIsFp16ScaleThenInt8Values) {
  float values[kBlockSize];
  for (size_t i = 0; i < kBlockSize; ++i) values[i] = float(int(i) - 16) / 16.0f * 1.27f;  // |max| = 1.27
  const BlockQ8_0 block = quantize_q8_0(values);
  uint8_t bytes[34];
  std::memcpy(bytes, &block, 34);
  uint16_t scale;
  std::memcpy(&scale, bytes, 2);
  EXPECT_EQ(scale, f32_to_fp16(1.27f / 127.0f));
  EXPECT_EQ(int8_t(bytes[2]), -127);  // values[0] = -1.27 -> -127
  EXPECT_EQ(int8_t(bytes[2 + 16]), 0);
}

TEST(Q8_0, ErrorIsAtMostHalfAStep) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    auto values = random_block(rng, 0.02f * float(1 + trial % 50), 0.0f);
    const BlockQ8_0 block = quantize_q8_0(values.data());
    float decoded[kBlockSize];
    dequantize_q8_0(block, decoded);
    const float step = fp16_to_f32(block.scale_fp16);
    for (size_t i = 0; i < kBlockSize; ++i)
      ASSERT_LE(std::fabs(decoded[i] - values[i]), 0.5f * step * (1 + 1e-3f) + 1e-7f) << trial << " " << i;
  }
}

TEST(Q8_0, AllZeroBlockIsExact) {
  float zeros[kBlockSize] = {};
  float decoded[kBlockSize];
  dequantize_q8_0(quantize_q8_0(zeros), decoded);
  for (float v : decoded) EXPECT_EQ(v, 0.0f);
}

TEST(Affine4, LayoutPutsElementJLowAndJPlus16High) {
  float values[kBlockSize];
  for (size_t i = 0; i < kBlockSize; ++i) values[i] = float(i % 16);  // min 0, max 15: scale 1
  const BlockAffine4 block = quantize_affine4(values);
  EXPECT_EQ(fp16_to_f32(block.scale_fp16), 1.0f);
  EXPECT_EQ(fp16_to_f32(block.min_fp16), 0.0f);
  for (size_t j = 0; j < 16; ++j) {
    EXPECT_EQ(block.nibbles[j] & 15, j);              // element j
    EXPECT_EQ(block.nibbles[j] >> 4, (j + 16) % 16);  // element j + 16
  }
  float decoded[kBlockSize];
  dequantize_affine4(block, decoded);
  for (size_t i = 0; i < kBlockSize; ++i) EXPECT_EQ(decoded[i], values[i]);
}

TEST(Affine4, ErrorIsBoundedByHalfAStepPlusScaleRounding) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    auto values = random_block(rng, 0.05f, trial % 3 == 0 ? 0.3f : 0.0f);
    const float lo = *std::min_element(values.begin(), values.end());
    const float hi = *std::max_element(values.begin(), values.end());
    const BlockAffine4 block = quantize_affine4(values.data());
    float decoded[kBlockSize];
    dequantize_affine4(block, decoded);
    const float step = fp16_to_f32(block.scale_fp16);
    const float exact_step = (hi - lo) / 15.0f;
    // Half a step, plus what fp16 rounding of the min and of the step can shift at level 15.
    const float bound =
        0.5f * step + std::fabs(fp16_to_f32(block.min_fp16) - lo) + 15.0f * std::fabs(step - exact_step) + 1e-6f;
    for (size_t i = 0; i < kBlockSize; ++i) ASSERT_LE(std::fabs(decoded[i] - values[i]), bound) << trial << " " << i;
  }
}

TEST(Affine4, ConstantBlockDecodesToItsFp16Value) {
  float values[kBlockSize];
  std::fill(values, values + kBlockSize, 0.123f);
  float decoded[kBlockSize];
  dequantize_affine4(quantize_affine4(values), decoded);
  for (float v : decoded) EXPECT_EQ(v, fp16_to_f32(f32_to_fp16(0.123f)));
}

}  // namespace
}  // namespace kipp
