// The fast CPU backend's inner loops, one table per instruction set. Every set is compiled from
// the same source (kernels_impl.h) with different target flags, and the backend picks one table
// at model load. Each output element is reduced in one fixed order (the set's vector lanes over
// the inner dimension, then a fixed tree), whatever the tile, batch or thread count: that is what
// makes the backend batch- and chunk-invariant.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/packed_weights.h"
#include "backend/kv_format.h"
#include "model/weights.h"

namespace kipp::cpu {

// How a product takes its activations: FP32 weights and BF16 weights multiply x itself; quantized
// weights multiply x quantized, each block's products summed exactly in integers before its scales
// are applied in FP32.
//   int16        one scale per token (Kernels::quantize_activation): Q8_0 weights, and Q4_1 weights by
//                default. Relative to the largest element the error is below 1/65534, far under
//                what the weights carry: the fast backend stays within 1e-5 of cpu-ref.
//   int8_blocks  one scale per 32-value block with the block's sum (quantize_activation_blocks),
//                as llama.cpp's Q8_1: Q4_1 weights with --int8-activations. The integer products
//                run at twice the width of int16 ones; the error they add is a small fraction of
//                the 4-bit weights' own, but not nothing (KERNELS.md has the measurements).
//   bf16         x rounded to BF16 (round_bf16): BF16 weights with --bf16-activations, in the set
//                with BF16 pair products (avx512bf16), which multiplies two BF16 pairs per FP32
//                lane; the rounding's cost is measured in KERNELS.md.
enum class ActivationForm { f32, int16, int8_blocks, bf16 };

// out[t][r] = sum_c W[r][c] * x[t][c] for tokens t < tokens and rows row_begin <= r < row_end.
// W is packed (PackedMatrix); row_begin and row_end are multiples of kPanelRows.
struct MatmulArgs {
  const PackedMatrix* weight;
  ActivationForm form;             // what the product reads: x, or one of the quantized forms below
  const float* x;                  // tokens rows of weight->cols values, x_stride apart
  const uint16_t* x_bf16;          // bf16: the same rows rounded to BF16, x_stride apart
  const int16_t* x_int16;          // int16: the same rows, x_stride apart
  const float* x_scale;            // int16: per token, x ~= x_int16 * x_scale
  const float* x_int16_block_sum;  // int16: per token and 32-value block (x_stride / 32 per token), the x_int16 sum
  const uint8_t* x_int16_planes;   // int16, sets with tiles: x_int16 split (Kernels::split_int16), from token 0
  const int8_t* x_int8;            // int8_blocks: the same rows, x_stride apart
  const float* x_block_scale;      // int8_blocks: per token and block, x ~= x_int8 * scale
  const float* x_block_sum;        // int8_blocks: per token and block, scale * the sum of the block's x_int8
  size_t x_stride;
  uint32_t tokens;
  float* const* out;  // one output row per token (weight->rows values each)
  uint32_t row_begin, row_end;
  const float* fp16_table;  // the 65,536 FP16 values widened, for block scales
};

// Attention of up to kAttentionTokens tokens of one session over one chunk of positions
// (kAttentionChunk positions, starting at a multiple of it; each token's part ends at its own
// position), for a range of KV heads and the query heads that share them, read through the
// session's block table. Each token's result is a chunk partial: per query head the softmax
// weights' maximum score, their sum, and the weighted sum of V rows, none normalized; attention.h
// folds the partials of a token's chunks in order. The tokens share each K and V row the cache
// hands over, but every token's arithmetic is its own and the same as alone, in the same order:
// a token's result depends neither on its companions nor on how its chunks are spread over
// threads.
inline constexpr uint32_t kAttentionChunk = 256;
inline constexpr uint32_t kAttentionTokens = 4;

// One token's part of an attention job.
struct AttentionToken {
  const float* q;     // the token's query heads, normed and rotated: q_heads x head_dim
  uint32_t end;       // its positions in the chunk end here (at most the chunk's end)
  float* sums;        // per query head (indexed by absolute head): head_dim weighted V sums
  float* max_score;   // per query head
  float* weight_sum;  // per query head
  float* scores;      // scratch: 32 per query head
};

struct AttentionArgs {
  AttentionToken token[kAttentionTokens];
  uint32_t tokens;            // 1 to kAttentionTokens
  uint32_t kv_begin, kv_end;  // the KV heads of this job
  uint32_t group_heads;       // query heads per KV head
  uint32_t head_dim;
  KvFormat kv_format;        // how the rows are stored (backend/kv_store.h)
  const std::byte* k_layer;  // this layer's K store: [physical block][32][row]
  const std::byte* v_layer;
  size_t row_bytes;         // bytes of one row (kv_heads x head_dim values)
  size_t block_bytes;       // bytes of a physical block (32 rows)
  const uint32_t* table;    // logical -> physical block; null for identity
  uint32_t begin;           // the chunk's first position, a multiple of 32
  float scale;              // 1 / sqrt(head_dim)
  const float* fp16_table;  // fp16_table(), for Q8_0 row scales
};

// The form products with weights of a format take (MatmulArgs), with or without
// --int8-activations and --bf16-activations.
inline ActivationForm activation_form(WeightFormat format, bool int8_activations, bool bf16_activations) {
  switch (format) {
    case WeightFormat::q8_0: return ActivationForm::int16;
    case WeightFormat::affine4: return int8_activations ? ActivationForm::int8_blocks : ActivationForm::int16;
    case WeightFormat::bf16: return bf16_activations ? ActivationForm::bf16 : ActivationForm::f32;
    default: return ActivationForm::f32;
  }
}

struct Kernels {
  const char* isa;
  // How the set wants its weights packed (floats per vector; BF16 panels by column pairs in the
  // 16-lane sets). Products with BF16 weights take ActivationForm::bf16 where round_bf16 is set.
  PackingLayout packing;
  void (*matmul)(const MatmulArgs&);
  void (*attention)(const AttentionArgs&);
  // x (n values, a multiple of 32) as int16 with one scale, max |x| -> 32767, rounded to nearest
  // even; block_sum[b] is the sum of block b's int16 values (exact in a float: at most
  // 32 x 32767), what a Q4_1 block's minimum multiplies. All zeros: scale 0; a non-finite value:
  // scale NaN, so the products are NaN as in FP32.
  void (*quantize_activation)(const float* x, uint32_t n, int16_t* out, float* scale, float* block_sum);
  // x (n values, a multiple of 32) as int8 per 32-value block: block b's largest magnitude maps
  // to 127, every value rounds to nearest even; scale[b] = largest / 127 and sum[b] = scale[b]
  // times the sum of the block's int8 values (what a Q4_1 block's minimum multiplies). An
  // all-zero block has scale 0; a non-finite value makes its block's scale NaN.
  void (*quantize_activation_blocks)(const float* x, uint32_t n, int8_t* out, float* scale, float* sum);
  // Sets with tile products (amx; null elsewhere): the int16 activations of token `token` (n
  // values, a multiple of 32) as the byte planes tiles multiply, written into the planes of its
  // matrix (kPlaneTokens tokens' bytes of a block together, tile_planes_bytes): per 32-value
  // block its 32 low bytes (unsigned) then its 32 high bytes (signed), x = 256 high + low, so that
  // two 8-bit tile products make the int16 sums exactly.
  void (*split_int16)(const int16_t* x, uint32_t n, uint32_t token, uint8_t* planes);
  // Sets with BF16 pair products (null elsewhere): x (n values, a multiple of 32) rounded to
  // BF16, to nearest even, as f32_to_bf16 (a NaN stays a NaN, made quiet; subnormals are kept,
  // and the pair products read them as zeros).
  void (*round_bf16)(const float* x, uint32_t n, uint16_t* out);
};

// The byte planes of a matrix of `tokens` rows of `width` int16 activations (split_int16): two
// bytes per value, for whole groups of kPlaneTokens tokens.
inline constexpr uint32_t kPlaneTokens = 16;
inline size_t tile_planes_bytes(uint32_t tokens, uint32_t width) {
  return size_t(tokens + kPlaneTokens - 1) / kPlaneTokens * kPlaneTokens * width * 2;
}

const Kernels& portable_kernels();
// The x86 sets, built on x86-64 only.
const Kernels& avx2_kernels();
const Kernels& avx512_kernels();
const Kernels& avx512bf16_kernels();
const Kernels& amx_kernels();
// The table of a kernel set (cpu_features.h chooses which).
const Kernels& kernels_for(Isa isa);

// FP16 -> FP32 for every bit pattern, built once.
const float* fp16_table();

}  // namespace kipp::cpu
