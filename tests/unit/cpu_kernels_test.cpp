// Every kernel set this processor can run, its quantized matrix products against a scalar twin
// written from the formats' definitions (quant/blocks.h, kernels.h), on shapes that hit every
// row tile, single-vector row tail, token tile and token tail. The kernels sum each block's
// integer products exactly, so the twin sums the same integers in int64 and applies the scales
// in double; what may differ is only FP32 rounding, bounded below from the arithmetic. A failure
// names the worst element (row, token, expected, actual).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/thread_pool.h"
#include "quant/blocks.h"
#include "quant/float_formats.h"

namespace kipp {
namespace {

constexpr uint32_t kRows = 80;  // 5 groups of 16: full tiles of every set and a single-vector tail
constexpr double kUnit = 0x1p-24;  // FP32's unit roundoff

std::vector<cpu::Isa> runnable_sets() {
  std::vector<cpu::Isa> sets;
  for (cpu::Isa isa : {cpu::Isa::portable, cpu::Isa::avx2, cpu::Isa::avx512})
    if (int(isa) <= int(cpu::detected_isa())) sets.push_back(isa);
  return sets;
}

// A rows x cols matrix of random weights in ggml's block bytes, row after row.
std::vector<uint8_t> random_blocks(WeightFormat format, uint32_t rows, uint32_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const size_t size = format == WeightFormat::q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockAffine4);
  std::vector<uint8_t> bytes(size_t(rows) * cols / kBlockSize * size);
  float values[kBlockSize];
  for (size_t b = 0; b < bytes.size() / size; ++b) {
    for (float& v : values) v = normal(rng);
    if (format == WeightFormat::q8_0) {
      const BlockQ8_0 block = quantize_q8_0(values);
      std::memcpy(&bytes[b * size], &block, size);
    } else {
      const BlockAffine4 block = quantize_affine4(values);
      std::memcpy(&bytes[b * size], &block, size);
    }
  }
  return bytes;
}

struct Twin {
  double value;  // the product in exact integer sums and double scales
  double bound;  // how far FP32 rounding may take the kernel from it
};

// The activations of one token in every quantized form.
struct QuantizedToken {
  const int16_t* x16;
  float x_scale;
  const float* x16_block_sum;
  const int8_t* x8;
  const float* block_scale;
  const float* block_sum;
};

// Row r of the weights times one token's activations in `form`, from the definitions: Q8_0 and
// Q4_1 take x_int16 * x_scale (Q4_1's minimum times each block's x_int16 sum); Q4_1 with
// int8_blocks takes, per block, x_int8 * block scale, the minimum times the block sum. The
// kernel rounds float(sum) (when |sum| > 2^24), the scales' product (int8_blocks), and each fused
// multiply-add: at most 3 roundings per block and one at the end, each within one unit of the
// magnitude of what it adds, which the sum of the parts' magnitudes bounds.
Twin twin(WeightFormat format, cpu::ActivationForm form, const std::vector<uint8_t>& weights, uint32_t cols,
          uint32_t r, const QuantizedToken& x) {
  const uint32_t blocks = cols / kBlockSize;
  double total = 0, magnitude = 0;
  for (uint32_t b = 0; b < blocks; ++b) {
    double scaled, shifted = 0;
    if (format == WeightFormat::q8_0) {
      BlockQ8_0 block;
      std::memcpy(&block, &weights[(size_t(r) * blocks + b) * sizeof block], sizeof block);
      int64_t sum = 0;
      for (uint32_t i = 0; i < kBlockSize; ++i) sum += int64_t(block.q[i]) * x.x16[b * kBlockSize + i];
      scaled = double(sum) * fp16_to_f32(block.scale_fp16) * x.x_scale;
    } else {
      BlockAffine4 block;
      std::memcpy(&block, &weights[(size_t(r) * blocks + b) * sizeof block], sizeof block);
      const bool int8 = form == cpu::ActivationForm::int8_blocks;
      int64_t sum = 0;
      for (uint32_t i = 0; i < kBlockSize / 2; ++i) {
        const uint32_t low = b * kBlockSize + i, high = low + 16;
        sum += int64_t(block.nibbles[i] & 15) * (int8 ? x.x8[low] : x.x16[low]);
        sum += int64_t(block.nibbles[i] >> 4) * (int8 ? x.x8[high] : x.x16[high]);
      }
      const double minimum = fp16_to_f32(block.min_fp16);
      scaled = double(sum) * fp16_to_f32(block.scale_fp16) * (int8 ? x.block_scale[b] : x.x_scale);
      shifted = int8 ? minimum * x.block_sum[b] : minimum * x.x16_block_sum[b] * x.x_scale;
    }
    total += scaled + shifted;
    magnitude += std::fabs(scaled) + std::fabs(shifted);  // the two parts often nearly cancel
  }
  return {total, (3.0 * blocks + 2) * kUnit * magnitude + 1e-30};
}

void check_products(cpu::Isa isa, WeightFormat format, cpu::ActivationForm form, uint32_t cols) {
  const cpu::Kernels& kernels = cpu::kernels_for(isa);
  std::mt19937 rng(cols * 7 + uint32_t(format));
  const std::vector<uint8_t> weights = random_blocks(format, kRows, cols, rng);
  WeightView view{weights.data(), format, kRows, cols, weights.size()};
  cpu::ThreadPool pool(1);
  auto packed = cpu::pack_matrix(view, pool, kernels.lanes);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  view.data = packed.value().get();

  // Up to 13 tokens: every set's full token tiles and every tail count.
  constexpr uint32_t kTokens = 13;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(size_t(kTokens) * cols);
  for (float& v : x) v = normal(rng);
  x[3] = 40.0f;  // an outlier, as real activations have
  std::vector<int16_t> x16(x.size());
  std::vector<float> x_scale(kTokens), x16_block_sum(x.size() / kBlockSize);
  std::vector<int8_t> x8(x.size());
  std::vector<float> block_scale(x.size() / kBlockSize), block_sum(x.size() / kBlockSize);
  for (uint32_t t = 0; t < kTokens; ++t) {
    const size_t at = size_t(t) * cols;
    cpu::quantize_activation(&x[at], cols, &x16[at], &x_scale[t], &x16_block_sum[at / kBlockSize]);
    cpu::quantize_activation_blocks(&x[at], cols, &x8[at], &block_scale[at / kBlockSize], &block_sum[at / kBlockSize]);
  }

  for (uint32_t tokens = 1; tokens <= kTokens; ++tokens) {
    std::vector<float> out(size_t(tokens) * kRows, NAN);
    std::vector<float*> rows(tokens);
    for (uint32_t t = 0; t < tokens; ++t) rows[t] = &out[size_t(t) * kRows];
    const cpu::MatmulArgs args{&view,          form,    x.data(),   x16.data(), x_scale.data(), x16_block_sum.data(),
                               x8.data(),      block_scale.data(), block_sum.data(), cols, tokens, rows.data(), 0,
                               kRows,          cpu::fp16_table()};
    kernels.matmul(args);
    double worst = -1;
    std::string where;
    for (uint32_t t = 0; t < tokens; ++t)
      for (uint32_t r = 0; r < kRows; ++r) {
        const size_t at = size_t(t) * cols;
        const size_t block = at / kBlockSize;
        const Twin expected = twin(format, form, weights, cols, r,
                                   {&x16[at], x_scale[t], &x16_block_sum[block], &x8[at], &block_scale[block],
                                    &block_sum[block]});
        const double actual = out[size_t(t) * kRows + r];
        const double excess = std::isfinite(actual) ? std::fabs(actual - expected.value) / expected.bound : INFINITY;
        if (excess > worst) {
          worst = excess;
          char line[160];
          std::snprintf(line, sizeof line, "row %u, token %u: expected %.9g, actual %.9g (bound %.3g)", r, t,
                        expected.value, actual, expected.bound);
          where = line;
        }
      }
    EXPECT_LE(worst, 1.0) << cpu::isa_name(isa) << " " << (format == WeightFormat::q8_0 ? "q8_0" : "q4_1")
                          << (form == cpu::ActivationForm::int8_blocks ? " x int8" : " x int16") << ", " << cols
                          << " columns, " << tokens << " tokens: worst at " << where;
  }
}

TEST(CpuKernels, QuantizedProductsEqualTheirScalarTwinInEverySet) {
  for (cpu::Isa isa : runnable_sets())
    for (uint32_t cols : {32u, 96u, 1024u}) {
      check_products(isa, WeightFormat::q8_0, cpu::ActivationForm::int16, cols);
      check_products(isa, WeightFormat::affine4, cpu::ActivationForm::int16, cols);
      check_products(isa, WeightFormat::affine4, cpu::ActivationForm::int8_blocks, cols);
    }
}

// int16 activations: the largest magnitude maps to 32767, every value rounds to the nearest step
// (ties to even), each 32-value block's integers are summed, zeros stay zero, and a non-finite
// value poisons the scale.
TEST(CpuKernels, QuantizeActivationRoundsToTheNearestStep) {
  float x[32] = {1.0f, -0.5f, 0.25f, 0.0f, -1.0f};
  int16_t q[32];
  float scale = 0, block_sum = 0;
  cpu::quantize_activation(x, 32, q, &scale, &block_sum);
  EXPECT_FLOAT_EQ(scale, 1.0f / 32767);
  // 1 * 32767, -0.5 * 32767 = -16383.5 (tie, to even), 0.25 * 32767 = 8191.75.
  const int16_t expected[] = {32767, -16384, 8192, 0, -32767};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(q[i], expected[i]) << i;
  EXPECT_EQ(block_sum, float(32767 - 16384 + 8192 - 32767));

  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> wide(1024);
  for (float& v : wide) v = normal(rng);
  std::vector<int16_t> wide_q(wide.size());
  std::vector<float> wide_sums(wide.size() / 32);
  cpu::quantize_activation(wide.data(), uint32_t(wide.size()), wide_q.data(), &scale, wide_sums.data());
  for (size_t i = 0; i < wide.size(); ++i) EXPECT_LE(std::fabs(wide_q[i] * scale - wide[i]), scale * 0.5f + 1e-6f);

  const float zeros[32] = {};
  cpu::quantize_activation(zeros, 32, q, &scale, &block_sum);
  EXPECT_EQ(scale, 0.0f);
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(block_sum, 0.0f);
  float poisoned[32] = {1.0f, std::nanf(""), 2.0f};
  cpu::quantize_activation(poisoned, 32, q, &scale, &block_sum);
  EXPECT_TRUE(std::isnan(scale));
}

// int8 block activations: per 32-value block, the largest magnitude maps to 127, values
// round to nearest, the sum term is scale times the integers' sum; zero and poisoned blocks.
TEST(CpuKernels, QuantizeActivationBlocksRoundPerBlock) {
  std::vector<float> x(64);
  for (int i = 0; i < 32; ++i) x[i] = float(i - 16) / 16.0f;  // block 0: -1 .. 0.9375
  x[40] = std::nanf("");                                     // block 1 poisoned
  std::vector<int8_t> q(64);
  float scale[2], sum[2];
  cpu::quantize_activation_blocks(x.data(), 64, q.data(), scale, sum);
  EXPECT_FLOAT_EQ(scale[0], 1.0f / 127);
  int total = 0;
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(q[i], int8_t(std::lrint(x[i] * 127))) << i;
    EXPECT_LE(std::fabs(q[i] * scale[0] - x[i]), scale[0] * 0.5f + 1e-7f) << i;
    total += q[i];
  }
  EXPECT_FLOAT_EQ(sum[0], scale[0] * float(total));
  EXPECT_TRUE(std::isnan(scale[1]));
  EXPECT_TRUE(std::isnan(sum[1]));
  const std::vector<float> zeros(32, 0.0f);
  cpu::quantize_activation_blocks(zeros.data(), 32, q.data(), scale, sum);
  EXPECT_EQ(scale[0], 0.0f);
  EXPECT_EQ(sum[0], 0.0f);
  EXPECT_EQ(q[0], 0);
}

}  // namespace
}  // namespace kipp
