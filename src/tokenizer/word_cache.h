// Remembers the BPE result of recent pieces (text words repeat: most pieces of real text are
// found here). Bounded: when it fills, it starts over empty. Not thread-safe: one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_id.h"

namespace kipp {

class WordCache {
 public:
  // Pieces longer than this are not cached (they are rare and would crowd out the rest).
  static constexpr size_t kMaxPieceBytes = 64;

  explicit WordCache(size_t max_entries = size_t(1) << 16);

  std::optional<std::span<const TokenId>> find(std::string_view piece) const;
  void insert(std::string_view piece, std::span<const TokenId> ids);

 private:
  struct Entry {
    uint64_t hash = 0;
    uint32_t key_offset = 0;
    uint32_t ids_offset = 0;
    uint16_t key_length = 0;
    uint16_t ids_count = 0;
    bool used = false;
  };

  void clear();

  std::vector<Entry> slots_;
  size_t max_entries_;
  size_t entries_ = 0;
  std::string keys_;
  std::vector<TokenId> ids_;
};

}  // namespace kipp
