// BF16 and FP16 conversions, checked against hand values and, for FP16, exhaustively against the
// processor's own conversion instructions (an independent implementation): F16C on x86-64, the
// FCVT instructions behind __fp16 on AArch64.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "quant/float_formats.h"

namespace kipp {
namespace {

// The hardware reference, rounding to nearest even.
#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hardware_f32_to_fp16(float value) {
  return uint16_t(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(value), _MM_FROUND_TO_NEAREST_INT), 0));
}
__attribute__((target("f16c"))) float hardware_fp16_to_f32(uint16_t bits) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits)));
}

bool has_hardware_fp16() {  // F16C: CPUID leaf 1, ECX bit 29
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}
#elif defined(__aarch64__)
// __fp16 is the Arm half type (IEEE binary16); its conversions compile to FCVT.
uint16_t hardware_f32_to_fp16(float value) {
  const __fp16 half = static_cast<__fp16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}
float hardware_fp16_to_f32(uint16_t bits) {
  __fp16 half;
  std::memcpy(&half, &bits, sizeof half);
  return static_cast<float>(half);
}
bool has_hardware_fp16() { return true; }  // FCVT is in every AArch64 processor
#else
uint16_t hardware_f32_to_fp16(float) { return 0; }
float hardware_fp16_to_f32(uint16_t) { return 0.0f; }
bool has_hardware_fp16() { return false; }
#endif

TEST(Bf16, RoundsToNearestTiesToEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to the even mantissa (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3*2^-8 is halfway between 0x3f81 and 0x3f82: ties to even (0x3f82).
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  // Just above halfway rounds up.
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // The largest finite float rounds to infinity in bf16 (it is above the bf16 max + half ulp).
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(Bf16, WideningIsExactForEveryPattern) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float value = bf16_to_f32(uint16_t(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(f32_to_bf16(value), bits) << std::hex << bits;
  }
}

TEST(Fp16, AgreesWithTheHardwareForEveryHalfPattern) {
  if (!has_hardware_fp16()) GTEST_SKIP() << "this CPU has no FP16 conversion instructions to compare against";
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float expected = hardware_fp16_to_f32(uint16_t(bits));
    const float actual = fp16_to_f32(uint16_t(bits));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(actual));
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(actual), std::bit_cast<uint32_t>(expected)) << std::hex << bits;
    ASSERT_EQ(f32_to_fp16(actual), bits) << std::hex << bits;
  }
}

TEST(Fp16, RoundsLikeTheHardwareOnManyFloats) {
  if (!has_hardware_fp16()) GTEST_SKIP() << "this CPU has no FP16 conversion instructions to compare against";
  // Every 4099th float bit pattern covers normals, subnormals, halfway cases and overflow.
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099) {
    const float value = std::bit_cast<float>(uint32_t(bits));
    if (std::isnan(value)) continue;
    const uint16_t expected = hardware_f32_to_fp16(value);
    ASSERT_EQ(f32_to_fp16(value), expected) << std::hexfloat << value;
  }
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);  // halfway to the next binade: ties to even = infinity
  EXPECT_EQ(f32_to_fp16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_fp16(0x1p-25f), 0x0000);  // halfway to zero: ties to even
}

}  // namespace
}  // namespace kipp
