// The half-precision conversions the CUDA backend uses, for the CPU emulator (see cuda_runtime.h).
#pragma once

#include <cstdint>

#include "cuda_runtime.h"
#include "quant/float_formats.h"

struct __half {
  uint16_t bits;
};

inline __half __ushort_as_half(unsigned short bits) { return {bits}; }
inline float __half2float(__half h) { return kipp::fp16_to_f32(h.bits); }
