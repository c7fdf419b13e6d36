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

// Quantizes random values into `format`, splits them into planes, and checks every weight as
// `read_back(planes, block, j)` reads it (the kernels' way) against the block decoder's value.
template <class Block>
void expect_planes_read_back_as_decoded(WeightFormat format, uint32_t seed, Block (*quantize_block)(const float*),
                                        void (*dequantize_block)(const Block&, float*),
                                        float (*read_back)(const Planes&, uint64_t, uint64_t)) {
  const std::vector<uint8_t> bytes = quantize(random_values(kRows * kCols, seed), quantize_block);
  const Planes planes = split({bytes.data(), format, kRows, kCols, bytes.size()});
  const auto* blocks = reinterpret_cast<const Block*>(bytes.data());
  for (uint64_t b = 0; b < kRows * kCols / kBlockSize; ++b) {
    float expected[kBlockSize];
    dequantize_block(blocks[b], expected);
    for (uint64_t j = 0; j < kBlockSize; ++j) ASSERT_EQ(read_back(planes, b, j), expected[j]) << b << " " << j;
  }
}

TEST(CudaWeightPlanes, Q8_0ValuesAndScalesReadBackAsTheBlockDecoderDecodes) {
  expect_planes_read_back_as_decoded(WeightFormat::q8_0, 1, quantize_q8_0, dequantize_q8_0,
                                     [](const Planes& p, uint64_t b, uint64_t j) {
                                       return fp16_at(&p.scales[b * 2]) * float(int8_t(p.values[b * kBlockSize + j]));
                                     });
}

TEST(CudaWeightPlanes, Affine4NibblesKeepTheirOrderAndScaleAndMinAreSideBySide) {
  expect_planes_read_back_as_decoded(
      WeightFormat::affine4, 2, quantize_affine4, dequantize_affine4, [](const Planes& p, uint64_t b, uint64_t j) {
        const uint8_t byte = p.values[b * kBlockSize / 2 + j % 16];  // j in the low nibble, j + 16 in the high
        const uint32_t q = j < 16 ? byte & 15 : byte >> 4;
        return fp16_at(&p.scales[b * 4]) * float(q) + fp16_at(&p.scales[b * 4 + 2]);
      });
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
