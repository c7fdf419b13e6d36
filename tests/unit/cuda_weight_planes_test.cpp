// The CUDA backend's device weight layout, which is host code and so runs on every machine: each
// weight read back from the planes (as the kernels read it) equals the block decoder's value.
#include "backend/cuda/weight_planes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "quant/blocks.h"
#include "quant/float_formats.h"

namespace kipp::cuda {
namespace {

constexpr uint64_t kRows = 3, kCols = 96;

std::vector<float> random_values(uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

template <class Block>
std::vector<uint8_t> quantize(const std::vector<float>& values, Block (*quantize_block)(const float*)) {
  std::vector<uint8_t> bytes(values.size() / kBlockSize * sizeof(Block));
  for (size_t b = 0; b < values.size() / kBlockSize; ++b) {
    const Block block = quantize_block(values.data() + b * kBlockSize);
    std::memcpy(bytes.data() + b * sizeof(Block), &block, sizeof(Block));
  }
  return bytes;
}

// The planes of `view`, after checking they hold as many bytes as the artifact.
struct Planes {
  std::vector<uint8_t> values, scales;
};
Planes split(const WeightView& view) {
  const PlaneBytes sizes = plane_bytes(view.format, view.rows, view.cols);
  EXPECT_EQ(sizes.values + sizes.scales, view.bytes);
  Planes planes{std::vector<uint8_t>(sizes.values), std::vector<uint8_t>(sizes.scales)};
  split_into_planes(view, planes.values.data(), planes.scales.data());
  return planes;
}

float fp16_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return fp16_to_f32(bits);
}

TEST(CudaWeightPlanes, Q8_0ValuesAndScalesReadBackAsTheBlockDecoderDecodes) {
  const std::vector<uint8_t> bytes = quantize(random_values(kRows * kCols, 1), quantize_q8_0);
  const auto [values, scales] = split({bytes.data(), WeightFormat::q8_0, kRows, kCols, bytes.size()});
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(bytes.data());
  for (uint64_t b = 0; b < kRows * kCols / kBlockSize; ++b) {
    float expected[kBlockSize];
    dequantize_q8_0(blocks[b], expected);
    for (uint64_t j = 0; j < kBlockSize; ++j)
      ASSERT_EQ(fp16_at(&scales[b * 2]) * float(int8_t(values[b * kBlockSize + j])), expected[j]) << b << " " << j;
  }
}

TEST(CudaWeightPlanes, Affine4NibblesKeepTheirOrderAndScaleAndMinAreSideBySide) {
  const std::vector<uint8_t> bytes = quantize(random_values(kRows * kCols, 2), quantize_affine4);
  const auto [values, scales] = split({bytes.data(), WeightFormat::affine4, kRows, kCols, bytes.size()});
  const auto* blocks = reinterpret_cast<const BlockAffine4*>(bytes.data());
  for (uint64_t b = 0; b < kRows * kCols / kBlockSize; ++b) {
    float expected[kBlockSize];
    dequantize_affine4(blocks[b], expected);
    for (uint64_t j = 0; j < kBlockSize; ++j) {
      const uint8_t byte = values[b * kBlockSize / 2 + j % 16];
      const uint32_t q = j < 16 ? byte & 15 : byte >> 4;
      ASSERT_EQ(fp16_at(&scales[b * 4]) * float(q) + fp16_at(&scales[b * 4 + 2]), expected[j]) << b << " " << j;
    }
  }
}

TEST(CudaWeightPlanes, Bf16IsCopiedAsIsAndStackingNeedsOneFormatAndWidth) {
  const std::vector<uint16_t> bf16 = {1, 2, 3, 4};
  const WeightView a{reinterpret_cast<const uint8_t*>(bf16.data()), WeightFormat::bf16, 1, 4, 8};
  std::vector<uint8_t> values(8);
  split_into_planes(a, values.data(), nullptr);
  EXPECT_EQ(std::memcmp(values.data(), bf16.data(), 8), 0);

  const WeightView b{a.data, WeightFormat::bf16, 3, 4, 24};
  const WeightView* same[] = {&a, &b};
  ASSERT_TRUE(stacked_plane_bytes(same).ok());
  EXPECT_EQ(stacked_plane_bytes(same)->values, 4u * 4 * 2);
  const WeightView wider{a.data, WeightFormat::bf16, 1, 8, 16};
  const WeightView other{a.data, WeightFormat::q8_0, 1, 4, 8};
  const WeightView* mixed_width[] = {&a, &wider};
  const WeightView* mixed_format[] = {&a, &other};
  EXPECT_FALSE(stacked_plane_bytes(mixed_width).ok());
  EXPECT_FALSE(stacked_plane_bytes(mixed_format).ok());
}

// Gate and up, interleaved for the SwiGLU epilogue: device row 2r is gate row r, row 2r + 1 up row r,
// in both planes; Q, K and V simply follow each other.
TEST(CudaWeightPlanes, RowByRowStackingDealsOutThePartsRowsInTurn) {
  const std::vector<uint8_t> gate = quantize(random_values(kRows * kCols, 3), quantize_q8_0);
  const std::vector<uint8_t> up = quantize(random_values(kRows * kCols, 4), quantize_q8_0);
  const WeightView a{gate.data(), WeightFormat::q8_0, kRows, kCols, gate.size()};
  const WeightView b{up.data(), WeightFormat::q8_0, kRows, kCols, up.size()};
  const Planes planes_a = split(a), planes_b = split(b);
  const WeightView* parts[] = {&a, &b};
  const PlaneBytes total = stacked_plane_bytes(parts).value();
  const PlaneBytes row = plane_bytes(WeightFormat::q8_0, 1, kCols);
  for (Stacking stacking : {Stacking::row_by_row, Stacking::one_after_another}) {
    std::vector<uint8_t> values(total.values), scales(total.scales);
    ASSERT_TRUE(stack_into_planes(parts, stacking, values.data(), scales.data()).ok());
    for (uint64_t r = 0; r < 2 * kRows; ++r) {
      const bool from_a = stacking == Stacking::row_by_row ? r % 2 == 0 : r < kRows;
      const uint64_t source_row = stacking == Stacking::row_by_row ? r / 2 : r % kRows;
      const Planes& source = from_a ? planes_a : planes_b;
      const uint8_t* want_values = source.values.data() + source_row * row.values;
      const uint8_t* want_scales = source.scales.data() + source_row * row.scales;
      EXPECT_EQ(std::memcmp(values.data() + r * row.values, want_values, row.values), 0) << "values of row " << r;
      EXPECT_EQ(std::memcmp(scales.data() + r * row.scales, want_scales, row.scales), 0) << "scales of row " << r;
    }
  }
  const WeightView shorter{up.data(), WeightFormat::q8_0, kRows - 1, kCols, up.size() - 34 * kCols / 32};
  const WeightView* uneven[] = {&a, &shorter};
  std::vector<uint8_t> values(total.values), scales(total.scales);
  EXPECT_FALSE(stack_into_planes(uneven, Stacking::row_by_row, values.data(), scales.data()).ok());
}

}  // namespace
}  // namespace kipp::cuda
