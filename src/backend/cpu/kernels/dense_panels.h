// Products with FP32 and BF16 weights: panels of rows, lanes over rows, one running sum per
// output in the order of a plain dot product.
// One part of every kernel set: kernels_impl.h includes it once in each kernels_<isa>.cpp,
// after the parts before it, whose names it uses.
#pragma once

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

// Vector v of one column of a panel (kPanelRows values, packed_weights.h), widened to FP32
// exactly: for BF16 in the sets of 8 and 4 lanes, one shift or one mask of an interleaved pair
// (the 16-lane sets read BF16 panels by column pairs, panel_tile).
template <WeightFormat F>
vf widen_column(const uint8_t* column, int v) {
  if constexpr (F == WeightFormat::f32) {
    return load_f32(reinterpret_cast<const float*>(column) + v * kLanes);
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
// whatever the tile, the batch or the split of columns. X is what the weights multiply: x
// itself (f32), or in the set with BF16 pair products x rounded to BF16 (bf16), a column pair
// at a time, each pair product adding column 2k + 1's product and then column 2k's.
template <WeightFormat F, ActivationForm X, int P, int T>
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
  if constexpr (F == WeightFormat::bf16 && kBf16ColumnPairs) {
    // A column pair of a panel is one vector (packed_weights.h); c_begin and c_end are even.
    [[maybe_unused]] const uint16_t* x_bf16 = a.x_bf16 + size_t(token0) * a.x_stride;
    for (uint32_t c = c_begin; c < c_end; c += 2) {
      vu32 w[P];
      for (int p = 0; p < P; ++p) __builtin_memcpy(&w[p], panels + p * panel_bytes + c * kColumn, sizeof w[p]);
      if constexpr (X == ActivationForm::bf16) {
#if KIPP_BF16_DOT
        for (int t = 0; t < T; ++t) {
          const int32_t pair = load_i32(x_bf16 + t * a.x_stride + c);
          for (int p = 0; p < P; ++p) acc[p][t] = add_bf16_pair_products(acc[p][t], w[p], pair);
        }
#endif
      } else {
        vf even[P], odd[P];
        for (int p = 0; p < P; ++p) {
          even[p] = (vf)(w[p] << 16);
          odd[p] = (vf)(w[p] & 0xFFFF0000u);
        }
        for (int t = 0; t < T; ++t) {
          const vf x0 = splat(x[t * a.x_stride + c]), x1 = splat(x[t * a.x_stride + c + 1]);
          for (int p = 0; p < P; ++p) acc[p][t] = madd(odd[p], x1, madd(even[p], x0, acc[p][t]));
        }
      }
    }
  } else {
    static_assert(X == ActivationForm::f32, "only the set with BF16 pair products rounds x to BF16");
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
  }
  for (int v = 0; v < V; ++v)
    for (int t = 0; t < T; ++t) store_f32(a.out[token0 + t] + row0 + v * kLanes, acc[v][t]);
}

// Rows [row_begin, row_end) for tokens token0 .. token0 + T - 1: tiles of P panels, then single
// panels for what is left.
template <WeightFormat F, ActivationForm X, int P, int T>
void panels_of_rows(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0, uint32_t c_begin,
                    uint32_t c_end) {
  uint32_t r = row_begin;
  for (; r + P * kPanelRows <= row_end; r += P * kPanelRows) panel_tile<F, X, P, T>(a, r, token0, c_begin, c_end);
  for (; r < row_end; r += kPanelRows) panel_tile<F, X, 1, T>(a, r, token0, c_begin, c_end);
}

// Fewer tokens than a full tile take more panels at a time (kDecodePanels for a single token):
// enough independent sums to hide the multiply-add latency while the weights stream.
constexpr int kDecodePanels = 4;

// The last tokens of a pass, fewer than kPanelTokens, in one tile of T = `count` tokens.
template <WeightFormat F, ActivationForm X, int T = kPanelTokens - 1>
void panel_tail(const MatmulArgs& a, uint32_t row_begin, uint32_t row_end, uint32_t token0, uint32_t count,
                uint32_t c_begin, uint32_t c_end) {
  if constexpr (T >= 1) {
    constexpr int P = kDecodePanels / T > kTilePanels ? kDecodePanels / T : kTilePanels;
    if (count == uint32_t(T)) return panels_of_rows<F, X, P, T>(a, row_begin, row_end, token0, c_begin, c_end);
    panel_tail<F, X, T - 1>(a, row_begin, row_end, token0, count, c_begin, c_end);
  }
}

// Columns per pass over a chunk of rows: the chunk's weights for them (64 rows x 512 columns,
// 64 KiB in BF16) stay in L2 while every token tile passes, and each tile's activations in L1.
constexpr uint32_t kColumnBlock = 512;
constexpr uint32_t kPanelChunk = 64;

template <WeightFormat F, ActivationForm X>
void matmul_panels_of(const MatmulArgs& a) {
  const uint32_t cols = uint32_t(a.weight->cols);
  for (uint32_t chunk = a.row_begin; chunk < a.row_end; chunk += kPanelChunk) {
    const uint32_t chunk_end = chunk + kPanelChunk < a.row_end ? chunk + kPanelChunk : a.row_end;
    for (uint32_t c = 0; c < cols; c += kColumnBlock) {
      const uint32_t c_end = c + kColumnBlock < cols ? c + kColumnBlock : cols;
      uint32_t t = 0;
      for (; t + kPanelTokens <= a.tokens; t += kPanelTokens)
        panels_of_rows<F, X, kTilePanels, kPanelTokens>(a, chunk, chunk_end, t, c, c_end);
      if (t < a.tokens) panel_tail<F, X>(a, chunk, chunk_end, t, a.tokens - t, c, c_end);
    }
  }
}

template <WeightFormat F>
void matmul_panels(const MatmulArgs& a) {
  if constexpr (F == WeightFormat::bf16 && kBf16Dot)
    if (a.form == ActivationForm::bf16) return matmul_panels_of<F, ActivationForm::bf16>(a);
  matmul_panels_of<F, ActivationForm::f32>(a);
}

}  // namespace
}  // namespace kipp::cpu::KIPP_KERNEL_NS
