// Products of int16 activations with Q8_0 and Q4_1 weights in tile registers (the amx set:
// AMX-TILE, AMX-INT8); empty in the other sets. matmul_blocks (kernels_impl.h) gives them
// every full tile of 16 tokens.
// One part of every kernel set: kernels_impl.h includes it once in each kernels_<isa>.cpp,
// after the parts before it, whose names it uses.
#pragma once

#if KIPP_AMX
namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

// One tile multiply sums 8-bit products exactly into int32: 16 tokens by 16 rows over one block.
// The int16 activations go in as their two byte planes (split_int16), so two multiplies, weights
// by low bytes (unsigned) and weights by high bytes (signed), give low + 256 high: the very
// integer sum the vector tiles form. Each block's sums are then folded by the same Product::fold,
// so a token's outputs have the same bits whichever path its tile took, and batch invariance
// holds across both.
constexpr int kAmxTokens = kPlaneTokens;
constexpr size_t kPlaneBlockBytes = kAmxTokens * 2 * kBlock;  // a block of 16 tokens' planes

// Where block b of the planes of token t's group of 16 tokens starts, `blocks` blocks a row: each
// token's 32 low bytes and 32 high bytes, token after token, so that a tile reads one contiguous
// kilobyte.
size_t plane_block(uint32_t t, uint64_t blocks, uint64_t b) { return (t / kAmxTokens * blocks + b) * kPlaneBlockBytes; }

// The record's weights as a tile's right operand (16 rows x 32 columns), into `staged`: tile
// row q holds columns 4q..4q + 3 of each row, that is the record's column pairs 2q and 2q + 1
// interleaved two bytes at a time.
const uint8_t* tile_weights(Q8_0ByInt16, const uint8_t* rec, uint8_t* staged) {
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int q = 0; q < kBlock / 4; ++q) {
    const __m512i pairs = _mm512_loadu_si512(rec + 2 * kLanes + q * 4 * kLanes);
    _mm512_store_si512(staged + q * 64, _mm512_permutexvar_epi16(interleave, pairs));
  }
  return staged;
}

// The record's nibbles as a tile's right operand (16 rows x 32 columns), one byte each, into
// `staged`: tile row q < 4 holds the low nibbles of step q (columns 4q..4q + 3), row 4 + q its
// high nibbles (columns 16 + 4q..).
const uint8_t* tile_weights(Q4_1ByInt16, const uint8_t* rec, uint8_t* staged) {
  const __m512i low = _mm512_set1_epi8(15);
  for (int q = 0; q < Q4_1ByInt16::kSteps; ++q) {
    const __m512i bytes = _mm512_loadu_si512(rec + 4 * kLanes + q * 4 * kLanes);
    _mm512_store_si512(staged + q * 64, _mm512_and_si512(bytes, low));
    const __m512i high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
    _mm512_store_si512(staged + (Q4_1ByInt16::kSteps + q) * 64, high);
  }
  return staged;
}

// Tile registers: 0 and 1 the activations' low and high planes (16 tokens x 32 bytes), 2 and 3
// the weights of a row group (8 rows of 4 columns x 16 rows) for even and odd blocks, 4..7 the
// sums (16 tokens x 16 rows of int32), low and high planes, 4 and 5 for even blocks, 6 and 7 for
// odd ones: while one block's sums are folded, the next block's are being multiplied.
struct alignas(64) TileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
};
constexpr TileConfig kTileConfig = {1,
                                    0,
                                    {},
                                    {32, 32, 64, 64, 64, 64, 64, 64},
                                    {kAmxTokens, kAmxTokens, kBlock / 4, kBlock / 4, kAmxTokens, kAmxTokens, kAmxTokens,
                                     kAmxTokens}};

// The tile registers' shapes, for the products of one matmul call, and their release after it.
void configure_tiles() { _tile_loadconfig(&kTileConfig); }
void release_tiles() { _tile_release(); }

// A block's integer sums for 16 tokens and 16 rows: low planes, then high planes.
typedef int32_t BlockSums[2][kAmxTokens][kLanes];

// Block b's sums into `sums`, through the tiles of parity P. (GCC's tile intrinsics paste their
// tile numbers into assembly text, so each parity spells its numbers out.)
#define KIPP_MULTIPLY_BLOCK(weight_tile, low_tile, high_tile) \
  _tile_loadd(weight_tile, weights, 64);                      \
  _tile_zero(low_tile);                                       \
  _tile_zero(high_tile);                                      \
  _tile_dpbusd(low_tile, 0, weight_tile);                     \
  _tile_dpbssd(high_tile, 1, weight_tile);                    \
  _tile_stored(low_tile, sums[0], 64);                        \
  _tile_stored(high_tile, sums[1], 64);

template <int P>
void multiply_block(const uint8_t* planes, const uint8_t* weights, BlockSums& sums) {
  _tile_loadd(0, planes, 2 * kBlock);
  _tile_loadd(1, planes + kBlock, 2 * kBlock);
  if constexpr (P == 0) {
    KIPP_MULTIPLY_BLOCK(2, 4, 5)
  } else {
    KIPP_MULTIPLY_BLOCK(3, 6, 7)
  }
}
#undef KIPP_MULTIPLY_BLOCK

// low + 256 high for each token, folded into its accumulator as the vector tiles fold a block.
template <class Product>
void fold_block(vf (&acc)[kAmxTokens], const BlockSums& sums, const uint8_t* rec, const MatmulArgs& a, uint32_t token0,
                uint64_t b) {
  for (int t = 0; t < kAmxTokens; ++t) {
    vi32 low, high;
    __builtin_memcpy(&low, sums[0][t], sizeof low);
    __builtin_memcpy(&high, sums[1][t], sizeof high);
    acc[t] = Product::fold(acc[t], low + high * 256, rec, a, token0 + t, b);
  }
}

// 16 rows from row0 by 16 tokens from token0, block after block: each block is multiplied while
// the one before it is folded, and the next one's weights are staged in the tiles' layout.
template <class Product>
void product_tile_amx(const MatmulArgs& a, uint32_t row0, uint32_t token0) {
  alignas(64) uint8_t staged[2][kBlock * kLanes];
  alignas(64) BlockSums sums[2];
  vf acc[kAmxTokens];
  for (vf& v : acc) v = vf{};
  const uint64_t blocks = a.weight->cols / kBlock;
  const uint8_t* weights = tile_weights(Product{}, record<Product::kFormat>(a, row0, 0), staged[0]);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* current = weights;
    // Ask for block b + 2's record now: a tile load stalls on memory the vector loads' reordering
    // would have hidden (measured: ~8% of a Q8_0 prefill).
    if (b + 2 < blocks) {
      const uint8_t* ahead = record<Product::kFormat>(a, row0, b + 2);
      for (int line = 0; line < 9; ++line) __builtin_prefetch(ahead + line * 64);
    }
    if (b + 1 < blocks)
      weights = tile_weights(Product{}, record<Product::kFormat>(a, row0, b + 1), staged[(b + 1) % 2]);
    const uint8_t* planes = a.x_int16_planes + plane_block(token0, blocks, b);
    if (b % 2) multiply_block<1>(planes, current, sums[1]);
    else multiply_block<0>(planes, current, sums[0]);
    if (b > 0) fold_block<Product>(acc, sums[(b - 1) % 2], record<Product::kFormat>(a, row0, b - 1), a, token0, b - 1);
  }
  fold_block<Product>(acc, sums[(blocks - 1) % 2], record<Product::kFormat>(a, row0, blocks - 1), a, token0,
                      blocks - 1);
  for (int t = 0; t < kAmxTokens; ++t) store_f32(a.out[token0 + t] + row0, Product::finish(acc[t], a, token0 + t));
}

template <class Product>
void rows_of_tile_amx(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0) {
  for (uint32_t r = row_begin; r < row_end; r += kLanes) product_tile_amx<Product>(a, r, token0);
}

void split_int16(const int16_t* x, uint32_t n, uint32_t token, uint8_t* planes) {
  const uint64_t blocks = n / kBlock;
  for (uint64_t b = 0; b < blocks; ++b) {
    const __m512i values = _mm512_loadu_si512(x + b * kBlock);
    uint8_t* out = planes + plane_block(token, blocks, b) + token % kAmxTokens * 2 * kBlock;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi16_epi8(values));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kBlock), _mm512_cvtepi16_epi8(_mm512_srai_epi16(values, 8)));
  }
}

}  // namespace
}  // namespace kipp::cpu::KIPP_KERNEL_NS
#endif
