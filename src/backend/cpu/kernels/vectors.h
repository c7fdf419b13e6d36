// The vector primitives every kernel is written in: the set's constants and vector types,
// loads, stores and widening conversions, multiply-add, the fixed reduction trees and the
// integer products of the quantized kernels. With amx_tiles.h, the only place where an
// instruction set is named: each primitive says, under #if, the instructions it means on the
// x86 sets, and is plain C++ with GCC's vector extensions on the portable set.
// One part of every kernel set: kernels_impl.h includes it once in each kernels_<isa>.cpp,
// after the parts before it, whose names it uses.
#pragma once

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

constexpr int kLanes = KIPP_LANES;
constexpr int kTileRows = KIPP_TILE_ROWS;
constexpr int kTileTokens = KIPP_TILE_TOKENS;
constexpr int kTilePanels = KIPP_TILE_PANELS;
constexpr int kPanelTokens = KIPP_PANEL_TOKENS;
constexpr int kPanelVecs = int(kPanelRows) / kLanes;  // vectors of one panel column
// Sets with one vector per panel column (16 lanes) pack BF16 panels by column pairs
// (packed_weights.h): one load feeds two columns.
constexpr bool kBf16ColumnPairs = kPanelVecs == 1;
constexpr bool kBf16Dot = KIPP_BF16_DOT;  // pair products, for x rounded to BF16 (ActivationForm::bf16)
constexpr int kBlock = 32;                // weights per quantization block
constexpr int kVecs = kBlock / kLanes;    // vectors per block

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

#if KIPP_BF16_DOT
// Lane r: acc + w[2r + 1] x1 + w[2r] x0 for the BF16 words w of a column pair and `pair`, BF16
// x0 (low word) and x1: vdpbf16ps, whose two products are exact in FP32 and each added with
// its own rounding to nearest even, the odd word's first; subnormal inputs and sums are zeros.
vf add_bf16_pair_products(vf acc, vu32 w, int32_t pair) {
  return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)_mm512_set1_epi32(pair));
}
#endif

// Integer vectors of the quantized products: 4 bytes per lane, and the same as 2 x 16 bits.
typedef uint8_t vu8 __attribute__((vector_size(4 * kLanes)));
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

// kLanes int8 values, widened exactly to FP32.
vf widen_i8(const int8_t* q) {
#if KIPP_LANES == 16
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
#elif KIPP_LANES == 8
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
#else
  typedef int8_t vi8 __attribute__((vector_size(kLanes)));
  vi8 raw;
  __builtin_memcpy(&raw, q, sizeof raw);
  return __builtin_convertvector(raw, vf);
#endif
}

}  // namespace
}  // namespace kipp::cpu::KIPP_KERNEL_NS
