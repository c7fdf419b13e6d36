// Host-memory KV storage shared by the CPU backends: BF16 K and V in 32-position blocks, laid out
// [layer][physical block][position in block][kv_head][head_dim]. Within a block this is the
// contract's [layer][position][kv_head][head_dim]; a block table chooses which physical block
// holds each logical one. Allocated once; never grows. The memory comes zeroed from calloc and
// is never written up front, so a large pool costs resident memory only as blocks are used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "backend/backend.h"

namespace kipp {

class KvStore {
 public:
  KvStore(uint32_t layers, uint32_t kv_width, uint32_t blocks);

  uint32_t blocks() const { return blocks_; }
  uint32_t kv_width() const { return kv_width_; }
  size_t bytes() const { return 2 * values_ * sizeof(uint16_t); }

  uint16_t* k_row(uint32_t layer, uint32_t block, uint32_t slot) { return &k_[offset(layer, block, slot)]; }
  uint16_t* v_row(uint32_t layer, uint32_t block, uint32_t slot) { return &v_[offset(layer, block, slot)]; }
  const uint16_t* k_row(uint32_t layer, uint32_t block, uint32_t slot) const { return &k_[offset(layer, block, slot)]; }
  const uint16_t* v_row(uint32_t layer, uint32_t block, uint32_t slot) const { return &v_[offset(layer, block, slot)]; }

 private:
  size_t offset(uint32_t layer, uint32_t block, uint32_t slot) const {
    return ((size_t(layer) * blocks_ + block) * kKvBlockTokens + slot) * kv_width_;
  }

  struct Free {
    void operator()(uint16_t* memory) const { std::free(memory); }
  };
  using Buffer = std::unique_ptr<uint16_t[], Free>;

  uint32_t kv_width_, blocks_;
  size_t values_;  // in each of K and V
  Buffer k_, v_;
};

}  // namespace kipp
