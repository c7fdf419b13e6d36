// A fast 64-bit hash of short byte strings for the tokenizer's tables (not for untrusted keys
// in long-lived tables: it has no seed).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace kipp {

inline uint64_t text_hash(std::string_view text) {
  constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;
  uint64_t hash = text.size() * 0xC2B2AE3D27D4EB4Full;
  size_t pos = 0;
  for (; pos + 8 <= text.size(); pos += 8) {
    uint64_t chunk = 0;
    std::memcpy(&chunk, text.data() + pos, 8);
    hash = (hash ^ chunk) * kMultiplier;
    hash ^= hash >> 29;
  }
  if (pos < text.size()) {
    uint64_t chunk = 0;
    std::memcpy(&chunk, text.data() + pos, text.size() - pos);
    hash = (hash ^ chunk) * kMultiplier;
  }
  hash ^= hash >> 32;
  hash *= kMultiplier;
  return hash ^ (hash >> 29);
}

}  // namespace kipp
