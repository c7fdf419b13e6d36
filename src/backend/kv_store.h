// Host-memory KV storage shared by the CPU backends: K and V in 32-position blocks, laid out
// [layer][physical block][position in block][row], a row holding one position's kv_heads x
// head_dim values in the store's KvFormat. Within a block this is the contract's
// [layer][position][kv_head][head_dim]; a block table chooses which physical block holds each
// logical one. Allocated once; never grows. The memory comes zeroed from calloc and is never
// written up front, so a large pool costs resident memory only as blocks are used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "backend/backend.h"
#include "registry/registry.h"

namespace kipp {

// Bytes of one K or V row of `kv_width` values (a multiple of 32) in `format`.
size_t kv_row_bytes(KvFormat format, uint32_t kv_width);
// K and V bytes of one position over every layer: what a cached token costs.
uint64_t kv_bytes_per_token(const Checkpoint& checkpoint, KvFormat format);

// One row of `n` values (a multiple of 32) into the cache: BF16 rounds each to nearest even; Q8_0
// quantizes each 32-value run as a weight block is (quant/blocks.h), against the FP16-rounded
// scale of its largest magnitude.
void store_kv_row(KvFormat format, const float* values, uint32_t n, std::byte* row);
// Values first..first+n-1 (a run inside one 32-value block, or whole blocks) of a cached row,
// widened to FP32 exactly: a BF16 value as it is; a Q8_0 value as scale x integer, which an FP32
// holds exactly (11 + 8 significant bits).
void widen_kv_values(KvFormat format, const std::byte* row, uint32_t first, uint32_t n, float* out);

class KvStore {
 public:
  KvStore(uint32_t layers, uint32_t kv_width, uint32_t blocks, KvFormat format);

  uint32_t blocks() const { return blocks_; }
  size_t row_bytes() const { return row_bytes_; }
  size_t bytes() const { return 2 * layer_bytes_ * layers_; }

  std::byte* k_row(uint32_t layer, uint32_t block, uint32_t slot) { return &k_[offset(layer, block, slot)]; }
  std::byte* v_row(uint32_t layer, uint32_t block, uint32_t slot) { return &v_[offset(layer, block, slot)]; }
  const std::byte* k_row(uint32_t layer, uint32_t block, uint32_t slot) const {
    return &k_[offset(layer, block, slot)];
  }
  const std::byte* v_row(uint32_t layer, uint32_t block, uint32_t slot) const {
    return &v_[offset(layer, block, slot)];
  }

 private:
  size_t offset(uint32_t layer, uint32_t block, uint32_t slot) const {
    return size_t(layer) * layer_bytes_ + (size_t(block) * kKvBlockTokens + slot) * row_bytes_;
  }

  struct Free {
    void operator()(std::byte* memory) const { std::free(memory); }
  };
  using Buffer = std::unique_ptr<std::byte[], Free>;

  uint32_t layers_, blocks_;
  size_t row_bytes_, layer_bytes_;
  Buffer k_, v_;
};

// Where one sequence's K and V rows live: its session's store, through its block table.
struct KvRows {
  KvStore& store;
  std::span<const uint32_t> table;  // empty: the identity

  uint32_t block(uint32_t position) const { return physical_block(table, position / kKvBlockTokens); }
  std::byte* k(uint32_t layer, uint32_t position) const {
    return store.k_row(layer, block(position), position % kKvBlockTokens);
  }
  std::byte* v(uint32_t layer, uint32_t position) const {
    return store.v_row(layer, block(position), position % kKvBlockTokens);
  }
};

}  // namespace kipp
