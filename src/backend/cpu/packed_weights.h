// The projection matrices (and the output head) copied at load into the layouts the fast kernels
// stream, so that a tile of rows reads one sequential stream instead of one per row (on the
// machines we measured that doubles the bandwidth a thread gets). The mapped source pages are
// released as each matrix is copied; the token embedding stays mapped for lookups.
//
// Q8_0 and Q4_1 matrices: rows in groups of L (the kernel set's vector width in floats), block
// by block, each group's block b one record laid out so that a vector holds one value per row
// (the kernels' lanes run over rows, so a block's scales apply to L rows in one multiply):
//   Q8_0 record: L FP16 scales, then for each column pair p = 0..15 the L rows' weights 2p and
//                2p + 1 (2L bytes);
//   Q4_1 record: L FP16 scales, L FP16 minimums, then for each i = 0..3 the L rows' bytes
//                4i..4i + 3 of ggml's 16 nibble bytes (4L bytes): low nibbles are columns
//                4i..4i + 3, high nibbles columns 16 + 4i..16 + 4i + 3.
// A record has the bytes of L ggml blocks, so the packed matrix is the size of the mapped one.
//
// FP32 and BF16 matrices: rows in panels of kPanelRows, column by column: panel p holds, for
// column c = 0, 1, ..., the kPanelRows values W[kPanelRows p + i][c]. A kernel multiplies one
// column of a panel by one activation, its vector lanes over rows. BF16 words are also
// interleaved for the kernel set's vector width L when 2L <= kPanelRows: within each run of 2L
// words, word 2i is row i and word 2i + 1 row i + L, so that one shift or one mask of 32-bit
// lanes widens L of them. In the sets whose vector holds a whole panel column (16 lanes:
// PackingLayout::bf16_column_pairs) BF16 panels go by column pairs instead: for columns 2k and
// 2k + 1, word 2i is W[i][2k] and word 2i + 1 W[i][2k + 1], so that one 64-byte load serves two
// columns (a shift and a mask widen them), and it is the pair a lane of a BF16 pair product
// multiplies.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "model/weights.h"
#include "util/error.h"

namespace kipp::cpu {

inline constexpr uint32_t kPanelRows = 16;

// What the layouts above depend on in a kernel set.
struct PackingLayout {
  uint32_t lanes;          // floats per vector: the Q8_0/Q4_1 row groups and the BF16 interleave
  bool bf16_column_pairs;  // BF16 panels by column pairs (the 16-lane sets)
};

// Whether a format is packed in panels (FP32, BF16) rather than in groups of blocks.
inline bool packs_in_panels(WeightFormat format) { return format == WeightFormat::f32 || format == WeightFormat::bf16; }

// Bytes of one 32-weight block in a format.
uint32_t block_bytes(WeightFormat format);

// One matrix in a kernel set's layout (above): what Kernels::matmul reads. A WeightView is always
// the artifact's own layout; this is the same matrix (format and shape) with its bytes reordered.
struct PackedMatrix {
  const uint8_t* data = nullptr;  // owned by whoever packed it (PackedWeights)
  WeightFormat format = WeightFormat::f32;
  uint64_t rows = 0;
  uint64_t cols = 0;
};

// One matrix in a kernel set's layout, copied with every thread of `pool`.
Result<std::unique_ptr<uint8_t[]>> pack_matrix(const WeightView& view, ThreadPool& pool, const PackingLayout& layout);

// The matrix `mapped` describes, as laid out in `packed` (pack_matrix's copy of it).
inline PackedMatrix packed_as(const WeightView& mapped, const uint8_t* packed) {
  return {packed, mapped.format, mapped.rows, mapped.cols};
}

// A layer's projections, packed; its norm gains stay in the mapped LayerWeights.
struct PackedLayer {
  PackedMatrix attn_q, attn_k, attn_v, attn_output;
  PackedMatrix ffn_gate, ffn_up, ffn_down;  // a dense layer's MLP
  // A MoE layer's router and each expert's three matrices, packed one expert at a time.
  PackedMatrix ffn_gate_inp;
  std::vector<PackedMatrix> gate_exps, up_exps, down_exps;
};

// Whether the output head is packed (and the backend computes logits): a checkpoint has one, and
// its rows fill whole panels. The rerankers' 151,669 rows do not; their scores read the final
// hidden row and two head rows, not logits (engine/rerank.h).
bool head_is_packable(const WeightView& head);

class PackedWeights {
 public:
  // Copies with every thread of `pool`, each taking its share of each matrix's row groups, in a
  // kernel set's layout. Each matrix's mapped pages are released once it is copied.
  static Result<std::unique_ptr<PackedWeights>> pack(const ModelWeights& mapped, ThreadPool& pool,
                                                     const PackingLayout& layout);

  const std::vector<PackedLayer>& layers() const { return layers_; }
  const PackedMatrix& lm_head() const { return lm_head_; }
  uint64_t bytes() const { return bytes_; }

 private:
  Result<PackedMatrix> pack_one(const WeightView& mapped, ThreadPool& pool, const PackingLayout& layout);

  std::vector<PackedLayer> layers_;
  PackedMatrix lm_head_;
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
  uint64_t bytes_ = 0;
};

}  // namespace kipp::cpu
