#include "backend/cuda/weight_planes.h"

#include <cstring>
#include <vector>

#include "quant/blocks.h"

namespace kipp::cuda {

PlaneBytes plane_bytes(WeightFormat format, uint64_t rows, uint64_t cols) {
  const uint64_t blocks = rows * (cols / kBlockSize);
  switch (format) {
    case WeightFormat::f32: return {rows * cols * 4, 0};
    case WeightFormat::bf16: return {rows * cols * 2, 0};
    case WeightFormat::q8_0: return {blocks * kBlockSize, blocks * 2};
    case WeightFormat::affine4: return {blocks * kBlockSize / 2, blocks * 4};
  }
  return {};
}

Result<PlaneBytes> stacked_plane_bytes(std::span<const WeightView* const> parts) {
  if (parts.empty()) return fail("no tensors to stack");
  uint64_t rows = 0;
  for (const WeightView* part : parts) {
    if (part->format != parts[0]->format || part->cols != parts[0]->cols)
      return fail("tensors stacked into one device weight differ in format or width");
    rows += part->rows;
  }
  return plane_bytes(parts[0]->format, rows, parts[0]->cols);
}

void split_into_planes(const WeightView& part, uint8_t* values, uint8_t* scales) {
  const uint64_t blocks = part.rows * (part.cols / kBlockSize);
  switch (part.format) {
    case WeightFormat::f32:
    case WeightFormat::bf16: std::memcpy(values, part.data, part.bytes); return;
    case WeightFormat::q8_0: {
      const auto* from = reinterpret_cast<const BlockQ8_0*>(part.data);
      for (uint64_t b = 0; b < blocks; ++b) {
        std::memcpy(values + b * kBlockSize, from[b].q, kBlockSize);
        std::memcpy(scales + b * 2, &from[b].scale_fp16, 2);
      }
      return;
    }
    case WeightFormat::affine4: {
      const auto* from = reinterpret_cast<const BlockAffine4*>(part.data);
      for (uint64_t b = 0; b < blocks; ++b) {
        std::memcpy(values + b * kBlockSize / 2, from[b].nibbles, kBlockSize / 2);
        std::memcpy(scales + b * 4, &from[b].scale_fp16, 2);
        std::memcpy(scales + b * 4 + 2, &from[b].min_fp16, 2);
      }
      return;
    }
  }
}

Status stack_into_planes(std::span<const WeightView* const> parts, Stacking stacking, uint8_t* values,
                         uint8_t* scales) {
  KIPP_ASSIGN(const PlaneBytes total, stacked_plane_bytes(parts));
  if (stacking == Stacking::one_after_another) {
    for (const WeightView* part : parts) {
      const PlaneBytes bytes = plane_bytes(part->format, part->rows, part->cols);
      split_into_planes(*part, values, scales);
      values += bytes.values;
      scales += bytes.scales;
    }
    return {};
  }
  for (const WeightView* part : parts)
    if (part->rows != parts[0]->rows) return fail("tensors stacked row by row differ in rows");
  // Each part split on its own first (values plane, then scales plane), then dealt out row by row.
  std::vector<uint8_t> split(total.values + total.scales);
  const PlaneBytes part_bytes = plane_bytes(parts[0]->format, parts[0]->rows, parts[0]->cols);
  const PlaneBytes row = plane_bytes(parts[0]->format, 1, parts[0]->cols);
  const uint64_t part_size = part_bytes.values + part_bytes.scales;
  for (size_t i = 0; i < parts.size(); ++i)
    split_into_planes(*parts[i], split.data() + i * part_size, split.data() + i * part_size + part_bytes.values);
  for (uint64_t r = 0; r < parts[0]->rows; ++r)
    for (size_t i = 0; i < parts.size(); ++i) {
      const uint8_t* part = split.data() + i * part_size;
      std::memcpy(values, part + r * row.values, row.values);
      std::memcpy(scales, part + part_bytes.values + r * row.scales, row.scales);
      values += row.values;
      scales += row.scales;
    }
  return {};
}

}  // namespace kipp::cuda
