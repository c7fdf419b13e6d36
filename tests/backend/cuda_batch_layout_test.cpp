// The CUDA backend's batch layout, which is host code and so runs on every machine: rows in item
// order with their positions, identity tables for private sessions, and the logit rows that
// come back (the last logit_rows of each item) with where each goes.
#include "backend/cuda/batch_layout.h"

#include <gtest/gtest.h>

namespace kipp::cuda {
namespace {

// Sessions are not needed: the layout trusts what EvalChecker has already checked.
TEST(CudaBatchLayout, PacksEveryItemInOrderWithItsTableAndLogitRows) {
  const uint32_t vocab = 10;
  std::vector<float> logits_a(2 * vocab), logits_b(vocab);
  const std::vector<uint32_t> tokens_a = {5, 6, 7}, tokens_b = {9}, tokens_c = {1, 2};
  const std::vector<uint32_t> table_b = {4, 2};
  EvalItem items[3] = {
      {nullptr, tokens_a, 30, 2, logits_a.data(), {}},       // private: identity table, crosses a block
      {nullptr, tokens_b, 40, 1, logits_b.data(), table_b},  // pooled: its own table
      {nullptr, tokens_c, 0, 0, nullptr, {}},                // prefill chunk without logits
  };
  const BatchLayout batch = layout_batch(items, vocab);
  EXPECT_EQ(batch.rows(), 6u);
  EXPECT_EQ(batch.token_ids, (std::vector<int32_t>{5, 6, 7, 9, 1, 2}));
  EXPECT_EQ(batch.positions, (std::vector<int32_t>{30, 31, 32, 40, 0, 1}));
  EXPECT_EQ(batch.row_item, (std::vector<int32_t>{0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(batch.table_offset, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(batch.block_tables, (std::vector<int32_t>{0, 1, 4, 2, 0}));
  EXPECT_EQ(batch.logit_rows, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(batch.logit_targets, (std::vector<float*>{logits_a.data(), logits_a.data() + vocab, logits_b.data()}));
}

TEST(CudaBatchLayout, AnEmptyCallIsAnEmptyBatch) {
  EXPECT_EQ(layout_batch({}, 10).rows(), 0u);
  const std::vector<uint32_t> none;
  EvalItem item{nullptr, none, 7, 0, nullptr, {}};
  const BatchLayout batch = layout_batch(std::span(&item, 1), 10);
  EXPECT_EQ(batch.rows(), 0u);
  EXPECT_TRUE(batch.logit_rows.empty());
}

}  // namespace
}  // namespace kipp::cuda
