// The block formats of quantized projection weights (32 weights per block, rows % 32 == 0),
// in ggml's byte layouts so a Kipp artifact also loads in llama.cpp:
//   q8_0          ggml Q8_0: fp16 scale d, 32 x int8;             value = d * q
//   affine4_gs32  ggml Q4_1: fp16 scale d, fp16 min m, 16 bytes;   value = d * q + m
//                 element j in the low nibble and j+16 in the high nibble of byte j.
// Both quantize against the fp16-rounded scale (and min) so encoder and decoder agree exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "util/error.h"

namespace kipp {

inline constexpr size_t kBlockSize = 32;

struct BlockQ8_0 {
  uint16_t scale_fp16;
  int8_t q[kBlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockAffine4 {
  uint16_t scale_fp16;
  uint16_t min_fp16;
  uint8_t nibbles[kBlockSize / 2];
};
static_assert(sizeof(BlockAffine4) == 20);

// Quantize one block of 32 finite values.
BlockQ8_0 quantize_q8_0(const float* values);
BlockAffine4 quantize_affine4(const float* values);

void dequantize_q8_0(const BlockQ8_0& block, float* out);
void dequantize_affine4(const BlockAffine4& block, float* out);

}  // namespace kipp
