#include "quant/float_formats.h"

namespace kipp {

float fp16_to_f32(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal: value = mantissa * 2^-24, exactly representable in FP32.
  float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

uint16_t f32_to_fp16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (magnitude >= 0x38800000u) {                                              // normal in FP16 (>= 2^-14)
    uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Subnormal or zero in FP16: round |value| / 2^-24 to an integer, ties to even.
  float scaled = std::bit_cast<float>(magnitude) * 0x1p24f;
  uint32_t whole = static_cast<uint32_t>(scaled);
  float fraction = scaled - static_cast<float>(whole);
  if (fraction > 0.5f || (fraction == 0.5f && (whole & 1u))) ++whole;
  return static_cast<uint16_t>(sign | whole);  // whole == 0x400 becomes the smallest normal
}

}  // namespace kipp
