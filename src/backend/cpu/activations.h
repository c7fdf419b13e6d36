// The activation matrices of the fast CPU backend's passes: FP32 rows, plus the quantized forms
// the products with Q8_0 and Q4_1 weights (and, with --bf16-activations, BF16 weights) read
// (kernels.h), kept beside them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/kernels.h"

namespace kipp::cpu {

// An activation matrix: `rows` rows of `width` floats, with the row pointers the kernels write to.
// A matrix that feeds projections also keeps its rows in the quantized forms products with Q8_0
// and Q4_1 weights read (kernels.h), filled by quantize_row.
struct Activations {
  Activations(uint32_t rows, uint32_t width_, bool feeds_projections = false)
      : width(width_), values(size_t(rows) * width_), row_pointers(rows) {
    for (uint32_t r = 0; r < rows; ++r) row_pointers[r] = row(r);
    if (!feeds_projections) return;
    int16_values.resize(size_t(rows) * width);
    int16_scales.resize(rows);
    int16_block_sums.resize(size_t(rows) * width / 32);
    int16_planes.resize(tile_planes_bytes(rows, width));
    int8_values.resize(size_t(rows) * width);
    int8_block_scales.resize(size_t(rows) * width / 32);
    int8_block_sums.resize(size_t(rows) * width / 32);
    bf16_values.resize(size_t(rows) * width);
  }
  float* row(uint32_t r) { return values.data() + size_t(r) * width; }
  const float* row(uint32_t r) const { return values.data() + size_t(r) * width; }
  // Row r in the forms products take (each at most once), by the kernel set's quantizers.
  void quantize_row(uint32_t r, std::span<const ActivationForm> forms, const Kernels& kernels) {
    const size_t at = size_t(r) * width;
    bool int16_done = false, int8_done = false, bf16_done = false;
    for (ActivationForm form : forms) {
      if (form == ActivationForm::int16 && !int16_done) {
        kernels.quantize_activation(row(r), width, &int16_values[at], &int16_scales[r], &int16_block_sums[at / 32]);
        if (kernels.split_int16) kernels.split_int16(&int16_values[at], width, r, int16_planes.data());
        int16_done = true;
      } else if (form == ActivationForm::int8_blocks && !int8_done) {
        kernels.quantize_activation_blocks(row(r), width, &int8_values[at], &int8_block_scales[at / 32],
                                           &int8_block_sums[at / 32]);
        int8_done = true;
      } else if (form == ActivationForm::bf16 && !bf16_done) {
        kernels.round_bf16(row(r), width, &bf16_values[at]);
        bf16_done = true;
      }
    }
  }
  // The MatmulArgs of a product of `weight`, reading the first `tokens` rows in `form`, written to `out`.
  MatmulArgs times(const PackedMatrix& weight, ActivationForm form, uint32_t tokens, float* const* out) const {
    return times_rows(weight, form, 0, tokens, out);
  }
  // The same for rows [first, first + tokens); `first` is a multiple of kPlaneTokens, where the
  // tile sets' byte planes of a group of tokens begin.
  MatmulArgs times_rows(const PackedMatrix& weight, ActivationForm form, uint32_t first, uint32_t tokens,
                        float* const* out) const {
    const size_t at = size_t(first) * width;
    return {&weight,
            form,
            values.data() + at,
            bf16_values.data() + at,
            int16_values.data() + at,
            int16_scales.data() + first,
            int16_block_sums.data() + at / 32,
            int16_planes.data() + at * 2,
            int8_values.data() + at,
            int8_block_scales.data() + at / 32,
            int8_block_sums.data() + at / 32,
            width,
            tokens,
            out,
            0,
            0,
            fp16_table()};
  }
  uint32_t width;
  std::vector<float> values;
  std::vector<float*> row_pointers;
  std::vector<int16_t> int16_values;
  std::vector<float> int16_scales, int16_block_sums;
  std::vector<uint8_t> int16_planes;  // filled for kernel sets with tile products (Kernels::split_int16)
  std::vector<int8_t> int8_values;
  std::vector<float> int8_block_scales, int8_block_sums;
  std::vector<uint16_t> bf16_values;  // filled with --bf16-activations (Kernels::round_bf16)
};

}  // namespace kipp::cpu
