// How K and V rows are stored. BF16 is the contract's cache. Q8_0 (--kv-cache q8_0) stores each
// 32-value run of a row as a ggml Q8_0 block (an FP16 scale and 32 int8), 34 bytes for BF16's 64:
// a cached token costs 53% of the memory, and of the bandwidth attention reads at depth, for an
// error docs/MODELS.md measures. Every backend that offers it stores and reads it the same way
// (backend/kv_store.h), so cpu and cpu-ref still agree within the gates' bounds.
#pragma once

namespace kipp {

enum class KvFormat { bf16, q8_0 };

}  // namespace kipp
