// The single source of every kernel set. A kernels_<isa>.cpp file defines KIPP_KERNEL_NS (its
// namespace), KIPP_KERNEL_NAME, KIPP_LANES (floats per vector), KIPP_TILE_ROWS and
// KIPP_TILE_TOKENS (the register tile of a token tile), includes this file, and is compiled with
// that instruction set's flags.
//
// Nothing here may be an inline function or template with external linkage shared with other
// files (std:: templates included): the linker would keep one copy, compiled for whichever
// instruction set it saw first. Everything is in an anonymous namespace and uses only builtins
// and the compiler's intrinsics (always inlined, never emitted as shared copies).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

constexpr int kLanes = KIPP_LANES;
constexpr int kTileRows = KIPP_TILE_ROWS;
constexpr int kTileTokens = KIPP_TILE_TOKENS;
constexpr int kBlock = 32;               // weights per quantization block
constexpr int kVecs = kBlock / kLanes;   // vectors per block

typedef float vf __attribute__((vector_size(4 * kLanes)));
typedef uint32_t vu32 __attribute__((vector_size(4 * kLanes)));
typedef int32_t vi32 __attribute__((vector_size(4 * kLanes)));
typedef uint16_t vu16 __attribute__((vector_size(2 * kLanes)));
typedef int8_t vi8 __attribute__((vector_size(kLanes)));
typedef uint8_t vu8 __attribute__((vector_size(kLanes)));

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

vf int8_to_f32(const int8_t* p) {
#if KIPP_LANES == 16
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif KIPP_LANES == 8
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#else
  vi8 q;
  __builtin_memcpy(&q, p, sizeof q);
  return __builtin_convertvector(__builtin_convertvector(q, vi32), vf);
#endif
}

// Nibbles of kLanes bytes, low or high, as FP32 values 0..15.
vf nibbles_to_f32(const uint8_t* p, bool high) {
#if KIPP_LANES == 16
  __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
#elif KIPP_LANES == 8
  __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
#endif
#if KIPP_LANES == 16 || KIPP_LANES == 8
  if (high) bytes = _mm_srli_epi16(bytes, 4);
  bytes = _mm_and_si128(bytes, _mm_set1_epi8(15));
#endif
#if KIPP_LANES == 16
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
#elif KIPP_LANES == 8
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
#else
  vu8 q;
  __builtin_memcpy(&q, p, sizeof q);
  q = high ? q >> 4 : q & 15;
  return __builtin_convertvector(__builtin_convertvector(q, vi32), vf);
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
  float lanes[kLanes];
  __builtin_memcpy(lanes, &v, sizeof v);
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) lanes[i] += lanes[i + width];
  return lanes[0];
}

// What a row's block needs before its vectors can be widened: its bytes and, when quantized, its
// scale (and minimum), looked up once per block.
struct BlockRef {
  const uint8_t* bytes;
  vf scale, min;
};

// Weights are packed (packed_weights.h): groups of kPackRows rows, block by block.
template <WeightFormat F>
BlockRef block_ref(const MatmulArgs& a, uint64_t row, uint64_t block) {
  const WeightView& w = *a.weight;
  const uint64_t index = (row / kPackRows * (w.cols / kBlock) + block) * kPackRows + row % kPackRows;
  BlockRef ref{};
  if constexpr (F == WeightFormat::f32) {
    ref.bytes = w.data + index * kBlock * 4;
  } else if constexpr (F == WeightFormat::bf16) {
    ref.bytes = w.data + index * kBlock * 2;
  } else if constexpr (F == WeightFormat::q8_0) {
    const uint8_t* p = w.data + index * 34;  // ggml Q8_0: fp16 scale, 32 x int8
    uint16_t scale_bits;
    __builtin_memcpy(&scale_bits, p, 2);
    ref = {p + 2, splat(a.fp16_table[scale_bits]), vf{}};
  } else {
    const uint8_t* p = w.data + index * 20;  // ggml Q4_1: fp16 scale, fp16 min, 16 bytes
    uint16_t scale_bits, min_bits;
    __builtin_memcpy(&scale_bits, p, 2);
    __builtin_memcpy(&min_bits, p + 2, 2);
    ref = {p + 4, splat(a.fp16_table[scale_bits]), splat(a.fp16_table[min_bits])};
  }
  return ref;
}

// Vector v (elements v * kLanes ...) of a block, widened to FP32 exactly as cpu-ref widens it.
template <WeightFormat F>
vf widen(const BlockRef& b, int v) {
  if constexpr (F == WeightFormat::f32) return load_f32(reinterpret_cast<const float*>(b.bytes) + v * kLanes);
  if constexpr (F == WeightFormat::bf16) return load_bf16(reinterpret_cast<const uint16_t*>(b.bytes) + v * kLanes);
  if constexpr (F == WeightFormat::q8_0) {
    return b.scale * int8_to_f32(reinterpret_cast<const int8_t*>(b.bytes) + v * kLanes);
  }
  // affine4: element j is the low nibble of byte j, element j + 16 its high nibble.
  return madd(b.scale, nibbles_to_f32(b.bytes + (v % (kVecs / 2)) * kLanes, v >= kVecs / 2), b.min);
}

// An R rows x T tokens register tile. Accumulator (r, t) lane i sums the products of columns
// c = 32 b + kLanes v + i in increasing b, then v: an order no tile shape changes.
template <WeightFormat F, int R, int T>
void tile(const MatmulArgs& a, uint32_t row0, uint32_t token0) {
  vf acc[R][T] = {};
  const uint64_t blocks = a.weight->cols / kBlock;
  const float* x = a.x + token0 * a.x_stride;
  for (uint64_t b = 0; b < blocks; ++b) {
    BlockRef ref[R];
    for (int r = 0; r < R; ++r) ref[r] = block_ref<F>(a, row0 + r, b);
    for (int v = 0; v < kVecs; ++v) {
      vf w[R];
      for (int r = 0; r < R; ++r) w[r] = widen<F>(ref[r], v);
      const float* column = x + b * kBlock + v * kLanes;
      for (int t = 0; t < T; ++t) {
        const vf xv = load_f32(column + t * a.x_stride);
        for (int r = 0; r < R; ++r) acc[r][t] = madd(w[r], xv, acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) a.out[token0 + t][row0 + r] = reduce(acc[r][t]);
}

// A single token streams a whole packed group of rows at once; a token tile reuses each
// widened weight T times over fewer rows. Either way each element's order is the same.
template <WeightFormat F, int T>
void rows_of_tile(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0) {
  constexpr int kRows = T == 1 ? int(kPackRows) : kTileRows;
  static_assert(kPackRows % kRows == 0, "a tile must not straddle two packed row groups");
  uint32_t r = row_begin;
  for (; r + kRows <= row_end; r += kRows) tile<F, kRows, T>(a, r, token0);
  for (; r < row_end; ++r) tile<F, 1, T>(a, r, token0);
}

// Rows in chunks whose weights stay in cache while every token tile passes over them.
constexpr uint32_t kRowChunk = 64;

template <WeightFormat F>
void matmul_format(const MatmulArgs& a) {
  for (uint32_t chunk = a.row_begin; chunk < a.row_end; chunk += kRowChunk) {
    const uint32_t chunk_end = chunk + kRowChunk < a.row_end ? chunk + kRowChunk : a.row_end;
    uint32_t t = 0;
    for (; t + kTileTokens <= a.tokens; t += kTileTokens) rows_of_tile<F, kTileTokens>(a, chunk, chunk_end, t);
    for (; t < a.tokens; ++t) rows_of_tile<F, 1>(a, chunk, chunk_end, t);
  }
}

void matmul(const MatmulArgs& a) {
  switch (a.weight->format) {
    case WeightFormat::f32: return matmul_format<WeightFormat::f32>(a);
    case WeightFormat::bf16: return matmul_format<WeightFormat::bf16>(a);
    case WeightFormat::q8_0: return matmul_format<WeightFormat::q8_0>(a);
    case WeightFormat::affine4: return matmul_format<WeightFormat::affine4>(a);
  }
}

float dot_bf16(const float* q, const uint16_t* k, uint32_t n) {
  vf acc = {};
  for (uint32_t d = 0; d < n; d += kLanes) acc = madd(load_f32(q + d), load_bf16(k + d), acc);
  return reduce(acc);
}

void attention(const AttentionArgs& a) {
  const uint32_t dim = a.head_dim;
  const size_t kv_width = a.block_stride / kBlock;
  float max_score[16], weight_sum[16];  // per query head of the group (at most 16)
  for (uint32_t h = 0; h < a.group_heads; ++h) {
    max_score[h] = -__builtin_inff();
    weight_sum[h] = 0.0f;
    for (uint32_t d = 0; d < dim; d += kLanes) store_f32(a.out + h * dim + d, vf{});
  }
  for (uint32_t start = 0; start < a.positions; start += kBlock) {
    const uint32_t logical = start / kBlock;
    const size_t physical = a.table ? a.table[logical] : logical;
    const uint16_t* k_block = a.k_layer + physical * a.block_stride + a.kv_offset;
    const uint16_t* v_block = a.v_layer + physical * a.block_stride + a.kv_offset;
    const uint32_t count = a.positions - start < uint32_t(kBlock) ? a.positions - start : uint32_t(kBlock);
    for (uint32_t h = 0; h < a.group_heads; ++h) {
      const float* q = a.q + h * dim;
      float block_max = -__builtin_inff();
      for (uint32_t j = 0; j < count; ++j) {
        a.scratch[j] = dot_bf16(q, k_block + j * kv_width, dim) * a.scale;
        block_max = a.scratch[j] > block_max ? a.scratch[j] : block_max;
      }
      // Online softmax: rescale what was summed so far to the new maximum, then add this block.
      const float new_max = block_max > max_score[h] ? block_max : max_score[h];
      const float correction = __builtin_expf(max_score[h] - new_max);
      float* out = a.out + h * dim;
      weight_sum[h] *= correction;
      for (uint32_t d = 0; d < dim; d += kLanes) store_f32(out + d, load_f32(out + d) * correction);
      for (uint32_t j = 0; j < count; ++j) {
        const float p = __builtin_expf(a.scratch[j] - new_max);
        weight_sum[h] += p;
        const vf pv = splat(p);
        const uint16_t* v = v_block + j * kv_width;
        for (uint32_t d = 0; d < dim; d += kLanes) store_f32(out + d, madd(pv, load_bf16(v + d), load_f32(out + d)));
      }
      max_score[h] = new_max;
    }
  }
  for (uint32_t h = 0; h < a.group_heads; ++h) {
    const vf inverse = splat(1.0f / weight_sum[h]);
    for (uint32_t d = 0; d < dim; d += kLanes) store_f32(a.out + h * dim + d, load_f32(a.out + h * dim + d) * inverse);
  }
}

}  // namespace

const Kernels& kernels() {
  static const Kernels table{KIPP_KERNEL_NAME, matmul, attention};
  return table;
}

}  // namespace kipp::cpu::KIPP_KERNEL_NS
