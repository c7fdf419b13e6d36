// The bfloat16 conversions the CUDA backend uses, for the CPU emulator (see cuda_runtime.h).
#pragma once

#include <cstdint>

#include "cuda_runtime.h"
#include "quant/float_formats.h"

struct __nv_bfloat16 {
  uint16_t bits;
};

inline __nv_bfloat16 __float2bfloat16_rn(float value) { return {kipp::f32_to_bf16(value)}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.bits; }
