#include "backend/cuda/batch_layout.h"

namespace kipp::cuda {

BatchLayout layout_batch(std::span<const EvalItem> items, uint32_t vocab) {
  BatchLayout batch;
  for (uint32_t i = 0; i < items.size(); ++i) {
    const EvalItem& item = items[i];
    const uint32_t count = uint32_t(item.tokens.size());
    const uint32_t first_row = batch.rows();
    batch.table_offset.push_back(int32_t(batch.block_tables.size()));
    const uint32_t blocks = kv_blocks_for(item.start_position + count);
    for (uint32_t b = 0; b < blocks; ++b)
      batch.block_tables.push_back(int32_t(item.block_table.empty() ? b : item.block_table[b]));
    for (uint32_t t = 0; t < count; ++t) {
      batch.token_ids.push_back(int32_t(item.tokens[t]));
      batch.positions.push_back(int32_t(item.start_position + t));
      batch.row_item.push_back(int32_t(i));
    }
    for (uint32_t r = 0; r < item.logit_rows; ++r) {
      batch.logit_rows.push_back(int32_t(first_row + count - item.logit_rows + r));
      batch.logit_targets.push_back(item.logits + size_t(r) * vocab);
    }
  }
  return batch;
}

}  // namespace kipp::cuda
