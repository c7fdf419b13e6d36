// The single source of every kernel set. A kernels_<isa>.cpp file defines KIPP_KERNEL_NS (its
// namespace), KIPP_KERNEL_NAME, KIPP_LANES (floats per vector), KIPP_TILE_ROWS (vectors of
// kLanes rows) and KIPP_TILE_TOKENS (the register tile of a token tile over Q8_0 and Q4_1 weights),
// KIPP_TILE_PANELS and KIPP_PANEL_TOKENS (the same over FP32 and BF16 weights), KIPP_AMX (1 where
// products of int16 activations also run in tile registers), includes this file, and is compiled
// with that instruction set's flags.
//
// Nothing here may be an inline function or template with external linkage shared with other
// files (std:: templates included): the linker would keep one copy, compiled for whichever
// instruction set it saw first. Everything is in an anonymous namespace and uses only builtins
// and the compiler's intrinsics (always inlined, never emitted as shared copies).
//
// The portable set (KIPP_LANES 4) is plain C++ with GCC's vector extensions, for any processor;
// only the x86 sets (8 and 16 lanes, AMX) use x86 intrinsics.
#ifndef KIPP_AMX
#define KIPP_AMX 0
#endif

#if KIPP_LANES > 4 || KIPP_AMX
#include <immintrin.h>
#endif

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

constexpr int kLanes = KIPP_LANES;
constexpr int kTileRows = KIPP_TILE_ROWS;
constexpr int kTileTokens = KIPP_TILE_TOKENS;
constexpr int kTilePanels = KIPP_TILE_PANELS;
constexpr int kPanelTokens = KIPP_PANEL_TOKENS;
constexpr int kPanelVecs = int(kPanelRows) / kLanes;  // vectors of one panel column
constexpr int kBlock = 32;               // weights per quantization block
constexpr int kVecs = kBlock / kLanes;   // vectors per block

typedef float vf __attribute__((vector_size(4 * kLanes)));
typedef uint32_t vu32 __attribute__((vector_size(4 * kLanes)));
typedef int32_t vi32 __attribute__((vector_size(4 * kLanes)));
typedef uint16_t vu16 __attribute__((vector_size(2 * kLanes)));
// 2 x kLanes int16: the pairs one multiply-add instruction turns into kLanes int32 sums.
typedef int16_t vi16 __attribute__((vector_size(4 * kLanes)));
typedef int8_t vi8x2 __attribute__((vector_size(2 * kLanes)));

vf load_f32(const float* p) {
  vf v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

void store_f32(float* p, vf v) { __builtin_memcpy(p, &v, sizeof v); }

// Widening conversions. The generic vector forms are what the portable set uses; where the
// compiler would split them into scalar code, the AVX sets say the one instruction they mean.
vf load_bf16(const uint16_t* p) {
#if KIPP_LANES == 16
  return (vf)_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
#elif KIPP_LANES == 8
  return (vf)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
#else
  vu16 raw;
  __builtin_memcpy(&raw, p, sizeof raw);
  return (vf)(__builtin_convertvector(raw, vu32) << 16);
#endif
}

vf splat(float value) {
#if KIPP_LANES == 16
  return _mm512_set1_ps(value);
#elif KIPP_LANES == 8
  return _mm256_set1_ps(value);
#else
  return vf{value, value, value, value};
#endif
}

// a * b + c. Fused, with one rounding, wherever the set has FMA; written out so that no
// compiler's choice of where to contract can make two tiles round differently (the sets are
// compiled with -ffp-contract=off).
vf madd(vf a, vf b, vf c) {
#if KIPP_LANES == 16
  return _mm512_fmadd_ps(a, b, c);
#elif KIPP_LANES == 8
  return _mm256_fmadd_ps(a, b, c);
#else
  return a * b + c;
#endif
}

// The 16 (or 8, 4) lanes summed in a fixed tree: halves, then quarters, down to one.
float reduce(vf v) {
#if KIPP_LANES == 16 || KIPP_LANES == 8
#if KIPP_LANES == 16
  const __m256 eight = _mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
#else
  const __m256 eight = v;
#endif
  __m128 four = _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
  four = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(four, _mm_shuffle_ps(four, four, 1)));
#else
  float lanes[kLanes];
  __builtin_memcpy(lanes, &v, sizeof v);
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) lanes[i] += lanes[i + width];
  return lanes[0];
#endif
}

// The largest lane (a comparison's loser kept on ties and NaN, as the maximum of a scalar loop).
float largest_lane(vf v) {
  float lanes[kLanes];
  __builtin_memcpy(lanes, &v, sizeof v);
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) lanes[i] = lanes[i + width] > lanes[i] ? lanes[i + width] : lanes[i];
  return lanes[0];
}

// Four vectors summed at once, each in reduce's tree (lanes i and i + 8, then i + 4, i + 2,
// i + 1, the same additions in the same order, so the same bits), sharing the shuffles: four
// attention scores (any four accumulators of a token, head and position each).
void reduce4(const vf* v, float* out) {
#if KIPP_LANES == 16
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], 0x44), _mm512_shuffle_f32x4(v[0], v[1], 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(v[2], v[3], 0x44), _mm512_shuffle_f32x4(v[2], v[3], 0xEE));
  __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  x = _mm512_add_ps(x, _mm512_permute_ps(x, 0xEE));
  x = _mm512_add_ps(x, _mm512_permute_ps(x, 0x01));
  const __m512 firsts = _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), x);
  _mm_storeu_ps(out, _mm512_castps512_ps128(firsts));
#else
  for (int j = 0; j < 4; ++j) out[j] = reduce(v[j]);
#endif
}

// ---- Products with Q8_0 and Q4_1 weights ------------------------------------------------------
// The packed records (packed_weights.h) put one row in each vector lane, so a block's integer
// sums for kLanes rows come out in one vector, and its scales apply to all of them in one
// multiply. Every row's block sum is exact in int32 whatever the instructions, so each output is
// the same sequence of FP32 steps in every tile: for each block in order,
// acc = fma(float(sum), block scale, acc) (+ the Q4_1 minimum's term).

typedef uint8_t vu8 __attribute__((vector_size(4 * kLanes)));  // 4 bytes per lane
typedef uint16_t vu16x2 __attribute__((vector_size(4 * kLanes)));

int32_t load_i32(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// kLanes FP16 values (a record's scales or minimums), widened exactly.
vf load_fp16(const uint8_t* p, const float* table) {
#if KIPP_LANES == 16
  (void)table;
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif KIPP_LANES == 8
  (void)table;
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
  vf v;
  for (int i = 0; i < kLanes; ++i) {
    uint16_t bits;
    __builtin_memcpy(&bits, p + 2 * i, 2);
    v[i] = table[bits];
  }
  return v;
#endif
}

// 2 kLanes int8 weights (one column pair of kLanes rows), sign-extended to int16.
vi16 widen_pair_i8(const uint8_t* p) {
#if KIPP_LANES == 16
  return (vi16)_mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif KIPP_LANES == 8
  return (vi16)_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
  vi8x2 q;
  __builtin_memcpy(&q, p, sizeof q);
  return __builtin_convertvector(q, vi16);
#endif
}

// Lane r: sums + w[2r] x0 + w[2r + 1] x1, where `pair` holds the int16 activations x0, x1.
vi32 add_pair_products(vi32 sums, vi16 w, int32_t pair) {
#if KIPP_LANES == 16
  return (vi32)_mm512_dpwssd_epi32((__m512i)sums, (__m512i)w, _mm512_set1_epi32(pair));
#elif KIPP_LANES == 8
  return sums + (vi32)_mm256_madd_epi16((__m256i)w, _mm256_set1_epi32(pair));
#else
  int16_t x[2];
  __builtin_memcpy(x, &pair, 4);
  const vi32 even = __builtin_convertvector(__builtin_shufflevector(w, w, 0, 2, 4, 6), vi32);
  const vi32 odd = __builtin_convertvector(__builtin_shufflevector(w, w, 1, 3, 5, 7), vi32);
  return sums + even * int32_t(x[0]) + odd * int32_t(x[1]);
#endif
}

// Lane r of the result adds w[4r] x0 + ... + w[4r + 3] x3 (unsigned weights, signed activations)
// to the running sums, where `quad` holds the int8 activations x0..x3. With VNNI each step adds
// into int32 lanes; AVX2 adds pairs into int16 lanes, widened once per block by quad_totals (no
// sum can overflow them: a block adds 8 steps of two products of at most 15 x 127).
#if KIPP_LANES == 16
typedef vi32 vquad;
vquad add_quad_products(vquad sums, vu8 w, int32_t quad) {
  return (vquad)_mm512_dpbusd_epi32((__m512i)sums, (__m512i)w, _mm512_set1_epi32(quad));
}
vi32 quad_totals(vquad sums) { return sums; }
#elif KIPP_LANES == 8
typedef vi16 vquad;
vquad add_quad_products(vquad sums, vu8 w, int32_t quad) {
  return sums + (vi16)_mm256_maddubs_epi16((__m256i)w, _mm256_set1_epi32(quad));
}
vi32 quad_totals(vquad sums) { return (vi32)_mm256_madd_epi16((__m256i)sums, _mm256_set1_epi16(1)); }
#else
typedef vi32 vquad;
vquad add_quad_products(vquad sums, vu8 w, int32_t quad) {
  int8_t x[4];
  __builtin_memcpy(x, &quad, 4);
  for (int r = 0; r < kLanes; ++r)
    sums[r] += int32_t(w[4 * r]) * x[0] + int32_t(w[4 * r + 1]) * x[1] + int32_t(w[4 * r + 2]) * x[2] +
               int32_t(w[4 * r + 3]) * x[3];
  return sums;
}
vi32 quad_totals(vquad sums) { return sums; }
#endif

// Accumulators set one by one (an aggregate zero-fill made compilers clear a stack copy).
template <class V, int R, int T>
void clear(V (&acc)[R][T]) {
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = V{};
}

// The record of block b for the kLanes rows from row0 (a multiple of kLanes): kLanes ggml blocks'
// bytes, 34 each for Q8_0 and 20 for Q4_1.
template <WeightFormat F>
const uint8_t* record(const MatmulArgs& a, uint32_t row0, uint64_t block) {
  constexpr uint64_t kRecordBytes = kLanes * (F == WeightFormat::q8_0 ? 34 : 20);
  const uint64_t blocks = a.weight->cols / kBlock;
  return a.weight->data + (row0 / kLanes * blocks + block) * kRecordBytes;
}

// One block's products for kLanes rows (a record) by one token, in three kinds. Each takes the
// block in kSteps steps: the step's weights are widened once for every token of the tile, then
// added into each token's integer sums; fold turns a block's sums into the FP32 accumulator, and
// finish applies what is left once per output. The tile below runs the same skeleton for all.

// Q8_0 weights, int16 activations: a step is one column pair, sign-extended to int16.
struct Q8_0ByInt16 {
  static constexpr WeightFormat kFormat = WeightFormat::q8_0;
  static constexpr int kSteps = kBlock / 2;
  typedef vi32 Sums;
  typedef vi16 Step;
  static Step widen(const uint8_t* rec, int step) { return widen_pair_i8(rec + 2 * kLanes + step * 2 * kLanes); }
  static Sums add(Sums sums, Step w, const MatmulArgs& a, uint32_t token, uint64_t b, int step) {
    return add_pair_products(sums, w, load_i32(a.x_int16 + token * a.x_stride + b * kBlock + 2 * step));
  }
  // acc = fma(float(sum), scale, acc); the token's scale multiplies the total.
  static vf fold(vf acc, Sums sums, const uint8_t* rec, const MatmulArgs& a, uint32_t, uint64_t) {
    return madd(__builtin_convertvector(sums, vf), load_fp16(rec, a.fp16_table), acc);
  }
  static vf finish(vf acc, const MatmulArgs& a, uint32_t token) { return acc * splat(a.x_scale[token]); }
#if KIPP_AMX
  // The record's weights as a tile's right operand (16 rows x 32 columns), into `staged`: tile
  // row q holds columns 4q..4q + 3 of each row, that is the record's column pairs 2q and 2q + 1
  // interleaved two bytes at a time.
  static const uint8_t* tile_weights(const uint8_t* rec, uint8_t* staged) {
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int q = 0; q < kBlock / 4; ++q) {
      const __m512i pairs = _mm512_loadu_si512(rec + 2 * kLanes + q * 4 * kLanes);
      _mm512_store_si512(staged + q * 64, _mm512_permutexvar_epi16(interleave, pairs));
    }
    return staged;
  }
#endif
};

// Q4_1 weights, int16 activations (the default for Q4_1). A step is 4 of a row's 16 nibble bytes
// per lane, columns c..c + 3 in their low nibbles and 16 + c..16 + c + 3 in their high ones; one
// shift and one mask make int16 pairs of columns (c, c + 2), (c + 1, c + 3) and their high
// twins, multiplied by the matching activation pairs.
int32_t int16_pair(const int16_t* x, int first, int second) {
  return int32_t(uint32_t(uint16_t(x[first])) | uint32_t(uint16_t(x[second])) << 16);
}

struct Q4_1ByInt16 {
  static constexpr WeightFormat kFormat = WeightFormat::affine4;
  static constexpr int kSteps = 4;
  typedef vi32 Sums;
  struct Step {
    vi16 pairs[4];
  };
  static Step widen(const uint8_t* rec, int step) {
    vu32 bytes;
    __builtin_memcpy(&bytes, rec + 4 * kLanes + step * 4 * kLanes, sizeof bytes);
    Step w;
    for (int k = 0; k < 4; ++k) w.pairs[k] = (vi16)((bytes >> (k % 2 * 8 + k / 2 * 4)) & 0x000F000Fu);
    return w;
  }
  static Sums add(Sums sums, const Step& w, const MatmulArgs& a, uint32_t token, uint64_t b, int step) {
    const int16_t* x = a.x_int16 + token * a.x_stride + b * kBlock + 4 * step;
    sums = add_pair_products(sums, w.pairs[0], int16_pair(x, 0, 2));
    sums = add_pair_products(sums, w.pairs[1], int16_pair(x, 1, 3));
    sums = add_pair_products(sums, w.pairs[2], int16_pair(x, 16, 18));
    return add_pair_products(sums, w.pairs[3], int16_pair(x, 17, 19));
  }
  // acc = fma(float(sum), scale, acc), then fma(minimum, the block's int16 sum, acc); the token's
  // scale multiplies the total.
  static vf fold(vf acc, Sums sums, const uint8_t* rec, const MatmulArgs& a, uint32_t token, uint64_t b) {
    acc = madd(__builtin_convertvector(sums, vf), load_fp16(rec, a.fp16_table), acc);
    const float x_sum = a.x_int16_block_sum[token * (a.x_stride / kBlock) + b];
    return madd(load_fp16(rec + 2 * kLanes, a.fp16_table), splat(x_sum), acc);
  }
  static vf finish(vf acc, const MatmulArgs& a, uint32_t token) { return acc * splat(a.x_scale[token]); }
#if KIPP_AMX
  // The record's nibbles as a tile's right operand (16 rows x 32 columns), one byte each, into
  // `staged`: tile row q < 4 holds the low nibbles of step q (columns 4q..4q + 3), row 4 + q its
  // high nibbles (columns 16 + 4q..).
  static const uint8_t* tile_weights(const uint8_t* rec, uint8_t* staged) {
    const __m512i low = _mm512_set1_epi8(15);
    for (int q = 0; q < kSteps; ++q) {
      const __m512i bytes = _mm512_loadu_si512(rec + 4 * kLanes + q * 4 * kLanes);
      _mm512_store_si512(staged + q * 64, _mm512_and_si512(bytes, low));
      _mm512_store_si512(staged + (kSteps + q) * 64, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low));
    }
    return staged;
  }
#endif
};

// Q4_1 weights, int8 block activations (--int8-activations): a step is the same 4 nibble bytes
// per lane, multiplying signed bytes four at a time.
struct Q4_1ByInt8 {
  static constexpr WeightFormat kFormat = WeightFormat::affine4;
  static constexpr int kSteps = 4;
  typedef vquad Sums;
  struct Step {
    vu8 low, high;  // columns 4i..4i + 3, and 16 + 4i..16 + 4i + 3
  };
  static Step widen(const uint8_t* rec, int step) {
    vu8 bytes;
    __builtin_memcpy(&bytes, rec + 4 * kLanes + step * 4 * kLanes, sizeof bytes);
    return {bytes & 15, (vu8)((vu16x2)bytes >> 4) & 15};
  }
  static Sums add(Sums sums, const Step& w, const MatmulArgs& a, uint32_t token, uint64_t b, int step) {
    const int8_t* x = a.x_int8 + token * a.x_stride + b * kBlock + 4 * step;
    return add_quad_products(add_quad_products(sums, w.low, load_i32(x)), w.high, load_i32(x + 16));
  }
  // acc = fma(float(sum), scale x the block's x scale, acc), then fma(minimum, the block's x sum, acc).
  static vf fold(vf acc, Sums sums, const uint8_t* rec, const MatmulArgs& a, uint32_t token, uint64_t b) {
    const size_t xb = token * (a.x_stride / kBlock) + b;
    const vf scale = load_fp16(rec, a.fp16_table) * splat(a.x_block_scale[xb]);
    acc = madd(__builtin_convertvector(quad_totals(sums), vf), scale, acc);
    return madd(load_fp16(rec + 2 * kLanes, a.fp16_table), splat(a.x_block_sum[xb]), acc);
  }
  static vf finish(vf acc, const MatmulArgs&, uint32_t) { return acc; }
};

// R x kLanes rows from row0 by T tokens from token0: block after block, step after step, each
// step's weights widened once for the T tokens; each (row vector, token) pair's integer sums are
// folded into its FP32 accumulator at the block's end.
template <class Product, int R, int T>
void product_tile(const MatmulArgs& a, uint32_t row0, uint32_t token0) {
  vf acc[R][T];
  clear(acc);
  const uint64_t blocks = a.weight->cols / kBlock;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* rec[R];
    for (int r = 0; r < R; ++r) rec[r] = record<Product::kFormat>(a, row0 + r * kLanes, b);
    typename Product::Sums sums[R][T];
    clear(sums);
    for (int step = 0; step < Product::kSteps; ++step) {
      typename Product::Step w[R];
      for (int r = 0; r < R; ++r) w[r] = Product::widen(rec[r], step);
      for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) sums[r][t] = Product::add(sums[r][t], w[r], a, token0 + t, b, step);
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = Product::fold(acc[r][t], sums[r][t], rec[r], a, token0 + t, b);
  }
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < R; ++r)
      store_f32(a.out[token0 + t] + row0 + r * kLanes, Product::finish(acc[r][t], a, token0 + t));
}

template <WeightFormat F, int R, int T>
void quantized_tile(const MatmulArgs& a, uint32_t row0, uint32_t token0) {
  if constexpr (F == WeightFormat::q8_0) product_tile<Q8_0ByInt16, R, T>(a, row0, token0);
  else if (a.form == ActivationForm::int8_blocks) product_tile<Q4_1ByInt8, R, T>(a, row0, token0);
  else product_tile<Q4_1ByInt16, R, T>(a, row0, token0);
}

// Rows [row_begin, row_end) (multiples of kLanes) for T tokens: tiles of R row vectors, then
// single row vectors.
template <WeightFormat F, int R, int T>
void rows_of_tile(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0) {
  uint32_t r = row_begin;
  for (; r + R * kLanes <= row_end; r += R * kLanes) quantized_tile<F, R, T>(a, r, token0);
  for (; r < row_end; r += kLanes) quantized_tile<F, 1, T>(a, r, token0);
}

// Fewer tokens than a full tile take more row vectors (kDecodeRowVecs for a single token): enough
// independent sums to hide the multiply-add latency while the weights stream.
constexpr int kDecodeRowVecs = 4;

// The last tokens of a pass, fewer than kTileTokens, in one tile of T = `count` tokens.
template <WeightFormat F, int T = kTileTokens - 1>
void quantized_tail(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0, uint32_t count) {
  if constexpr (T >= 1) {
    constexpr int R = kDecodeRowVecs / T > kTileRows ? kDecodeRowVecs / T : kTileRows;
    if (count == uint32_t(T)) return rows_of_tile<F, R, T>(a, row_begin, row_end, token0);
    quantized_tail<F, T - 1>(a, row_begin, row_end, token0, count);
  }
}

#if KIPP_AMX
// ---- Products of int16 activations in tile registers (the amx set) ----------------------------
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

// Tile registers: 0 and 1 the activations' low and high planes (16 tokens x 32 bytes), 2 and 3
// the weights of a row group (8 rows of 4 columns x 16 rows) for even and odd blocks, 4..7 the
// sums (16 tokens x 16 rows of int32), low and high planes, 4 and 5 for even blocks, 6 and 7 for
// odd ones: while one block's sums are folded, the next block's are being multiplied.
struct alignas(64) TileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
};
constexpr TileConfig kTileConfig = {
    1, 0, {}, {32, 32, 64, 64, 64, 64, 64, 64}, {kAmxTokens, kAmxTokens, kBlock / 4, kBlock / 4, kAmxTokens,
                                                 kAmxTokens, kAmxTokens, kAmxTokens}};

// A block's integer sums for 16 tokens and 16 rows: low planes, then high planes.
typedef int32_t BlockSums[2][kAmxTokens][kLanes];

// Block b's sums into `sums`, through the tiles of parity P. (GCC's tile intrinsics paste their
// tile numbers into assembly text, so each parity spells its numbers out.)
#define KIPP_MULTIPLY_BLOCK(weight_tile, low_tile, high_tile)             \
  _tile_loadd(weight_tile, weights, 64);                                  \
  _tile_zero(low_tile);                                                   \
  _tile_zero(high_tile);                                                  \
  _tile_dpbusd(low_tile, 0, weight_tile);                                 \
  _tile_dpbssd(high_tile, 1, weight_tile);                                \
  _tile_stored(low_tile, sums[0], 64);                                    \
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
void fold_block(vf (&acc)[kAmxTokens], const BlockSums& sums, const uint8_t* rec, const MatmulArgs& a,
                uint32_t token0, uint64_t b) {
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
  const uint8_t* weights = Product::tile_weights(record<Product::kFormat>(a, row0, 0), staged[0]);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* current = weights;
    // Ask for block b + 2's record now: a tile load stalls on memory the vector loads' reordering
    // would have hidden (measured: ~8% of a Q8_0 prefill).
    if (b + 2 < blocks) {
      const uint8_t* ahead = record<Product::kFormat>(a, row0, b + 2);
      for (int line = 0; line < 9; ++line) __builtin_prefetch(ahead + line * 64);
    }
    if (b + 1 < blocks) weights = Product::tile_weights(record<Product::kFormat>(a, row0, b + 1), staged[(b + 1) % 2]);
    const uint8_t* planes = a.x_int16_planes + plane_block(token0, blocks, b);
    if (b % 2) multiply_block<1>(planes, current, sums[1]);
    else multiply_block<0>(planes, current, sums[0]);
    if (b > 0) fold_block<Product>(acc, sums[(b - 1) % 2], record<Product::kFormat>(a, row0, b - 1), a, token0, b - 1);
  }
  fold_block<Product>(acc, sums[(blocks - 1) % 2], record<Product::kFormat>(a, row0, blocks - 1), a, token0,
                      blocks - 1);
  for (int t = 0; t < kAmxTokens; ++t)
    store_f32(a.out[token0 + t] + row0, Product::finish(acc[t], a, token0 + t));
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
#endif

// Rows in chunks whose weights stay in cache while every token tile passes over them.
constexpr uint32_t kRowChunk = 64;

template <WeightFormat F>
void matmul_blocks(const MatmulArgs& a) {
#if KIPP_AMX
  // Tile registers for the int16 form's full 16-token tiles; the vector tiles take the rest.
  const bool tiles = a.form == ActivationForm::int16 && a.tokens >= uint32_t(kAmxTokens);
  if (tiles) _tile_loadconfig(&kTileConfig);
#endif
  for (uint32_t chunk = a.row_begin; chunk < a.row_end; chunk += kRowChunk) {
    const uint32_t chunk_end = chunk + kRowChunk < a.row_end ? chunk + kRowChunk : a.row_end;
    uint32_t t = 0;
#if KIPP_AMX
    if (tiles)
      for (; t + kAmxTokens <= a.tokens; t += kAmxTokens) {
        if constexpr (F == WeightFormat::q8_0) rows_of_tile_amx<Q8_0ByInt16>(a, chunk, chunk_end, t);
        else rows_of_tile_amx<Q4_1ByInt16>(a, chunk, chunk_end, t);
      }
#endif
    for (; t + kTileTokens <= a.tokens; t += kTileTokens)
      rows_of_tile<F, kTileRows, kTileTokens>(a, chunk, chunk_end, t);
    if (t < a.tokens) quantized_tail<F>(a, chunk, chunk_end, t, a.tokens - t);
  }
#if KIPP_AMX
  if (tiles) _tile_release();
#endif
}

// Vector v of one column of a panel (kPanelRows values, packed_weights.h), widened to FP32
// exactly: for BF16 one shift or one mask of an interleaved pair, or (16 lanes) one conversion.
template <WeightFormat F>
vf widen_column(const uint8_t* column, int v) {
  if constexpr (F == WeightFormat::f32) {
    return load_f32(reinterpret_cast<const float*>(column) + v * kLanes);
  } else if constexpr (kLanes == int(kPanelRows)) {
    return load_bf16(reinterpret_cast<const uint16_t*>(column));
  } else {
    vu32 pair;
    __builtin_memcpy(&pair, column + (v / 2) * 4 * kLanes, sizeof pair);
    return (vf)(v % 2 == 0 ? pair << 16 : pair & 0xFFFF0000u);
  }
}

constexpr uint32_t column_bytes(WeightFormat format) { return kPanelRows * (format == WeightFormat::f32 ? 4 : 2); }

// P panels (P kPanelRows rows from row0) x T tokens over columns [c_begin, c_end) of FP32 or
// BF16 weights, lanes over rows. Every output element is one running FP32 sum, column after
// column from 0 (kept in `out` between calls): the order of plain sequential dot product,
// whatever the tile, the batch or the split of columns.
template <WeightFormat F, int P, int T>
void panel_tile(const MatmulArgs& a, uint32_t row0, uint32_t token0, uint32_t c_begin, uint32_t c_end) {
  constexpr int V = P * kPanelVecs;
  vf acc[V][T];
  if (c_begin == 0) {
    clear(acc);
  } else {
    for (int v = 0; v < V; ++v)
      for (int t = 0; t < T; ++t) acc[v][t] = load_f32(a.out[token0 + t] + row0 + v * kLanes);
  }
  constexpr uint32_t kColumn = column_bytes(F);
  const uint64_t panel_bytes = uint64_t(a.weight->cols) * kColumn;
  const uint8_t* panels = a.weight->data + row0 / kPanelRows * panel_bytes;
  const float* x = a.x + size_t(token0) * a.x_stride;
  for (uint32_t c = c_begin; c < c_end; ++c) {
    vf w[V];
    for (int p = 0; p < P; ++p)
      for (int v = 0; v < kPanelVecs; ++v)
        w[p * kPanelVecs + v] = widen_column<F>(panels + p * panel_bytes + c * kColumn, v);
    for (int t = 0; t < T; ++t) {
      const vf xv = splat(x[t * a.x_stride + c]);
      for (int v = 0; v < V; ++v) acc[v][t] = madd(w[v], xv, acc[v][t]);
    }
  }
  for (int v = 0; v < V; ++v)
    for (int t = 0; t < T; ++t) store_f32(a.out[token0 + t] + row0 + v * kLanes, acc[v][t]);
}

// Rows [row_begin, row_end) for tokens token0 .. token0 + T - 1: tiles of P panels, then single
// panels for what is left.
template <WeightFormat F, int P, int T>
void panels_of_rows(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0, uint32_t c_begin,
                    uint32_t c_end) {
  uint32_t r = row_begin;
  for (; r + P * kPanelRows <= row_end; r += P * kPanelRows) panel_tile<F, P, T>(a, r, token0, c_begin, c_end);
  for (; r < row_end; r += kPanelRows) panel_tile<F, 1, T>(a, r, token0, c_begin, c_end);
}

// Fewer tokens than a full tile take more panels at a time (kDecodePanels for a single token):
// enough independent sums to hide the multiply-add latency while the weights stream.
constexpr int kDecodePanels = 4;

// The last tokens of a pass, fewer than kPanelTokens, in one tile of T = `count` tokens.
template <WeightFormat F, int T = kPanelTokens - 1>
void panel_tail(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0, uint32_t count,
                uint32_t c_begin, uint32_t c_end) {
  if constexpr (T >= 1) {
    constexpr int P = kDecodePanels / T > kTilePanels ? kDecodePanels / T : kTilePanels;
    if (count == uint32_t(T)) return panels_of_rows<F, P, T>(a, row_begin, row_end, token0, c_begin, c_end);
    panel_tail<F, T - 1>(a, row_begin, row_end, token0, count, c_begin, c_end);
  }
}

// Columns per pass over a chunk of rows: the chunk's weights for them (64 rows x 512 columns,
// 64 KiB in BF16) stay in L2 while every token tile passes, and each tile's activations in L1.
constexpr uint32_t kColumnBlock = 512;
constexpr uint32_t kPanelChunk = 64;

template <WeightFormat F>
void matmul_panels(const MatmulArgs& a) {
  const uint32_t cols = uint32_t(a.weight->cols);
  for (uint32_t chunk = a.row_begin; chunk < a.row_end; chunk += kPanelChunk) {
    const uint32_t chunk_end = chunk + kPanelChunk < a.row_end ? chunk + kPanelChunk : a.row_end;
    for (uint32_t c = 0; c < cols; c += kColumnBlock) {
      const uint32_t c_end = c + kColumnBlock < cols ? c + kColumnBlock : cols;
      uint32_t t = 0;
      for (; t + kPanelTokens <= a.tokens; t += kPanelTokens)
        panels_of_rows<F, kTilePanels, kPanelTokens>(a, chunk, chunk_end, t, c, c_end);
      if (t < a.tokens) panel_tail<F>(a, chunk, chunk_end, t, a.tokens - t, c, c_end);
    }
  }
}

void matmul(const MatmulArgs& a) {
  switch (a.weight->format) {
    case WeightFormat::f32: return matmul_panels<WeightFormat::f32>(a);
    case WeightFormat::bf16: return matmul_panels<WeightFormat::bf16>(a);
    case WeightFormat::q8_0: return matmul_blocks<WeightFormat::q8_0>(a);
    case WeightFormat::affine4: return matmul_blocks<WeightFormat::affine4>(a);
  }
}

// e^x for x <= 0 (scores less their maximum), to about one ulp: x = n ln2 + r with |r| <= ln2/2,
// a degree-7 Taylor polynomial in r, scaled by 2^n through the exponent bits. Inputs below -87
// are raised to it (their weight, about 1e-38, is nothing beside the maximum's 1).
vf exp_nonpositive(vf x) {
  const vf lowest = splat(-87.0f);
  x = x < lowest ? lowest : x;
  const vf round = splat(12582912.0f);  // 1.5 * 2^23: adding and subtracting it rounds to an integer
  const vf n = (x * splat(1.44269504f) + round) - round;
  const vf r = (x - n * splat(0.693145752f)) - n * splat(1.42860677e-6f);
  vf p = splat(1.0f / 5040);
  p = madd(p, r, splat(1.0f / 720));
  p = madd(p, r, splat(1.0f / 120));
  p = madd(p, r, splat(1.0f / 24));
  p = madd(p, r, splat(1.0f / 6));
  p = madd(p, r, splat(0.5f));
  p = madd(p, r, splat(1.0f));
  p = madd(p, r, splat(1.0f));
  const vi32 exponent = (__builtin_convertvector(n, vi32) + 127) << 23;
  return p * (vf)exponent;
}

// How attention reads cached rows (backend/kv_store.h): vectors of a KV head's values, widened to
// FP32 exactly, so both formats go through the same arithmetic from there on.
struct Bf16Rows {
  static size_t bytes_of(uint32_t values) { return size_t(values) * 2; }
  vf load(const std::byte* head, uint32_t d) const { return load_bf16(reinterpret_cast<const uint16_t*>(head) + d); }
};

// A Q8_0 row: blocks of an FP16 scale and 32 int8 (quant/blocks.h's BlockQ8_0, whose header this
// file does not include). scale x integer is exact in FP32.
struct Q8_0Rows {
  static constexpr size_t kBlockBytes = 2 + kBlock;
  const float* fp16;  // fp16_table()
  static size_t bytes_of(uint32_t values) { return size_t(values) / kBlock * kBlockBytes; }
  vf load(const std::byte* head, uint32_t d) const {
    const std::byte* block = head + size_t(d / kBlock) * kBlockBytes;
    uint16_t scale;
    __builtin_memcpy(&scale, block, 2);
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2) + d % kBlock;
#if KIPP_LANES == 16
    const vf wide = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
#elif KIPP_LANES == 8
    const vf wide = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
#else
    typedef int8_t vi8 __attribute__((vector_size(kLanes)));
    vi8 raw;
    __builtin_memcpy(&raw, q, sizeof raw);
    const vf wide = __builtin_convertvector(raw, vf);
#endif
    return splat(fp16[scale]) * wide;
  }
};

// N vectors summed, each in reduce's tree: four at a time, the rest one by one.
template <int N>
void reduce_all(const vf (&v)[N], float* out) {
  int i = 0;
  for (; i + 4 <= N; i += 4) reduce4(v + i, out + i);
  for (; i < N; ++i) out[i] = reduce(v[i]);
}

// Accumulators the attention kernels keep in registers at once (half the set's vector
// registers), and the rows (or vectors) a step covers for T tokens x H heads within them: 4, 2
// or 1, dividing a 32-row block and a head's vectors.
constexpr int kAccumulators = KIPP_LANES == 16 ? 16 : 8;
constexpr int step_for(int tokens_times_heads) {
  const int room = kAccumulators / tokens_times_heads;
  return room >= 4 ? 4 : room >= 2 ? 2 : 1;
}

// Scores of T tokens' H query heads (h on, consecutive, sharing one KV head) against R K rows of
// a block, rows j on: one accumulator per token, head and row, lanes over head_dim in order, then
// the fixed lane tree, so each token's scores are the same as if it were alone. Each K row is
// widened once for all T x H heads. Token t keeps the rows before counts[t]; the others (still
// inside the 32-row block) are computed and dropped, which keeps the loop free of branches.
template <int T, int H, int R, class Rows>
void scores_of_rows(const Rows& kv, const AttentionToken* tokens, uint32_t h, const std::byte* k, size_t row_bytes,
                    uint32_t j, const uint32_t* counts, uint32_t dim, float scale) {
  vf acc[T * H * R];
  for (vf& v : acc) v = vf{};
  for (uint32_t d = 0; d < dim; d += kLanes) {
    vf rows[R];
    for (int r = 0; r < R; ++r) rows[r] = kv.load(k + r * row_bytes, d);
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < H; ++i) {
        const vf qv = load_f32(tokens[t].q + (h + i) * dim + d);
        for (int r = 0; r < R; ++r) acc[(t * H + i) * R + r] = madd(qv, rows[r], acc[(t * H + i) * R + r]);
      }
  }
  float sums[T * H * R];
  reduce_all(acc, sums);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < H; ++i)
      for (int r = 0; r < R; ++r)
        if (j + r < counts[t]) tokens[t].scores[(h + i) * kBlock + j + r] = sums[(t * H + i) * R + r] * scale;
}

// sums += weight[j] x V row j for T tokens' H heads (h on) sharing the V rows, rows j from
// `first` to `count`, position by position: the sums stay in registers, S vectors of each at a
// time, while the rows go by, and each V vector is widened once for all T x H heads. Each
// token's sums take the same steps as alone.
template <int T, int H, class Rows>
void weigh_rows(const Rows& kv, const AttentionToken* tokens, uint32_t h, const std::byte* v, size_t row_bytes,
                uint32_t first, uint32_t count, uint32_t dim) {
  constexpr int S = step_for(T * H);
  for (uint32_t d0 = 0; d0 < dim; d0 += S * kLanes) {
    vf acc[T][H][S];
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < H; ++i)
        for (int s = 0; s < S; ++s) acc[t][i][s] = load_f32(tokens[t].sums + (h + i) * dim + d0 + s * kLanes);
    for (uint32_t j = first; j < count; ++j) {
      vf rows[S];
      for (int s = 0; s < S; ++s) rows[s] = kv.load(v + j * row_bytes, d0 + s * kLanes);
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < H; ++i) {
          const vf p = splat(tokens[t].scores[(h + i) * kBlock + j]);
          for (int s = 0; s < S; ++s) acc[t][i][s] = madd(p, rows[s], acc[t][i][s]);
        }
    }
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < H; ++i)
        for (int s = 0; s < S; ++s) store_f32(tokens[t].sums + (h + i) * dim + d0 + s * kLanes, acc[t][i][s]);
  }
}

// Online softmax of one query head of a token over a block's first `count` scores: rescale what
// the head summed so far to its new maximum, then turn the scores into weights. The block's
// maximum and its weights' sum are taken over vectors of positions, those from `count` on left
// out (their slots hold no score).
void softmax_block(const AttentionToken& token, uint32_t h, uint32_t count, uint32_t dim) {
  vi32 position;
  for (int i = 0; i < kLanes; ++i) position[i] = i;
  float* scores = token.scores + h * kBlock;
  vf largest = splat(-__builtin_inff());
  for (int v = 0; v < kVecs; ++v) {
    const vf s = load_f32(scores + v * kLanes);
    largest = ((position + v * kLanes < int32_t(count)) & (s > largest)) ? s : largest;
  }
  const float block_max = largest_lane(largest);
  const float new_max = block_max > token.max_score[h] ? block_max : token.max_score[h];
  // exp(0) is 1 exactly: skip the call when the maximum stays (and is a number).
  const bool same_max = new_max == token.max_score[h] && new_max != -__builtin_inff();
  const float correction = same_max ? 1.0f : __builtin_expf(token.max_score[h] - new_max);
  if (correction != 1.0f) {
    token.weight_sum[h] *= correction;
    float* sums = token.sums + h * dim;
    for (uint32_t d = 0; d < dim; d += kLanes) store_f32(sums + d, load_f32(sums + d) * splat(correction));
  }
  vf weights{};
  for (int v = 0; v < kVecs; ++v) {
    const vf w = exp_nonpositive(load_f32(scores + v * kLanes) - splat(new_max));
    store_f32(scores + v * kLanes, w);
    weights += position + v * kLanes < int32_t(count) ? w : vf{};
  }
  token.weight_sum[h] += reduce(weights);
  token.max_score[h] = new_max;
}

// Asks for the rows [0, count) of a block, the job's KV heads of K and V, while the block before
// it is computed: its rows are a row apart per head range, a pattern the hardware prefetchers
// pick up late.
void prefetch_block(const AttentionArgs& a, size_t physical, uint32_t count, size_t head_bytes) {
  const size_t first = a.kv_begin * head_bytes, last = a.kv_end * head_bytes;
  for (uint32_t j = 0; j < count; ++j) {
    const std::byte* k_row = a.k_layer + physical * a.block_bytes + j * a.row_bytes;
    const std::byte* v_row = a.v_layer + physical * a.block_bytes + j * a.row_bytes;
    for (size_t byte = first; byte < last; byte += 64) {
      __builtin_prefetch(k_row + byte);
      __builtin_prefetch(v_row + byte);
    }
  }
}

// The job of kernels.h's AttentionArgs for a group of T tokens: block by block over the chunk,
// the next block prefetched; every token's scores, then each token's online softmax, then the
// weighted V rows, each cached row widened once for the whole group.
template <int T, class Rows>
void attention_of(const AttentionArgs& a, const Rows& kv) {
  const AttentionToken* tokens = a.token;
  const uint32_t dim = a.head_dim, group = a.group_heads;
  const uint32_t head_begin = a.kv_begin * group, head_end = a.kv_end * group;
  const size_t head_bytes = Rows::bytes_of(dim);
  uint32_t end = 0;
  for (int t = 0; t < T; ++t) {
    end = tokens[t].end > end ? tokens[t].end : end;
    for (uint32_t h = head_begin; h < head_end; ++h) {
      tokens[t].max_score[h] = -__builtin_inff();
      tokens[t].weight_sum[h] = 0.0f;
      for (uint32_t d = 0; d < dim; d += kLanes) store_f32(tokens[t].sums + h * dim + d, vf{});
    }
  }
  for (uint32_t start = a.begin; start < end; start += kBlock) {
    const uint32_t logical = start / kBlock;
    const size_t physical = a.table ? a.table[logical] : logical;
    const std::byte* k_block = a.k_layer + physical * a.block_bytes;
    const std::byte* v_block = a.v_layer + physical * a.block_bytes;
    // The rows each token sees in this block: all its companions see at least `fewest`.
    uint32_t counts[T], fewest = kBlock, most = 0;
    for (int t = 0; t < T; ++t) {
      const uint32_t left = tokens[t].end > start ? tokens[t].end - start : 0;
      counts[t] = left < uint32_t(kBlock) ? left : uint32_t(kBlock);
      fewest = counts[t] < fewest ? counts[t] : fewest;
      most = counts[t] > most ? counts[t] : most;
    }
    if (start + kBlock < end) {
      const uint32_t next_left = end - start - kBlock;
      prefetch_block(a, a.table ? a.table[logical + 1] : logical + 1,
                     next_left < uint32_t(kBlock) ? next_left : uint32_t(kBlock), head_bytes);
    }
    // Scores, query heads in pairs that share a KV head, the pair's K rows read front to back.
    for (uint32_t h = head_begin; h < head_end;) {
      const std::byte* k = k_block + h / group * head_bytes;
      const bool pair = (h + 1) % group != 0;  // h + 1 shares h's KV head
      if (pair) {
        constexpr int R = step_for(T * 2);
        for (uint32_t j = 0; j < most; j += R)
          scores_of_rows<T, 2, R>(kv, tokens, h, k + j * a.row_bytes, a.row_bytes, j, counts, dim, a.scale);
      } else {
        constexpr int R = step_for(T);
        for (uint32_t j = 0; j < most; j += R)
          scores_of_rows<T, 1, R>(kv, tokens, h, k + j * a.row_bytes, a.row_bytes, j, counts, dim, a.scale);
      }
      h += pair ? 2 : 1;
    }
    for (int t = 0; t < T; ++t)
      if (counts[t] > 0)
        for (uint32_t h = head_begin; h < head_end; ++h) softmax_block(tokens[t], h, counts[t], dim);
    // Weighted V rows: the rows every token sees together, then each token's own rest.
    for (uint32_t h = head_begin; h < head_end;) {
      const std::byte* v = v_block + h / group * head_bytes;
      const bool pair = (h + 1) % group != 0;
      if (pair) weigh_rows<T, 2>(kv, tokens, h, v, a.row_bytes, 0, fewest, dim);
      else weigh_rows<T, 1>(kv, tokens, h, v, a.row_bytes, 0, fewest, dim);
      for (int t = 0; t < T; ++t) {
        if (counts[t] == fewest) continue;
        if (pair) weigh_rows<1, 2>(kv, tokens + t, h, v, a.row_bytes, fewest, counts[t], dim);
        else weigh_rows<1, 1>(kv, tokens + t, h, v, a.row_bytes, fewest, counts[t], dim);
      }
      h += pair ? 2 : 1;
    }
  }
}

template <class Rows>
void attention_over(const AttentionArgs& a, const Rows& kv) {
  static_assert(kAttentionTokens == 4);
  switch (a.tokens) {
    case 1: return attention_of<1>(a, kv);
    case 2: return attention_of<2>(a, kv);
    case 3: return attention_of<3>(a, kv);
    default: return attention_of<4>(a, kv);
  }
}

void attention(const AttentionArgs& a) {
  switch (a.kv_format) {
    case KvFormat::bf16: return attention_over(a, Bf16Rows{});
    case KvFormat::q8_0: return attention_over(a, Q8_0Rows{a.fp16_table});
  }
}

// ---- Activations quantized for the products (kernels.h) -------------------------------------
// Rounding to nearest even as the definitions in kernels.h say (lrint in the default mode): a
// value of magnitude below 2^22 plus and minus 1.5 x 2^23 comes back rounded to an integer (FP32
// has no bits left for the fraction), exactly, in every set; the conversion then only drops the
// zero fraction. So every set gives the definitions' bits.

vf round_to_integer(vf y) { return (y + splat(0x1.8p23f)) - splat(0x1.8p23f); }

vf absolute(vf v) { return (vf)((vu32)v & 0x7fffffffu); }

// The largest magnitude of n values (a multiple of kLanes) and whether all are finite.
float largest_magnitude(const float* x, uint32_t n, bool* finite) {
  vf largest{}, poisoned{};
  for (uint32_t i = 0; i < n; i += kLanes) {
    const vf v = load_f32(x + i);
    const vf a = absolute(v);
    largest = a > largest ? a : largest;
    poisoned += v - v;  // 0 for a finite value, NaN for an infinity or a NaN
  }
  float lanes[kLanes], poison[kLanes];
  __builtin_memcpy(lanes, &largest, sizeof largest);
  __builtin_memcpy(poison, &poisoned, sizeof poisoned);
  float result = 0.0f;
  *finite = true;
  for (int l = 0; l < kLanes; ++l) {
    result = lanes[l] > result ? lanes[l] : result;
    *finite = *finite && poison[l] == 0.0f;
  }
  return result;
}

typedef int16_t vi16h __attribute__((vector_size(2 * kLanes)));
typedef int8_t vi8h __attribute__((vector_size(kLanes)));

int32_t sum_lanes(vi32 v) {
  int32_t lanes[kLanes], total = 0;
  __builtin_memcpy(lanes, &v, sizeof v);
  for (int l = 0; l < kLanes; ++l) total += lanes[l];
  return total;
}

void quantize_int16(const float* x, uint32_t n, int16_t* out, float* scale, float* block_sum) {
  bool finite;
  const float largest = largest_magnitude(x, n, &finite);
  if (largest == 0.0f || !finite) {
    // Zeros stay zeros; a non-finite activation makes every product NaN, as it would in FP32.
    *scale = finite ? 0.0f : __builtin_nanf("");
    __builtin_memset(out, 0, n * sizeof(int16_t));
    for (uint32_t b = 0; b < n / kBlock; ++b) block_sum[b] = 0.0f;
    return;
  }
  const vf inverse = splat(32767.0f / largest);
  for (uint32_t b = 0; b < n / kBlock; ++b) {
    vi32 sum{};
    for (int v = 0; v < kVecs; ++v) {
      const uint32_t at = b * kBlock + v * kLanes;
      const vi32 q = __builtin_convertvector(round_to_integer(load_f32(x + at) * inverse), vi32);
      const vi16h narrow = __builtin_convertvector(q, vi16h);
      __builtin_memcpy(out + at, &narrow, sizeof narrow);
      sum += q;
    }
    block_sum[b] = float(sum_lanes(sum));
  }
  *scale = largest / 32767.0f;
}

void quantize_int8_blocks(const float* x, uint32_t n, int8_t* out, float* scale, float* sum) {
  for (uint32_t b = 0; b < n / kBlock; ++b) {
    const float* block = x + b * kBlock;
    bool finite;
    const float largest = largest_magnitude(block, kBlock, &finite);
    if (largest == 0.0f || !finite) {
      __builtin_memset(out + b * kBlock, 0, kBlock);
      scale[b] = sum[b] = finite ? 0.0f : __builtin_nanf("");
      continue;
    }
    const vf inverse = splat(127.0f / largest);
    vi32 total{};
    for (int v = 0; v < kVecs; ++v) {
      const vi32 q = __builtin_convertvector(round_to_integer(load_f32(block + v * kLanes) * inverse), vi32);
      const vi8h narrow = __builtin_convertvector(q, vi8h);
      __builtin_memcpy(out + b * kBlock + v * kLanes, &narrow, sizeof narrow);
      total += q;
    }
    scale[b] = largest / 127.0f;
    sum[b] = scale[b] * float(sum_lanes(total));
  }
}

}  // namespace

const Kernels& kernels() {
#if KIPP_AMX
  constexpr auto split = split_int16;
#else
  constexpr decltype(Kernels::split_int16) split = nullptr;  // no tile products in this set
#endif
  static const Kernels table{KIPP_KERNEL_NAME, kLanes, matmul, attention, quantize_int16, quantize_int8_blocks, split};
  return table;
}

}  // namespace kipp::cpu::KIPP_KERNEL_NS
