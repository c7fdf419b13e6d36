// The cpu-ref scalar operations on hand-checkable values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu_ref/ops.h"
#include "quant/blocks.h"
#include "quant/float_formats.h"

namespace kipp::cpu_ref {
namespace {

WeightView view_of(const std::vector<uint8_t>& bytes, WeightFormat format, uint64_t rows, uint64_t cols) {
  return WeightView{bytes.data(), format, rows, cols, bytes.size()};
}

TEST(CpuRefOps, RmsNormScalesByTheRootMeanSquare) {
  const float x[4] = {1, 2, 3, 4};  // mean square 7.5
  const float weight[4] = {1, 1, 2, 0.5f};
  float out[4];
  rms_norm(x, weight, 4, 0.0f, out);
  const float scale = 1.0f / std::sqrt(7.5f);
  EXPECT_FLOAT_EQ(out[0], 1 * scale);
  EXPECT_FLOAT_EQ(out[2], 3 * scale * 2);
  EXPECT_FLOAT_EQ(out[3], 4 * scale * 0.5f);
  const float zeros[4] = {};
  rms_norm(zeros, weight, 4, 1e-6f, out);  // eps keeps an all-zero row finite
  EXPECT_EQ(out[1], 0.0f);
}

TEST(CpuRefOps, MatvecBf16IsExactOnSmallIntegers) {
  std::vector<uint8_t> bytes(2 * 64 * 2);
  std::vector<float> x(64);
  double expected[2] = {0, 0};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 64; ++c) {
      const float w = float((r + 1) * (c % 7) - 3);
      const uint16_t bits = f32_to_bf16(w);
      std::memcpy(bytes.data() + (r * 64 + c) * 2, &bits, 2);
      x[c] = float(c % 5);
      expected[r] += double(w) * x[c];
    }
  float out[2];
  matvec(view_of(bytes, WeightFormat::bf16, 2, 64), x.data(), out);
  EXPECT_EQ(out[0], float(expected[0]));
  EXPECT_EQ(out[1], float(expected[1]));
}

TEST(CpuRefOps, MatvecQ8_0DequantizesEachBlock) {
  BlockQ8_0 block{};
  block.scale_fp16 = f32_to_fp16(0.5f);
  for (int i = 0; i < 32; ++i) block.q[i] = int8_t(i - 16);  // values (i - 16) / 2
  std::vector<uint8_t> bytes(sizeof block);
  std::memcpy(bytes.data(), &block, sizeof block);
  std::vector<float> ones(32, 1.0f);
  float out;
  matvec(view_of(bytes, WeightFormat::q8_0, 1, 32), ones.data(), &out);
  EXPECT_EQ(out, -8.0f);  // sum over i of (i - 16) / 2
  float row[32];
  widen_row(view_of(bytes, WeightFormat::q8_0, 1, 32), 0, row);
  EXPECT_EQ(row[0], -8.0f);
  EXPECT_EQ(row[31], 7.5f);
}

TEST(CpuRefOps, MatvecAffine4UsesLowThenHighNibbles) {
  BlockAffine4 block{};
  block.scale_fp16 = f32_to_fp16(1.0f);
  block.min_fp16 = f32_to_fp16(-8.0f);
  for (int j = 0; j < 16; ++j) block.nibbles[j] = uint8_t(j | (15 << 4));  // elements 0..15 = j - 8, 16..31 = 7
  std::vector<uint8_t> bytes(sizeof block);
  std::memcpy(bytes.data(), &block, sizeof block);
  std::vector<float> x(32, 0.0f);
  x[3] = 1.0f;   // element 3 = -5
  x[20] = 2.0f;  // element 20 = 7
  float out;
  matvec(view_of(bytes, WeightFormat::affine4, 1, 32), x.data(), &out);
  EXPECT_EQ(out, -5.0f + 14.0f);
}

TEST(CpuRefOps, RopeRotatesElementIWithIPlusHalf) {
  float head[4] = {1, 2, 3, 4}, cos_sin[4];
  rope_cos_sin(0, 4, 1e6f, cos_sin);  // position 0: identity
  rotate_heads(head, 1, 4, cos_sin);
  EXPECT_EQ(head[0], 1.0f);
  EXPECT_EQ(head[3], 4.0f);
  rope_cos_sin(3, 4, 100.0f, cos_sin);  // pair (0, 2) turns by 3 rad; pair (1, 3) by 3 * 100^(-1/2) = 0.3 rad
  rotate_heads(head, 1, 4, cos_sin);
  EXPECT_NEAR(head[0], 1 * std::cos(3.0) - 3 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(head[2], 3 * std::cos(3.0) + 1 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(head[1], 2 * std::cos(0.3) - 4 * std::sin(0.3), 1e-6);
  EXPECT_NEAR(head[3], 4 * std::cos(0.3) + 2 * std::sin(0.3), 1e-6);
}

TEST(CpuRefOps, SoftmaxIsNormalizedAndStable) {
  float x[3] = {0.0f, std::log(2.0f), std::log(3.0f)};
  softmax(x, 3);
  EXPECT_NEAR(x[0], 1.0 / 6, 1e-7);
  EXPECT_NEAR(x[1], 2.0 / 6, 1e-7);
  EXPECT_NEAR(x[2], 3.0 / 6, 1e-7);
  float large[2] = {1000.0f, 1000.0f};  // exp(1000) would overflow without the max shift
  softmax(large, 2);
  EXPECT_EQ(large[0], 0.5f);
}

TEST(CpuRefOps, SiluGatesTheUpProjection) {
  const float gate[3] = {0.0f, 1.0f, -20.0f};
  const float up[3] = {5.0f, 2.0f, 1.0f};
  float out[3];
  silu_mul(gate, up, 3, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f / (1.0f + std::exp(-1.0f)));
  EXPECT_NEAR(out[2], -20.0 / (1.0 + std::exp(20.0)), 1e-12);
}

TEST(CpuRefOps, QkNormNormalizesEachHeadOnItsOwn) {
  float heads[8] = {1, 1, 1, 1, 10, -10, 10, -10};  // root mean squares 1 and 10
  const float weight[4] = {1, 2, 3, 4};
  rms_norm_heads(heads, 2, 4, weight, 0.0f);
  const float expected[8] = {1, 2, 3, 4, 1, -2, 3, -4};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(heads[i], expected[i]) << i;
}

TEST(CpuRefOps, RopeRotatesEveryHeadAlike) {
  float heads[8] = {1, 2, 3, 4, 1, 2, 3, 4};
  float single[4] = {1, 2, 3, 4}, cos_sin[4];
  rope_cos_sin(7, 4, 1e6f, cos_sin);
  rotate_heads(heads, 2, 4, cos_sin);
  rotate_heads(single, 1, 4, cos_sin);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(heads[i], single[i % 4]) << i;
}

// Rows of BF16 values for attention tests: `rows` rows of `width` values from value(row, column).
template <class F>
std::vector<std::vector<uint16_t>> bf16_rows(int rows, int width, F value) {
  std::vector<std::vector<uint16_t>> out(rows, std::vector<uint16_t>(width));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < width; ++c) out[r][c] = f32_to_bf16(value(r, c));
  return out;
}

std::vector<const std::byte*> pointers(const std::vector<std::vector<uint16_t>>& rows) {
  std::vector<const std::byte*> out;
  for (const auto& r : rows) out.push_back(reinterpret_cast<const std::byte*>(r.data()));
  return out;
}

TEST(CpuRefOps, AttentionWeighsValuesBySoftmaxOfScaledScores) {
  // One head of dimension 4 (scale 1/2) over two positions: scores 0 and 2 * 1 / 2 = 1.
  const float q[4] = {2, 0, 0, 0};
  const auto keys = bf16_rows(2, 4, [](int r, int c) { return r == 1 && c == 0 ? 1.0f : 0.0f; });
  const auto values = bf16_rows(2, 4, [](int r, int c) { return c == r ? 1.0f : 0.0f; });
  const auto k = pointers(keys), v = pointers(values);
  float scores[2], out[4];
  attend_gqa(q, 1, 1, 4, KvFormat::bf16, k, v, scores, out);
  const double e = std::exp(1.0);
  EXPECT_NEAR(out[0], 1 / (1 + e), 1e-7);
  EXPECT_NEAR(out[1], e / (1 + e), 1e-7);
  EXPECT_EQ(out[2], 0.0f);
  // Causal: with only the first position visible, its value comes through whole.
  attend_gqa(q, 1, 1, 4, KvFormat::bf16, std::span(k).first(1), std::span(v).first(1), scores, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
}

TEST(CpuRefOps, GroupedQueryHeadsReadTheirKvHead) {
  // Eight query heads over 8 / group KV heads; zero queries give uniform weights, so each head
  // returns the mean of its KV head's values over three positions: 10 * kv_head + 1.
  for (uint32_t group : {1u, 2u, 4u, 8u}) {
    const uint32_t kv_heads = 8 / group, dim = 4;
    const std::vector<float> q(8 * dim, 0.0f);
    const auto keys = bf16_rows(3, kv_heads * dim, [](int r, int c) { return float(r - c % 3); });
    const auto values = bf16_rows(3, kv_heads * dim, [](int r, int c) { return float(10 * (c / 4) + r); });
    const auto k = pointers(keys), v = pointers(values);
    float scores[3];
    std::vector<float> out(8 * dim);
    attend_gqa(q.data(), 8, kv_heads, dim, KvFormat::bf16, k, v, scores, out.data());
    for (uint32_t h = 0; h < 8; ++h)
      EXPECT_FLOAT_EQ(out[h * dim + 2], float(10 * (h / group) + 1)) << "group " << group << " head " << h;
  }
}

TEST(CpuRefOps, ResidualAddsInPlace) {
  float x[3] = {1, -2, 0.5f};
  const float delta[3] = {0.25f, 2, -0.5f};
  add_in_place(x, delta, 3);
  EXPECT_EQ(x[0], 1.25f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[2], 0.0f);
}

}  // namespace
}  // namespace kipp::cpu_ref
