// The BPE merge list as a lookup: (left id, right id) -> (rank, merged id), in an open-addressing
// table sized once at load. One probe sequence per lookup, no allocation after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tokenizer/token_id.h"

namespace kipp {

struct Merge {
  uint32_t rank;
  TokenId merged;
};

class MergeTable {
 public:
  explicit MergeTable(size_t expected_merges = 0);

  // False (and nothing changed) when the pair is already present.
  bool insert(TokenId left, TokenId right, Merge merge);

  const Merge* find(TokenId left, TokenId right) const {
    const uint64_t key = pair_key(left, right);
    for (size_t slot = home_slot(key);; slot = (slot + 1) & mask_) {
      const Slot& entry = slots_[slot];
      if (entry.key == key) return &entry.merge;
      if (entry.key == kEmpty) return nullptr;
    }
  }

  // Starts loading the slot where a lookup or insert of this pair begins (the table is larger
  // than the caches; the loader inserts 151k merges).
  void prefetch(TokenId left, TokenId right) const { __builtin_prefetch(&slots_[home_slot(pair_key(left, right))]); }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);

  void resize(size_t capacity);
  static uint64_t pair_key(TokenId left, TokenId right) { return uint64_t(left) << 32 | right; }
  size_t home_slot(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_; }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 0;
  size_t size_ = 0;
};

}  // namespace kipp
