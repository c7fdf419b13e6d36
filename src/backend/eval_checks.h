// The checks every backend runs on an eval call before touching any session, so that an invalid
// item fails the whole call with a message and changes nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace kipp {

class EvalChecker {
 public:
  // `logits_refusal`, when not empty, is why this backend computes no logits for the checkpoint
  // (a checkpoint without a head never has them).
  explicit EvalChecker(const Checkpoint& checkpoint, std::string logits_refusal = {});

  // Each item alone (session, positions, capacity, logit rows and hidden row, token ids, block
  // table), then the
  // call as a whole: a session appears once, and no block that one item writes is read or
  // written by another.
  Status check(std::span<const EvalItem> items);

 private:
  Status check_item(const EvalItem& item) const;
  Status check_block_table(const EvalItem& item) const;
  Status check_block_ownership(std::span<const EvalItem> items);

  const Checkpoint& checkpoint_;
  std::string logits_refusal_;
  struct BlockUse {
    const void* store;
    uint32_t block;
    uint32_t item;
    bool written;
  };
  std::vector<BlockUse> uses_;  // scratch, reused across calls
};

}  // namespace kipp
