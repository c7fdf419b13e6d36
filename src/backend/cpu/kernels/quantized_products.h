// Products with Q8_0 and Q4_1 weights on vector registers.
// The packed records (packed_weights.h) put one row in each vector lane, so a block's integer
// sums for kLanes rows come out in one vector, and its scales apply to all of them in one
// multiply. Every row's block sum is exact in int32 whatever the instructions, so each output is
// the same sequence of FP32 steps in every tile: for each block in order,
// acc = fma(float(sum), block scale, acc) (+ the Q4_1 minimum's term).

// One part of every kernel set: kernels_impl.h includes it once in each kernels_<isa>.cpp,
// after the parts before it, whose names it uses.
#pragma once

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

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

}  // namespace
}  // namespace kipp::cpu::KIPP_KERNEL_NS
