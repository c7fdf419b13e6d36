// The projection matrices (and the output head) copied at load into the layouts the fast kernels
// stream, so that a tile of rows reads one sequential stream instead of one per row (on the
// machines we measured that doubles the bandwidth a thread gets). The mapped source pages are
// released as each matrix is copied; the token embedding stays mapped for lookups.
//
// Q8_0 and Q4_1 matrices: rows in groups of kPackRows, and within a group block b of every row,
// then block b + 1; blocks keep their ggml bytes.
//
// FP32 and BF16 matrices: rows in panels of kPanelRows, column by column: panel p holds, for
// column c = 0, 1, ..., the kPanelRows values W[kPanelRows p + i][c]. A kernel multiplies one
// column of a panel by one activation, its vector lanes over rows. BF16 words are also
// interleaved for the kernel set's vector width L when 2L <= kPanelRows: within each run of 2L
// words, word 2i is row i and word 2i + 1 row i + L, so that one shift or one mask of 32-bit
// lanes widens L of them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "model/weights.h"
#include "util/error.h"

namespace kipp::cpu {

inline constexpr uint32_t kPackRows = 8;
inline constexpr uint32_t kPanelRows = 16;

// Whether a format is packed in panels (FP32, BF16) rather than in groups of blocks.
inline bool packs_in_panels(WeightFormat format) { return format == WeightFormat::f32 || format == WeightFormat::bf16; }

// Bytes of one 32-weight block in a format.
uint32_t block_bytes(WeightFormat format);

class PackedWeights {
 public:
  // Copies with every thread of `pool`, each taking its share of each matrix's row groups; BF16
  // words are interleaved for vectors of `lanes` floats.
  static Result<std::unique_ptr<PackedWeights>> pack(const ModelWeights& mapped, ThreadPool& pool, uint32_t lanes);

  // Every view of `mapped`, the projections and output head pointing at the packed copies.
  const ModelWeights& weights() const { return views_; }
  uint64_t bytes() const { return bytes_; }

 private:
  Status pack_matrix(WeightView& view, ThreadPool& pool, uint32_t lanes);

  ModelWeights views_;
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
  uint64_t bytes_ = 0;
};

}  // namespace kipp::cpu
