#include "backend/cpu_ref/kv_cache.h"

#include "quant/float_formats.h"

namespace kipp::cpu_ref {

KvCache::KvCache(uint32_t layers, uint32_t kv_width, uint32_t capacity)
    : layers_(layers), kv_width_(kv_width), capacity_(capacity),
      blocks_((capacity + kKvBlockTokens - 1) / kKvBlockTokens), block_table_(blocks_),
      k_(size_t(blocks_) * layers * kKvBlockTokens * kv_width), v_(k_.size()) {
  for (uint32_t b = 0; b < blocks_; ++b) block_table_[b] = b;
}

Status KvCache::truncate(uint32_t length) {
  if (length > length_) return fail("truncate to ", length, " positions: the session holds only ", length_);
  length_ = length;
  return {};
}

size_t KvCache::offset(uint32_t layer, uint32_t position) const {
  const size_t block = block_table_[position / kKvBlockTokens];
  return ((block * layers_ + layer) * kKvBlockTokens + position % kKvBlockTokens) * kv_width_;
}

void KvCache::store(uint32_t layer, uint32_t position, const float* k, const float* v) {
  const size_t at = offset(layer, position);
  for (uint32_t i = 0; i < kv_width_; ++i) {
    k_[at + i] = f32_to_bf16(k[i]);
    v_[at + i] = f32_to_bf16(v[i]);
  }
}

}  // namespace kipp::cpu_ref
