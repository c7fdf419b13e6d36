// The checks every backend runs on an eval call before touching any session, so that an invalid
// item fails the whole call with a message and changes nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace kipp {

class EvalChecker {
 public:
  explicit EvalChecker(uint32_t vocab) : vocab_(vocab) {}

  // Each item alone (session, positions, capacity, logit rows, token ids, block table), then the
  // call as a whole: a session appears once, and no block that one item writes is read or
  // written by another.
  Status check(std::span<const EvalItem> items);

 private:
  Status check_item(const EvalItem& item) const;
  Status check_block_table(const EvalItem& item) const;
  Status check_block_ownership(std::span<const EvalItem> items);

  uint32_t vocab_;
  struct BlockUse {
    const void* store;
    uint32_t block;
    uint32_t item;
    bool written;
  };
  std::vector<BlockUse> uses_;  // scratch, reused across calls
};

}  // namespace kipp
