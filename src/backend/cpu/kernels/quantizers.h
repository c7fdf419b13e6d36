// Activations quantized for the products (kernels.h): int16 per row, int8 per block, and (sets
// with BF16 pair products) rounded to BF16.
// One part of every kernel set: kernels_impl.h includes it once in each kernels_<isa>.cpp,
// after the parts before it, whose names it uses.
#pragma once

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

// Rounding to nearest even as the definitions in kernels.h say (lrint in the default mode): a
// value of magnitude below 2^22 plus and minus 1.5 x 2^23 comes back rounded to an integer (FP32
// has no bits left for the fraction), exactly, in every set; the conversion then only drops the
// zero fraction. So every set gives the definitions' bits.

vf round_to_integer(vf y) { return (y + splat(0x1.8p23f)) - splat(0x1.8p23f); }

vf absolute(vf v) { return (vf)((vu32)v & 0x7fffffffu); }

// The largest magnitude of n values (a multiple of kLanes) and whether all are finite.
float largest_magnitude(const float* x, uint32_t n, bool* finite) {
  vf largest{}, poisoned{};
  for (uint32_t i = 0; i < n; i += kLanes) {
    const vf v = load_f32(x + i);
    const vf a = absolute(v);
    largest = a > largest ? a : largest;
    poisoned += v - v;  // 0 for a finite value, NaN for an infinity or a NaN
  }
  float lanes[kLanes], poison[kLanes];
  __builtin_memcpy(lanes, &largest, sizeof largest);
  __builtin_memcpy(poison, &poisoned, sizeof poisoned);
  float result = 0.0f;
  *finite = true;
  for (int l = 0; l < kLanes; ++l) {
    result = lanes[l] > result ? lanes[l] : result;
    *finite = *finite && poison[l] == 0.0f;
  }
  return result;
}

typedef int16_t vi16h __attribute__((vector_size(2 * kLanes)));
typedef int8_t vi8h __attribute__((vector_size(kLanes)));

int32_t sum_lanes(vi32 v) {
  int32_t lanes[kLanes], total = 0;
  __builtin_memcpy(lanes, &v, sizeof v);
  for (int l = 0; l < kLanes; ++l) total += lanes[l];
  return total;
}

void quantize_int16(const float* x, uint32_t n, int16_t* out, float* scale, float* block_sum) {
  bool finite;
  const float largest = largest_magnitude(x, n, &finite);
  if (largest == 0.0f || !finite) {
    // Zeros stay zeros; a non-finite activation makes every product NaN, as it would in FP32.
    *scale = finite ? 0.0f : __builtin_nanf("");
    __builtin_memset(out, 0, n * sizeof(int16_t));
    for (uint32_t b = 0; b < n / kBlock; ++b) block_sum[b] = 0.0f;
    return;
  }
  const vf inverse = splat(32767.0f / largest);
  for (uint32_t b = 0; b < n / kBlock; ++b) {
    vi32 sum{};
    for (int v = 0; v < kVecs; ++v) {
      const uint32_t at = b * kBlock + v * kLanes;
      const vi32 q = __builtin_convertvector(round_to_integer(load_f32(x + at) * inverse), vi32);
      const vi16h narrow = __builtin_convertvector(q, vi16h);
      __builtin_memcpy(out + at, &narrow, sizeof narrow);
      sum += q;
    }
    block_sum[b] = float(sum_lanes(sum));
  }
  *scale = largest / 32767.0f;
}

void quantize_int8_blocks(const float* x, uint32_t n, int8_t* out, float* scale, float* sum) {
  for (uint32_t b = 0; b < n / kBlock; ++b) {
    const float* block = x + b * kBlock;
    bool finite;
    const float largest = largest_magnitude(block, kBlock, &finite);
    if (largest == 0.0f || !finite) {
      __builtin_memset(out + b * kBlock, 0, kBlock);
      scale[b] = sum[b] = finite ? 0.0f : __builtin_nanf("");
      continue;
    }
    const vf inverse = splat(127.0f / largest);
    vi32 total{};
    for (int v = 0; v < kVecs; ++v) {
      const vi32 q = __builtin_convertvector(round_to_integer(load_f32(block + v * kLanes) * inverse), vi32);
      const vi8h narrow = __builtin_convertvector(q, vi8h);
      __builtin_memcpy(out + b * kBlock + v * kLanes, &narrow, sizeof narrow);
      total += q;
    }
    scale[b] = largest / 127.0f;
    sum[b] = scale[b] * float(sum_lanes(total));
  }
}

#if KIPP_BF16_DOT
// Round to nearest even on the bits: adding 0x7fff plus the lowest kept bit carries into the kept
// half exactly when the dropped half is over one half, or one half with the kept half odd (a
// finite value too large for BF16 carries into the exponent: infinity); a NaN keeps its high
// half, made quiet.
void round_bf16(const float* x, uint32_t n, uint16_t* out) {
  for (uint32_t i = 0; i < n; i += kLanes) {
    vu32 bits;
    __builtin_memcpy(&bits, x + i, sizeof bits);
    const vu32 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const vu32 word = (bits & 0x7fffffffu) > 0x7f800000u ? (bits >> 16) | 0x40u : rounded;
    const vu16 narrow = __builtin_convertvector(word, vu16);
    __builtin_memcpy(out + i, &narrow, sizeof narrow);
  }
}
#endif

}  // namespace
}  // namespace kipp::cpu::KIPP_KERNEL_NS
