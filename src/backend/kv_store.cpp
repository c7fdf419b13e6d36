#include "backend/kv_store.h"

namespace kipp {

KvStore::KvStore(uint32_t layers, uint32_t kv_width, uint32_t blocks)
    : kv_width_(kv_width), blocks_(blocks),
      k_(size_t(layers) * blocks * kKvBlockTokens * kv_width), v_(k_.size()) {}

}  // namespace kipp
