#include "backend/kv_store.h"

#include <new>

#include "quant/blocks.h"
#include "quant/float_formats.h"

namespace kipp {

size_t kv_row_bytes(KvFormat format, uint32_t kv_width) {
  switch (format) {
    case KvFormat::bf16: return size_t(kv_width) * sizeof(uint16_t);
    case KvFormat::q8_0: return size_t(kv_width) / kBlockSize * sizeof(BlockQ8_0);
  }
  return 0;
}

uint64_t kv_bytes_per_token(const Checkpoint& checkpoint, KvFormat format) {
  return uint64_t{checkpoint.layers} * 2 * kv_row_bytes(format, checkpoint.kv_width());
}

void store_kv_row(KvFormat format, const float* values, uint32_t n, std::byte* row) {
  switch (format) {
    case KvFormat::bf16: {
      auto* out = reinterpret_cast<uint16_t*>(row);
      for (uint32_t i = 0; i < n; ++i) out[i] = f32_to_bf16(values[i]);
      return;
    }
    case KvFormat::q8_0: {
      auto* blocks = reinterpret_cast<BlockQ8_0*>(row);
      for (uint32_t b = 0; b < n / kBlockSize; ++b) blocks[b] = quantize_q8_0(values + size_t(b) * kBlockSize);
      return;
    }
  }
}

void widen_kv_values(KvFormat format, const std::byte* row, uint32_t first, uint32_t n, float* out) {
  switch (format) {
    case KvFormat::bf16: {
      const auto* values = reinterpret_cast<const uint16_t*>(row) + first;
      for (uint32_t i = 0; i < n; ++i) out[i] = bf16_to_f32(values[i]);
      return;
    }
    case KvFormat::q8_0: {
      const auto* blocks = reinterpret_cast<const BlockQ8_0*>(row);
      for (uint32_t i = 0; i < n; ++i) {
        const BlockQ8_0& block = blocks[(first + i) / kBlockSize];
        out[i] = fp16_to_f32(block.scale_fp16) * float(block.q[(first + i) % kBlockSize]);
      }
      return;
    }
  }
}

KvStore::KvStore(uint32_t layers, uint32_t kv_width, uint32_t blocks, KvFormat format)
    : layers_(layers),
      blocks_(blocks),
      row_bytes_(kv_row_bytes(format, kv_width)),
      layer_bytes_(size_t(blocks) * kKvBlockTokens * row_bytes_),
      k_(static_cast<std::byte*>(std::calloc(layer_bytes_ * layers, 1))),
      v_(static_cast<std::byte*>(std::calloc(layer_bytes_ * layers, 1))) {
  if (!k_ || !v_) throw std::bad_alloc();
}

}  // namespace kipp
