// The single source of every kernel set. A kernels_<isa>.cpp file defines KIPP_KERNEL_NS (its
// namespace), KIPP_KERNEL_NAME, KIPP_LANES (floats per vector), KIPP_TILE_ROWS (vectors of
// kLanes rows) and KIPP_TILE_TOKENS (the register tile of a token tile over Q8_0 and Q4_1 weights),
// KIPP_TILE_PANELS and KIPP_PANEL_TOKENS (the same over FP32 and BF16 weights), KIPP_AMX (1 where
// products of int16 activations also run in tile registers), KIPP_BF16_DOT (1 where BF16
// weights may multiply activations rounded to BF16 in AVX512-BF16 pair products), includes this file,
// and is compiled with that instruction set's flags.
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
#ifndef KIPP_BF16_DOT
#define KIPP_BF16_DOT 0
#endif

#if KIPP_LANES > 4 || KIPP_AMX
#include <immintrin.h>
#endif

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"

#include "backend/cpu/kernels/vectors.h"
#include "backend/cpu/kernels/quantized_products.h"
#include "backend/cpu/kernels/amx_tiles.h"
#include "backend/cpu/kernels/dense_panels.h"
#include "backend/cpu/kernels/attention.h"
#include "backend/cpu/kernels/quantizers.h"

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

// Rows in chunks whose weights stay in cache while every token tile passes over them.
constexpr uint32_t kRowChunk = 64;

template <WeightFormat F>
void matmul_blocks(const MatmulArgs& a) {
#if KIPP_AMX
  // Tile registers for the int16 form's full 16-token tiles; the vector tiles take the rest.
  const bool tiles = a.form == ActivationForm::int16 && a.tokens >= uint32_t(kAmxTokens);
  if (tiles) configure_tiles();
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
  if (tiles) release_tiles();
#endif
}

void matmul(const MatmulArgs& a) {
  switch (a.weight->format) {
    case WeightFormat::f32: return matmul_panels<WeightFormat::f32>(a);
    case WeightFormat::bf16: return matmul_panels<WeightFormat::bf16>(a);
    case WeightFormat::q8_0: return matmul_blocks<WeightFormat::q8_0>(a);
    case WeightFormat::affine4: return matmul_blocks<WeightFormat::affine4>(a);
  }
}

}  // namespace

const Kernels& kernels() {
#if KIPP_AMX
  constexpr auto split = split_int16;
#else
  constexpr decltype(Kernels::split_int16) split = nullptr;   // no tile products in this set
#endif
#if KIPP_BF16_DOT
  constexpr auto to_bf16 = round_bf16;
#else
  constexpr decltype(Kernels::round_bf16) to_bf16 = nullptr;  // no BF16 pair products in this set
#endif
  static const Kernels table{KIPP_KERNEL_NAME, {kLanes, kBf16ColumnPairs}, matmul, attention,
                             quantize_int16,   quantize_int8_blocks,       split,  to_bf16};
  return table;
}

}  // namespace kipp::cpu::KIPP_KERNEL_NS
