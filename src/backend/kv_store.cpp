#include "backend/kv_store.h"

#include <new>

namespace kipp {

KvStore::KvStore(uint32_t layers, uint32_t kv_width, uint32_t blocks)
    : kv_width_(kv_width),
      blocks_(blocks),
      values_(size_t(layers) * blocks * kKvBlockTokens * kv_width),
      k_(static_cast<uint16_t*>(std::calloc(values_, sizeof(uint16_t)))),
      v_(static_cast<uint16_t*>(std::calloc(values_, sizeof(uint16_t)))) {
  if (!k_ || !v_) throw std::bad_alloc();
}

}  // namespace kipp
