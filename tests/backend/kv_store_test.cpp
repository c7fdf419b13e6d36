// The host KV store and its two row formats: bytes per row and per token, what a stored row reads
// back as (against the block quantizer and the BF16 rounding it must equal), partial reads, and
// rows of different layers, blocks and slots that never overlap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "backend/kv_store.h"
#include "quant/blocks.h"
#include "quant/float_formats.h"
#include "registry/registry.h"

namespace kipp {
namespace {

std::vector<float> random_row(uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(n);
  for (float& v : row) v = normal(rng);
  return row;
}

TEST(KvStore, Q8_0RowsTake34BytesPer32ValuesAndHalveWhatAToken) {
  EXPECT_EQ(kv_row_bytes(KvFormat::bf16, 1024), 2048u);
  EXPECT_EQ(kv_row_bytes(KvFormat::q8_0, 1024), 1088u);
  const Checkpoint& c = *find_checkpoint("qwen3-0.6b");
  EXPECT_EQ(kv_bytes_per_token(c, KvFormat::bf16), c.kv_bytes_per_token());
  EXPECT_EQ(kv_bytes_per_token(c, KvFormat::q8_0), uint64_t(c.layers) * 2 * 1088);
}

TEST(KvStore, AStoredQ8_0RowReadsBackAsTheBlockQuantizerDecodes) {
  const uint32_t n = 256;
  std::vector<float> row = random_row(n, 1);
  row[40] = 0.0f;
  std::fill(row.begin() + 64, row.begin() + 96, 0.0f);  // an all-zero block keeps scale 0
  std::vector<std::byte> stored(kv_row_bytes(KvFormat::q8_0, n));
  store_kv_row(KvFormat::q8_0, row.data(), n, stored.data());
  std::vector<float> read(n), want(n);
  widen_kv_values(KvFormat::q8_0, stored.data(), 0, n, read.data());
  for (uint32_t b = 0; b < n / 32; ++b) dequantize_q8_0(quantize_q8_0(&row[b * 32]), &want[b * 32]);
  EXPECT_EQ(read, want);
  // The error is at most half a step of each block's scale.
  for (uint32_t i = 0; i < n; ++i) {
    const float amax = std::abs(*std::max_element(&row[i / 32 * 32], &row[i / 32 * 32] + 32,
                                                  [](float a, float b) { return std::abs(a) < std::abs(b); }));
    EXPECT_LE(std::abs(read[i] - row[i]), 0.5f * amax / 127.0f * 1.001f + 1e-7f) << "value " << i;
  }
  // A run inside one block, and one spanning blocks, read the same values as the whole row.
  std::vector<float> part(40);
  widen_kv_values(KvFormat::q8_0, stored.data(), 131, 5, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.begin() + 5, read.begin() + 131));
  widen_kv_values(KvFormat::q8_0, stored.data(), 128, 40, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), read.begin() + 128));
}

TEST(KvStore, AStoredBf16RowIsEachValueRoundedToBf16) {
  const uint32_t n = 64;
  const std::vector<float> row = random_row(n, 2);
  std::vector<std::byte> stored(kv_row_bytes(KvFormat::bf16, n));
  store_kv_row(KvFormat::bf16, row.data(), n, stored.data());
  std::vector<float> read(n);
  widen_kv_values(KvFormat::bf16, stored.data(), 0, n, read.data());
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(read[i], bf16_to_f32(f32_to_bf16(row[i]))) << "value " << i;
}

TEST(KvStore, RowsOfLayersBlocksAndSlotsDoNotOverlap) {
  for (const KvFormat format : {KvFormat::bf16, KvFormat::q8_0}) {
    KvStore store(3, 64, 2, format);
    EXPECT_EQ(store.bytes(), 2 * 3 * 2 * 32 * kv_row_bytes(format, 64));
    // Every row of K and V gets a byte pattern (1..251, repeating only 251 rows apart), which must
    // survive all the later writes: two rows that overlapped would leave the later one's.
    uint32_t pattern = 0;
    for (uint32_t layer = 0; layer < 3; ++layer)
      for (uint32_t block = 0; block < 2; ++block)
        for (uint32_t slot = 0; slot < 32; ++slot) {
          std::memset(store.k_row(layer, block, slot), int(pattern++ % 251 + 1), store.row_bytes());
          std::memset(store.v_row(layer, block, slot), int(pattern++ % 251 + 1), store.row_bytes());
        }
    pattern = 0;
    for (uint32_t layer = 0; layer < 3; ++layer)
      for (uint32_t block = 0; block < 2; ++block)
        for (uint32_t slot = 0; slot < 32; ++slot)
          for (std::byte* row : {store.k_row(layer, block, slot), store.v_row(layer, block, slot)}) {
            const uint8_t want = uint8_t(pattern++ % 251 + 1);
            for (size_t i = 0; i < store.row_bytes(); ++i)
              ASSERT_EQ(uint8_t(row[i]), want) << layer << " " << block << " " << slot;
          }
  }
}

}  // namespace
}  // namespace kipp
