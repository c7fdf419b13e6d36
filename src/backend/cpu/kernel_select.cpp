// Which kernel table runs, and what every set shares: the FP16 table block scales are read from
// and the quantized activations products read. These are plain code, the same whatever set runs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "quant/float_formats.h"

namespace kipp::cpu {

const Kernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx512: return avx512_kernels();
    case Isa::avx2: return avx2_kernels();
    case Isa::portable: break;
  }
  return portable_kernels();
}

const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> values(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits) values[bits] = fp16_to_f32(uint16_t(bits));
    return values;
  }();
  return table.data();
}

void quantize_activation(const float* x, uint32_t n, int16_t* out, float* scale, float* block_sum) {
  float largest = 0.0f;
  bool finite = true;
  for (uint32_t i = 0; i < n; ++i) {
    largest = std::max(largest, std::fabs(x[i]));
    finite = finite && std::isfinite(x[i]);
  }
  if (largest == 0.0f || !finite) {
    // Zeros stay zeros; a non-finite activation makes every product NaN, as it would in FP32.
    *scale = finite ? 0.0f : std::nanf("");
    for (uint32_t i = 0; i < n; ++i) out[i] = 0;
  } else {
    const float inverse = 32767.0f / largest;
    for (uint32_t i = 0; i < n; ++i) out[i] = int16_t(std::lrint(x[i] * inverse));
    *scale = largest / 32767.0f;
  }
  for (uint32_t b = 0; b < n / 32; ++b) {
    int32_t sum = 0;
    for (uint32_t i = 0; i < 32; ++i) sum += out[32 * b + i];
    block_sum[b] = float(sum);
  }
}

void quantize_activation_blocks(const float* x, uint32_t n, int8_t* out, float* scale, float* sum) {
  constexpr uint32_t kBlock = 32;
  for (uint32_t b = 0; b < n / kBlock; ++b) {
    const float* block = x + b * kBlock;
    int8_t* q = out + b * kBlock;
    float largest = 0.0f;
    bool finite = true;
    for (uint32_t i = 0; i < kBlock; ++i) {
      largest = std::max(largest, std::fabs(block[i]));
      finite = finite && std::isfinite(block[i]);
    }
    if (largest == 0.0f || !finite) {
      for (uint32_t i = 0; i < kBlock; ++i) q[i] = 0;
      scale[b] = sum[b] = finite ? 0.0f : std::nanf("");
      continue;
    }
    const float inverse = 127.0f / largest;
    int total = 0;
    for (uint32_t i = 0; i < kBlock; ++i) {
      q[i] = int8_t(std::lrint(block[i] * inverse));
      total += q[i];
    }
    scale[b] = largest / 127.0f;
    sum[b] = scale[b] * float(total);
  }
}

}  // namespace kipp::cpu
