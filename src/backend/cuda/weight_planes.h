// How the CUDA backend lays a projection's weights out in device memory. BF16 (and F32) rows stay
// as they are. The quantized formats' blocks (34 bytes for q8_0, 20 for Q4_1) are not 16-byte
// aligned, so each tensor is split into two planes: every block's quantized values, in block
// order (q8_0: 32 int8; Q4_1: its 16 nibble bytes, unchanged), then every block's fp16 scale
// (Q4_1: scale and min). A warp then reads its weights with aligned 16-byte loads, and the device
// holds exactly as many bytes as the artifact.
//
// Several tensors of one format and width may share one device weight, so one product computes
// them all: Q, K and V one after another; gate and up alternating row by row, so that a feature's
// gate and up land side by side for the SwiGLU epilogue. Pure host code, built and tested on
// every machine.
#pragma once

#include <cstdint>
#include <span>

#include "model/weights.h"
#include "util/error.h"

namespace kipp::cuda {

struct PlaneBytes {
  uint64_t values = 0;  // the values plane (the whole tensor for BF16 and F32)
  uint64_t scales = 0;  // the scales plane (0 for BF16 and F32)
};

// Plane sizes of `rows` rows of `cols` weights in `format`.
PlaneBytes plane_bytes(WeightFormat format, uint64_t rows, uint64_t cols);

// The rows of `parts`, stacked, must share a format and a width.
Result<PlaneBytes> stacked_plane_bytes(std::span<const WeightView* const> parts);

// Writes `part`'s rows in device layout: its values to `values`, its scales to `scales` (both
// sized by plane_bytes for this part alone).
void split_into_planes(const WeightView& part, uint8_t* values, uint8_t* scales);

enum class Stacking {
  one_after_another,  // every row of parts[0], then of parts[1], ...
  row_by_row,         // row 0 of every part, then row 1, ... (the parts have as many rows)
};

// Writes `parts` in device layout, stacked as `stacking` says, into `values` and `scales` (sized by
// stacked_plane_bytes).
Status stack_into_planes(std::span<const WeightView* const> parts, Stacking stacking, uint8_t* values, uint8_t* scales);

}  // namespace kipp::cuda
