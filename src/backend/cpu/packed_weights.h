// The projection matrices (and the output head) copied at load into the layout the fast kernels
// stream: rows in groups of kPackRows, and within a group block b of every row, then block b + 1.
// A tile of up to kPackRows rows then reads one sequential stream instead of one per row, which
// on the machines we measured doubles the bandwidth a thread gets. Blocks keep their format's
// bytes (Q8_0 or Q4_1 blocks, BF16 words). BF16 words are also interleaved for the kernel set's
// vector width L: within each run of 2L words, word 2i is element i and word 2i + 1 element i + L,
// so that a kernel widens L of them with one shift or one mask of 32-bit lanes. The mapped source
// pages are released as each matrix is copied; the token embedding stays mapped for lookups.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "model/weights.h"
#include "util/error.h"

namespace kipp::cpu {

inline constexpr uint32_t kPackRows = 8;

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
