// One session's KV cache for cpu-ref: BF16 K and V with logical layout
// [layer][position][kv_head][head_dim], stored in 32-position blocks that a block table maps from
// logical (position / 32) to physical. Allocated once at creation; never grows.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace kipp::cpu_ref {

class KvCache final : public BackendSession {
 public:
  KvCache(uint32_t layers, uint32_t kv_width, uint32_t capacity);

  uint32_t capacity() const override { return capacity_; }
  uint32_t length() const override { return length_; }
  void reset() override { length_ = 0; }
  Status truncate(uint32_t length) override;

  // K and V of one position and layer (kv_width values each), rounded to BF16 when stored.
  void store(uint32_t layer, uint32_t position, const float* k, const float* v);
  const uint16_t* k_at(uint32_t layer, uint32_t position) const { return &k_[offset(layer, position)]; }
  const uint16_t* v_at(uint32_t layer, uint32_t position) const { return &v_[offset(layer, position)]; }
  void set_length(uint32_t length) { length_ = length; }

 private:
  size_t offset(uint32_t layer, uint32_t position) const;

  uint32_t layers_, kv_width_, capacity_, blocks_;
  uint32_t length_ = 0;
  std::vector<uint32_t> block_table_;  // logical block -> physical block
  std::vector<uint16_t> k_, v_;        // [physical block][layer][32][kv_width]
};

}  // namespace kipp::cpu_ref
