// How one `eval` call becomes one batch on the GPU: every token of every item in one flat array
// with its position and its item, each item's block table (the identity for a private session),
// and which batch rows' logits come back, in item order. Pure host code, so it is built and
// tested on every machine; the CUDA backend uploads it in one copy per step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace kipp::cuda {

struct BatchLayout {
  std::vector<int32_t> token_ids;     // per batch row
  std::vector<int32_t> positions;     // per batch row: its position in its session
  std::vector<int32_t> row_item;      // per batch row: the item it belongs to
  std::vector<int32_t> table_offset;  // per item: where its block table starts in block_tables
  std::vector<int32_t> block_tables;  // every item's table, concatenated
  std::vector<int32_t> logit_rows;    // batch rows whose logits come back, item by item
  std::vector<float*> logit_targets;  // where each of those rows goes on the host
  uint32_t rows() const { return uint32_t(token_ids.size()); }
};

// Items must already have passed EvalChecker (positions, capacity, tables, ownership).
BatchLayout layout_batch(std::span<const EvalItem> items, uint32_t vocab);

}  // namespace kipp::cuda
