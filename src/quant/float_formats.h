// Bit-exact conversions between FP32 and the 16-bit formats in artifacts:
// BF16 (weights, KV) and IEEE FP16 (block scales of q8_0 and affine4_gs32).
#pragma once

#include <bit>
#include <cstdint>

namespace kipp {

inline float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

// Round to nearest, ties to even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline bool bf16_is_finite(uint16_t bits) { return (bits & 0x7f80u) != 0x7f80u; }

float fp16_to_f32(uint16_t bits);
uint16_t f32_to_fp16(float value);  // round to nearest, ties to even; overflow gives infinity

}  // namespace kipp
