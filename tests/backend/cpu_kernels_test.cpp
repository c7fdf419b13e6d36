// Every kernel table this processor can run (portable, avx2, avx512, avx512bf16, amx), each kernel against its
// scalar twin, on shapes that hit every row tile, single-vector row tail, token tile, token tail,
// column block and attention chunk edge:
//   - quantized products (Q8_0 x int16, Q4_1 x int16, Q4_1 x int8 blocks) against a twin written
//     from the formats' definitions (quant/blocks.h, kernels.h), which sums the same integers in
//     int64 and applies the scales in double;
//   - FP32 and BF16 products against cpu-ref's matvec, and BF16 pair products (avx512bf16)
//     against the exact product of the weights and the activations rounded to BF16;
//   - attention (both KV formats, through a scrambled block table, chunks folded) against
//     cpu-ref's attend_gqa.
//   - the activation quantizers against scalar twins written from their definitions (kernels.h),
//     bit for bit.
// What may differ in products and attention is only FP32 rounding (and, in attention, the kernels'
// polynomial exp); each test derives its bound from the arithmetic and says how. A failure names
// the worst element (row or head, token or position, expected, actual, bound). The steps a token
// takes outside the tables (norms, SiLU, RoPE) are cpu-ref's own functions in both backends, so
// they have no twin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu_ref/ops.h"
#include "backend/kv_store.h"
#include "quant/blocks.h"
#include "quant/float_formats.h"
#include "registry/registry.h"

namespace kipp {
namespace {

constexpr uint32_t kRows = 80;     // 5 groups of 16: full tiles of every set and a single-vector tail
constexpr double kUnit = 0x1p-24;  // FP32's unit roundoff

std::vector<cpu::Isa> runnable_sets() {
  std::vector<cpu::Isa> sets;
  for (cpu::Isa isa : {cpu::Isa::portable, cpu::Isa::avx2, cpu::Isa::avx512, cpu::Isa::avx512bf16, cpu::Isa::amx})
    if (cpu::runs(isa)) sets.push_back(isa);
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

// A kRows x cols matrix of random weights: its ggml blocks (what twins read) and its copy packed
// in a kernel set's layout (what `view` describes; null if packing failed).
struct RandomMatrix {
  std::vector<uint8_t> blocks;
  std::unique_ptr<uint8_t[]> packed;
  cpu::PackedMatrix view;
};

RandomMatrix random_packed(WeightFormat format, uint32_t cols, const cpu::PackingLayout& layout, std::mt19937& rng) {
  RandomMatrix m{random_blocks(format, kRows, cols, rng), nullptr, {}};
  const WeightView mapped{m.blocks.data(), format, kRows, cols, m.blocks.size()};
  cpu::ThreadPool pool(1);
  auto packed = cpu::pack_matrix(mapped, pool, layout);
  if (!packed.ok()) {
    ADD_FAILURE() << packed.error().message;
    return m;
  }
  m.packed = std::move(packed).value();
  m.view = cpu::packed_as(mapped, m.packed.get());
  return m;
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
Twin twin(WeightFormat format, cpu::ActivationForm form, const std::vector<uint8_t>& weights, uint32_t cols, uint32_t r,
          const QuantizedToken& x) {
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
  const RandomMatrix matrix = random_packed(format, cols, kernels.packing, rng);
  ASSERT_TRUE(matrix.packed);
  const std::vector<uint8_t>& weights = matrix.blocks;
  const cpu::PackedMatrix& view = matrix.view;

  // Up to 13 tokens: every set's full vector token tiles and every tail count; then 16, 19, 32
  // and 37, the amx set's tiles of 16 tokens with and without vector tiles after them.
  constexpr uint32_t kTokens = 37;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(size_t(kTokens) * cols);
  for (float& v : x) v = normal(rng);
  x[3] = 40.0f;  // an outlier, as real activations have
  std::vector<int16_t> x16(x.size());
  std::vector<uint8_t> x16_planes(cpu::tile_planes_bytes(kTokens, cols));
  std::vector<float> x_scale(kTokens), x16_block_sum(x.size() / kBlockSize);
  std::vector<int8_t> x8(x.size());
  std::vector<float> block_scale(x.size() / kBlockSize), block_sum(x.size() / kBlockSize);
  for (uint32_t t = 0; t < kTokens; ++t) {
    const size_t at = size_t(t) * cols;
    kernels.quantize_activation(&x[at], cols, &x16[at], &x_scale[t], &x16_block_sum[at / kBlockSize]);
    if (kernels.split_int16) kernels.split_int16(&x16[at], cols, t, x16_planes.data());
    kernels.quantize_activation_blocks(&x[at], cols, &x8[at], &block_scale[at / kBlockSize],
                                       &block_sum[at / kBlockSize]);
  }

  for (uint32_t tokens : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 16u, 19u, 32u, 37u}) {
    std::vector<float> out(size_t(tokens) * kRows, NAN);
    std::vector<float*> rows(tokens);
    for (uint32_t t = 0; t < tokens; ++t) rows[t] = &out[size_t(t) * kRows];
    const cpu::MatmulArgs args{&view,
                               form,
                               x.data(),
                               nullptr,
                               x16.data(),
                               x_scale.data(),
                               x16_block_sum.data(),
                               x16_planes.data(),
                               x8.data(),
                               block_scale.data(),
                               block_sum.data(),
                               cols,
                               tokens,
                               rows.data(),
                               0,
                               kRows,
                               cpu::fp16_table()};
    kernels.matmul(args);
    double worst = -1;
    std::string where;
    for (uint32_t t = 0; t < tokens; ++t)
      for (uint32_t r = 0; r < kRows; ++r) {
        const size_t at = size_t(t) * cols;
        const size_t block = at / kBlockSize;
        const Twin expected =
            twin(format, form, weights, cols, r,
                 {&x16[at], x_scale[t], &x16_block_sum[block], &x8[at], &block_scale[block], &block_sum[block]});
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
    for (uint32_t cols : {32u, 96u, 544u, 1024u}) {
      check_products(isa, WeightFormat::q8_0, cpu::ActivationForm::int16, cols);
      check_products(isa, WeightFormat::affine4, cpu::ActivationForm::int16, cols);
      check_products(isa, WeightFormat::affine4, cpu::ActivationForm::int8_blocks, cols);
    }
}

// The amx set multiplies int16 activations in tile registers for each full tile of 16 tokens and
// in the avx512 set's vector tiles for the rest. Both must give the very same bits, or a token's
// outputs would depend on the batch it came in: the backend's batch invariance rests on it. Each
// set quantizes the activations itself (the same definition, so the same bits); the rows are
// taken whole and from an offset, as threads take them.
TEST(CpuKernels, TileProductsHaveTheVectorTilesBits) {
  if (!cpu::runs(cpu::Isa::amx)) GTEST_SKIP() << "this processor has no AMX tiles, or Linux did not grant them";
  const cpu::Kernels& tiles = cpu::kernels_for(cpu::Isa::amx);
  const cpu::Kernels& vectors = cpu::kernels_for(cpu::Isa::avx512);
  ASSERT_EQ(tiles.packing.lanes, vectors.packing.lanes);  // one packed copy serves both
  constexpr uint32_t kTokens = 37;
  for (WeightFormat format : {WeightFormat::q8_0, WeightFormat::affine4})
    for (uint32_t cols : {32u, 96u, 1024u, 3072u}) {
      std::mt19937 rng(cols * 13 + uint32_t(format));
      const RandomMatrix matrix = random_packed(format, cols, tiles.packing, rng);
      ASSERT_TRUE(matrix.packed);
      const cpu::PackedMatrix& view = matrix.view;
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> x(size_t(kTokens) * cols);
      for (float& v : x) v = normal(rng);
      x[7] = -55.0f;
      struct Quantized {
        std::vector<int16_t> x16;
        std::vector<float> scale, block_sum;
        std::vector<uint8_t> planes;
      };
      auto quantize = [&](const cpu::Kernels& kernels) {
        Quantized q{std::vector<int16_t>(x.size()), std::vector<float>(kTokens),
                    std::vector<float>(x.size() / kBlockSize),
                    std::vector<uint8_t>(cpu::tile_planes_bytes(kTokens, cols))};
        for (uint32_t t = 0; t < kTokens; ++t) {
          const size_t at = size_t(t) * cols;
          kernels.quantize_activation(&x[at], cols, &q.x16[at], &q.scale[t], &q.block_sum[at / kBlockSize]);
          if (kernels.split_int16) kernels.split_int16(&q.x16[at], cols, t, q.planes.data());
        }
        return q;
      };
      const Quantized for_tiles = quantize(tiles), for_vectors = quantize(vectors);
      for (uint32_t tokens : {16u, 17u, 32u, 37u})
        for (uint32_t row_begin : {0u, 16u}) {
          auto run = [&](const cpu::Kernels& kernels, const Quantized& q) {
            std::vector<float> out(size_t(tokens) * kRows, NAN);
            std::vector<float*> rows(tokens);
            for (uint32_t t = 0; t < tokens; ++t) rows[t] = &out[size_t(t) * kRows];
            kernels.matmul({&view, cpu::ActivationForm::int16, x.data(), nullptr, q.x16.data(), q.scale.data(),
                            q.block_sum.data(), q.planes.data(), nullptr, nullptr, nullptr, cols, tokens, rows.data(),
                            row_begin, kRows, cpu::fp16_table()});
            return out;
          };
          const std::vector<float> got = run(tiles, for_tiles), want = run(vectors, for_vectors);
          for (size_t i = 0; i < got.size(); ++i) {
            if (i % kRows < row_begin) continue;
            ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
                << (format == WeightFormat::q8_0 ? "q8_0" : "q4_1") << ", " << cols << " columns, " << tokens
                << " tokens, rows from " << row_begin << ": token " << i / kRows << ", row " << i % kRows << ": amx "
                << got[i] << ", avx512 " << want[i];
          }
        }
    }
}

// Keeps the worst element of a comparison: its excess over the bound and where it was.
struct Worst {
  double excess = -1;
  std::string where;
  void see(double expected, double actual, double bound, const char* place) {
    const double excess_here = std::isfinite(actual) ? std::fabs(actual - expected) / bound : INFINITY;
    if (excess_here <= excess) return;
    excess = excess_here;
    char line[200];
    std::snprintf(line, sizeof line, "%s: expected %.9g, actual %.9g (bound %.3g)", place, expected, actual, bound);
    where = line;
  }
};

// FP32 and BF16 weights times x (form f32): the kernel against cpu-ref's matvec on the same
// unpacked weights. Both sum cols products of exactly representable factors in FP32, cpu-ref in
// column order (at most cols roundings), the kernel per lane then in a fixed tree (fewer); each
// is within (cols + 2) u sum|w x| of the exact value, so they are within twice that of each other.
// BF16 weights times x rounded to BF16 (form bf16, the set with pair products): the kernel
// against the exact sum of the same products in double, its twin. Each product of two BF16
// values is exact in FP32 and each is added with one rounding (a pair product rounds twice), so
// the kernel is within (cols + 2) u sum|w x| of it, x here being the rounded activations.
void check_dense_products(cpu::Isa isa, WeightFormat format, cpu::ActivationForm form, uint32_t cols) {
  const cpu::Kernels& kernels = cpu::kernels_for(isa);
  std::mt19937 rng(cols * 11 + uint32_t(format));
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const size_t value_bytes = format == WeightFormat::f32 ? 4 : 2;
  std::vector<uint8_t> weights(size_t(kRows) * cols * value_bytes);
  std::vector<float> widened(size_t(kRows) * cols);
  for (size_t i = 0; i < widened.size(); ++i) {
    const float value = normal(rng);
    if (format == WeightFormat::f32) {
      widened[i] = value;
      std::memcpy(&weights[i * 4], &value, 4);
    } else {
      const uint16_t bits = f32_to_bf16(value);
      widened[i] = bf16_to_f32(bits);
      std::memcpy(&weights[i * 2], &bits, 2);
    }
  }
  const WeightView plain{weights.data(), format, kRows, cols, weights.size()};
  cpu::ThreadPool pool(1);
  auto packed = cpu::pack_matrix(plain, pool, kernels.packing);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  const cpu::PackedMatrix view = cpu::packed_as(plain, packed.value().get());

  constexpr uint32_t kTokens = 13;
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(size_t(kTokens) * cols);
  for (float& v : x) v = unit(rng);
  x[5] = -40.0f;
  const bool rounded = form == cpu::ActivationForm::bf16;
  std::vector<uint16_t> x_bf16(x.size());
  std::vector<float> x_used = x;  // what the kernel multiplies: x, or x rounded to BF16
  if (rounded) {
    kernels.round_bf16(x.data(), uint32_t(x.size()), x_bf16.data());
    for (size_t i = 0; i < x.size(); ++i) x_used[i] = bf16_to_f32(x_bf16[i]);
  }
  std::vector<double> expected(size_t(kTokens) * kRows);
  for (uint32_t t = 0; t < kTokens; ++t) {
    if (rounded) {
      for (uint32_t r = 0; r < kRows; ++r) {
        double sum = 0;
        for (uint32_t c = 0; c < cols; ++c) sum += double(widened[size_t(r) * cols + c]) * x_used[size_t(t) * cols + c];
        expected[size_t(t) * kRows + r] = sum;
      }
    } else {
      std::vector<float> row(kRows);
      cpu_ref::matvec(plain, &x[size_t(t) * cols], row.data());
      std::copy(row.begin(), row.end(), expected.begin() + size_t(t) * kRows);
    }
  }
  const double units = rounded ? cols + 2.0 : 2.0 * (cols + 2);

  for (uint32_t tokens = 1; tokens <= kTokens; ++tokens) {
    std::vector<float> out(size_t(tokens) * kRows, NAN);
    std::vector<float*> rows(tokens);
    for (uint32_t t = 0; t < tokens; ++t) rows[t] = &out[size_t(t) * kRows];
    const cpu::MatmulArgs args{&view,   form,        x.data(), x_bf16.data(), nullptr,          nullptr,
                               nullptr, nullptr,     nullptr,  nullptr,       nullptr,          cols,
                               tokens,  rows.data(), 0,        kRows,         cpu::fp16_table()};
    kernels.matmul(args);
    Worst worst;
    for (uint32_t t = 0; t < tokens; ++t)
      for (uint32_t r = 0; r < kRows; ++r) {
        const float* w_row = &widened[size_t(r) * cols];
        const float* x_row = &x_used[size_t(t) * cols];
        double magnitude = 0;
        for (uint32_t c = 0; c < cols; ++c) magnitude += std::fabs(double(w_row[c]) * x_row[c]);
        char place[64];
        std::snprintf(place, sizeof place, "row %u, token %u", r, t);
        worst.see(expected[size_t(t) * kRows + r], out[size_t(t) * kRows + r], units * kUnit * magnitude + 1e-30,
                  place);
      }
    EXPECT_LE(worst.excess, 1.0) << cpu::isa_name(isa) << (format == WeightFormat::f32 ? " f32" : " bf16")
                                 << (rounded ? " by BF16 x" : "") << ", " << cols << " columns, " << tokens
                                 << " tokens: worst at " << worst.where;
  }
}

TEST(CpuKernels, DenseProductsEqualCpuRefInEverySet) {
  for (cpu::Isa isa : runnable_sets())
    for (uint32_t cols : {32u, 96u, 544u, 1024u}) {
      check_dense_products(isa, WeightFormat::f32, cpu::ActivationForm::f32, cols);
      check_dense_products(isa, WeightFormat::bf16, cpu::ActivationForm::f32, cols);
    }
}

// The set with BF16 pair products (avx512bf16; skipped, and said to be, where the processor has no
// AVX512-BF16): BF16 weights by activations rounded to BF16, against their exact twin.
TEST(CpuKernels, Bf16PairProductsEqualTheirTwin) {
  bool any = false;
  for (cpu::Isa isa : runnable_sets()) {
    if (!cpu::kernels_for(isa).round_bf16) continue;
    any = true;
    for (uint32_t cols : {32u, 96u, 544u, 1024u})
      check_dense_products(isa, WeightFormat::bf16, cpu::ActivationForm::bf16, cols);
  }
  if (!any) GTEST_SKIP() << "this processor has no AVX512-BF16: no kernel set it runs has BF16 pair products";
}

// Attention of one query position over `positions` cached rows, in units of FP32's roundoff
// relative to max|v|, from exact. A score q.k / sqrt(d) carries at most (d + 2) u of
// sum_i |q_i k_i| / sqrt(d) (d products summed in any order, the scale); a softmax weight exp(s -
// max) then carries that error plus its exp's (`exp_units`: std::exp is within 1 u, the
// kernels' degree-7 polynomial within 4) relatively; weights all off by a relative eta move the
// normalized sum by at most 2 eta max|v|. The weighted sums and the normalizer add at most
// (positions + 1) u each, the fold of chunk partials (exp and two products per chunk) 6 u per
// chunk, the final division 1 u.
double attention_error_units(double score_error_units, uint32_t positions, uint32_t chunks, double exp_units) {
  return 2.0 * (score_error_units + exp_units + 1) + 2.0 * (positions + 1) + 6.0 * chunks + 1;
}

void check_attention(cpu::Isa isa, KvFormat format, const Checkpoint& c) {
  const cpu::Kernels& kernels = cpu::kernels_for(isa);
  const uint32_t dim = c.head_dim(), q_heads = c.q_heads, kv_width = c.kv_width();
  // Positions on both sides of every block and chunk edge, up to three chunks.
  const std::vector<uint32_t> lengths = {1, 2, 31, 32, 33, 255, 256, 257, 600};
  const uint32_t blocks = kv_blocks_for(600), spare = 5;
  KvStore store(1, kv_width, blocks + spare, format);
  std::vector<uint32_t> table(blocks);
  std::iota(table.begin(), table.end(), spare);
  std::mt19937 rng(int(isa) * 3 + int(format));
  std::shuffle(table.begin(), table.end(), rng);
  const KvRows kv{store, table};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(kv_width);
  for (uint32_t p = 0; p < 600; ++p) {
    for (float& v : row) v = normal(rng);
    store_kv_row(format, row.data(), kv_width, kv.k(0, p));
    for (float& v : row) v = normal(rng);
    store_kv_row(format, row.data(), kv_width, kv.v(0, p));
  }
  // Queries three times the keys' scale: scores spread over about +-10, so the softmax is neither
  // flat nor one-hot.
  std::vector<float> q(lengths.size() * q_heads * dim);
  for (float& v : q) v = 3.0f * normal(rng);
  std::vector<float> out(q.size(), NAN), expected(q.size());
  std::vector<cpu::AttentionQuery> queries;
  for (size_t i = 0; i < lengths.size(); ++i)
    queries.push_back({&q[i * q_heads * dim], &out[i * q_heads * dim], store.k_row(0, 0, 0), store.v_row(0, 0, 0),
                       table.data(), lengths[i]});
  cpu::ThreadPool pool(2);
  cpu::AttentionRunner runner(c, pool, kernels, format);
  runner.run(queries);
  // The queries share one session, so the runner groups them (up to four a job, lengths that end
  // in different blocks and chunks); each must come out bit for bit as when it runs alone.
  std::vector<float> alone(q.size(), NAN);
  for (size_t i = 0; i < lengths.size(); ++i) {
    cpu::AttentionQuery query = queries[i];
    query.out = &alone[i * q_heads * dim];
    runner.run(std::span(&query, 1));
  }
  for (size_t i = 0; i < lengths.size(); ++i)
    EXPECT_EQ(0, std::memcmp(&alone[i * q_heads * dim], &out[i * q_heads * dim], q_heads * dim * sizeof(float)))
        << cpu::isa_name(isa) << ", " << kv_format_name(format) << " cache: " << lengths[i]
        << " positions in a group differ from alone";

  std::vector<const std::byte*> keys(600), values(600);
  for (uint32_t p = 0; p < 600; ++p) {
    keys[p] = kv.k(0, p);
    values[p] = kv.v(0, p);
  }
  std::vector<float> scores(600), k_row(dim), v_row(dim);
  Worst worst;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const uint32_t n = lengths[i], chunks = (n + cpu::kAttentionChunk - 1) / cpu::kAttentionChunk;
    const float* query = &q[i * q_heads * dim];
    cpu_ref::attend_gqa(query, q_heads, c.kv_heads, dim, format, std::span(keys.data(), n), std::span(values.data(), n),
                        scores.data(), &expected[i * q_heads * dim]);
    for (uint32_t h = 0; h < q_heads; ++h) {
      const uint32_t kv_head = h / (q_heads / c.kv_heads);
      double score_magnitude = 0, v_max = 0;
      for (uint32_t p = 0; p < n; ++p) {
        widen_kv_values(format, keys[p], kv_head * dim, dim, k_row.data());
        widen_kv_values(format, values[p], kv_head * dim, dim, v_row.data());
        double magnitude = 0;
        for (uint32_t d = 0; d < dim; ++d) {
          magnitude += std::fabs(double(query[h * dim + d]) * k_row[d]);
          v_max = std::max(v_max, double(std::fabs(v_row[d])));
        }
        score_magnitude = std::max(score_magnitude, magnitude / std::sqrt(double(dim)));
      }
      // The score error enters the weights through exp, in absolute units of the score.
      const double score_units = (dim + 2) * score_magnitude;
      const double bound =
          (attention_error_units(score_units, n, chunks, 4) + attention_error_units(score_units, n, 1, 1)) * kUnit *
          v_max;
      for (uint32_t d = 0; d < dim; ++d) {
        char place[80];
        std::snprintf(place, sizeof place, "%u positions, head %u, element %u", n, h, d);
        const size_t at = i * q_heads * dim + h * dim + d;
        worst.see(expected[at], out[at], bound, place);
      }
    }
  }
  EXPECT_LE(worst.excess, 1.0) << cpu::isa_name(isa) << " attention, " << kv_format_name(format) << " cache, "
                               << c.q_heads << " query heads over " << c.kv_heads << " KV heads: worst at "
                               << worst.where;
}

TEST(CpuKernels, AttentionEqualsCpuRefInEverySet) {
  // The dense family's groups (16 query heads over 8 KV heads), and the MoE checkpoints' wider
  // ones over 4 KV heads (Qwen3-30B-A3B's 32 over 4, ../shared/REVIEW-QWEN3-MOE.md).
  const Checkpoint& dense = *find_checkpoint("qwen3-0.6b");
  const Checkpoint moe_attention = [&] {
    Checkpoint c = dense;
    c.q_heads = 32;
    c.kv_heads = 4;
    return c;
  }();
  for (cpu::Isa isa : runnable_sets())
    for (const Checkpoint* c : {&dense, &moe_attention}) {
      check_attention(isa, KvFormat::bf16, *c);
      check_attention(isa, KvFormat::q8_0, *c);
    }
}

// The largest magnitude of n values, and whether every one is finite.
float largest_of(const float* x, uint32_t n, bool* finite) {
  float largest = 0.0f;
  *finite = true;
  for (uint32_t i = 0; i < n; ++i) {
    largest = std::max(largest, std::fabs(x[i]));
    *finite = *finite && std::isfinite(x[i]);
  }
  return largest;
}

// The quantizers' definitions (kernels.h), written out in scalars: what every set must equal.
void twin_quantize_int16(const float* x, uint32_t n, int16_t* out, float* scale, float* block_sum) {
  bool finite;
  const float largest = largest_of(x, n, &finite);
  const bool quantized = largest > 0.0f && finite;
  *scale = !finite ? std::nanf("") : quantized ? largest / 32767.0f : 0.0f;
  for (uint32_t i = 0; i < n; ++i) out[i] = quantized ? int16_t(std::lrint(x[i] * (32767.0f / largest))) : 0;
  for (uint32_t b = 0; b < n / kBlockSize; ++b) {
    int32_t sum = 0;
    for (uint32_t i = 0; i < kBlockSize; ++i) sum += out[kBlockSize * b + i];
    block_sum[b] = float(sum);
  }
}

void twin_quantize_int8_blocks(const float* x, uint32_t n, int8_t* out, float* scale, float* sum) {
  for (uint32_t b = 0; b < n / kBlockSize; ++b) {
    const float* block = x + b * kBlockSize;
    bool finite;
    const float largest = largest_of(block, kBlockSize, &finite);
    const bool quantized = largest > 0.0f && finite;
    int total = 0;
    for (uint32_t i = 0; i < kBlockSize; ++i) {
      out[b * kBlockSize + i] = quantized ? int8_t(std::lrint(block[i] * (127.0f / largest))) : 0;
      total += out[b * kBlockSize + i];
    }
    scale[b] = !finite ? std::nanf("") : largest / 127.0f;
    sum[b] = !finite ? std::nanf("") : scale[b] * float(total);
  }
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

// Every set's quantizers equal the definitions bit for bit (BF16 rounding: f32_to_bf16, cpu-ref's
// own): widths of one block to a 3,072-wide FFN row, ties (values exactly between two steps), an
// outlier, an all-zero block, a NaN, an infinity, an overflow and a subnormal.
TEST(CpuKernels, QuantizersEqualTheirDefinitionInEverySet) {
  for (cpu::Isa isa : runnable_sets()) {
    const cpu::Kernels& kernels = cpu::kernels_for(isa);
    for (uint32_t n : {32u, 96u, 1024u, 3072u})
      for (int variant = 0; variant < 5; ++variant) {
        std::mt19937 rng(n + variant);
        std::normal_distribution<float> normal(0.0f, 2.0f);
        std::vector<float> x(n);
        for (float& v : x) v = normal(rng);
        if (variant == 1) {  // ties: the largest is 32767 and 127 steps, so k + 0.5 lands between two
          x[0] = 32767.0f;
          for (uint32_t i = 1; i < n; ++i) x[i] = float(int(i % 200) - 100) + 0.5f;
        }
        if (variant == 2) x[n / 2] = 1000.0f;
        if (variant == 3) std::fill(x.begin(), x.begin() + 32, 0.0f);
        if (variant == 4) {
          x[7] = std::nanf("");
          x[n - 1] = INFINITY;
          x[8] = 3.4e38f;       // rounds past BF16's largest finite value, to infinity
          x[9] = -1e-40f;       // subnormal
          x[10] = 1.00390625f;  // 1 + 2^-8: a tie, to even (1)
          x[11] = 1.01171875f;  // 1 + 3 x 2^-8: a tie, to even (1 + 2^-6)
        }
        std::vector<int16_t> q16(n), twin16(n);
        std::vector<float> sums16(n / 32), twin_sums16(n / 32);
        float scale16, twin_scale16;
        kernels.quantize_activation(x.data(), n, q16.data(), &scale16, sums16.data());
        twin_quantize_int16(x.data(), n, twin16.data(), &twin_scale16, twin_sums16.data());
        EXPECT_TRUE(same_bits(scale16, twin_scale16)) << cpu::isa_name(isa) << " n " << n << " variant " << variant;
        for (uint32_t i = 0; i < n; ++i)
          ASSERT_EQ(q16[i], twin16[i]) << cpu::isa_name(isa) << " int16, n " << n << " variant " << variant
                                       << ", element " << i << " of value " << x[i];
        for (uint32_t b = 0; b < n / 32; ++b)
          ASSERT_TRUE(same_bits(sums16[b], twin_sums16[b])) << cpu::isa_name(isa) << " block " << b;

        std::vector<int8_t> q8(n), twin8(n);
        std::vector<float> scales8(n / 32), twin_scales8(n / 32), sums8(n / 32), twin_sums8(n / 32);
        kernels.quantize_activation_blocks(x.data(), n, q8.data(), scales8.data(), sums8.data());
        twin_quantize_int8_blocks(x.data(), n, twin8.data(), twin_scales8.data(), twin_sums8.data());
        for (uint32_t i = 0; i < n; ++i)
          ASSERT_EQ(q8[i], twin8[i]) << cpu::isa_name(isa) << " int8 blocks, n " << n << " variant " << variant
                                     << ", element " << i << " of value " << x[i];
        for (uint32_t b = 0; b < n / 32; ++b)
          ASSERT_TRUE(same_bits(scales8[b], twin_scales8[b]) && same_bits(sums8[b], twin_sums8[b]))
              << cpu::isa_name(isa) << " int8 blocks, block " << b << ": scale " << scales8[b] << " vs "
              << twin_scales8[b] << ", sum " << sums8[b] << " vs " << twin_sums8[b];

        if (!kernels.round_bf16) continue;  // no BF16 pair products in this set
        std::vector<uint16_t> b16(n);
        kernels.round_bf16(x.data(), n, b16.data());
        for (uint32_t i = 0; i < n; ++i)
          ASSERT_EQ(b16[i], f32_to_bf16(x[i])) << cpu::isa_name(isa) << " BF16, n " << n << " variant " << variant
                                               << ", element " << i << " of value " << x[i];
      }
  }
}

// The definitions themselves, by hand. int16: the largest magnitude maps to 32767, every value
// rounds to the nearest step (ties to even), each 32-value block's integers are summed, zeros
// stay zero, and a non-finite value poisons the scale.
TEST(CpuKernels, QuantizeActivationRoundsToTheNearestStep) {
  float x[32] = {1.0f, -0.5f, 0.25f, 0.0f, -1.0f};
  int16_t q[32];
  float scale = 0, block_sum = 0;
  twin_quantize_int16(x, 32, q, &scale, &block_sum);
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
  twin_quantize_int16(wide.data(), uint32_t(wide.size()), wide_q.data(), &scale, wide_sums.data());
  for (size_t i = 0; i < wide.size(); ++i) EXPECT_LE(std::fabs(wide_q[i] * scale - wide[i]), scale * 0.5f + 1e-6f);

  const float zeros[32] = {};
  twin_quantize_int16(zeros, 32, q, &scale, &block_sum);
  EXPECT_EQ(scale, 0.0f);
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(block_sum, 0.0f);
  float poisoned[32] = {1.0f, std::nanf(""), 2.0f};
  twin_quantize_int16(poisoned, 32, q, &scale, &block_sum);
  EXPECT_TRUE(std::isnan(scale));
}

// int8 blocks: per 32-value block, the largest magnitude maps to 127, values round to nearest,
// the sum term is scale times the integers' sum; zero and poisoned blocks.
TEST(CpuKernels, QuantizeActivationBlocksRoundPerBlock) {
  std::vector<float> x(64);
  for (int i = 0; i < 32; ++i) x[i] = float(i - 16) / 16.0f;  // block 0: -1 .. 0.9375
  x[40] = std::nanf("");                                      // block 1 poisoned
  std::vector<int8_t> q(64);
  float scale[2], sum[2];
  twin_quantize_int8_blocks(x.data(), 64, q.data(), scale, sum);
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
  twin_quantize_int8_blocks(zeros.data(), 32, q.data(), scale, sum);
  EXPECT_EQ(scale[0], 0.0f);
  EXPECT_EQ(sum[0], 0.0f);
  EXPECT_EQ(q[0], 0);
}

}  // namespace
}  // namespace kipp
