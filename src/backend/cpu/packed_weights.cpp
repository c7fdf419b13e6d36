#include "backend/cpu/packed_weights.h"

#include <cstring>
#include <new>

#include "util/mapped_file.h"

namespace kipp::cpu {

uint32_t block_bytes(WeightFormat format) {
  switch (format) {
    case WeightFormat::f32: return 128;
    case WeightFormat::bf16: return 64;
    case WeightFormat::q8_0: return 34;
    case WeightFormat::affine4: return 20;
  }
  return 0;
}

namespace {

// One BF16 block of 32 words, interleaved in runs of 2 x lanes (see the header).
void interleave_bf16(const uint8_t* source, uint32_t lanes, uint8_t* destination) {
  uint16_t words[32], interleaved[32];
  std::memcpy(words, source, sizeof words);
  for (uint32_t run = 0; run < 32; run += 2 * lanes)
    for (uint32_t i = 0; i < lanes; ++i) {
      interleaved[run + 2 * i] = words[run + i];
      interleaved[run + 2 * i + 1] = words[run + lanes + i];
    }
  std::memcpy(destination, interleaved, sizeof interleaved);
}

}  // namespace

Status PackedWeights::pack_matrix(WeightView& view, ThreadPool& pool, uint32_t lanes) {
  if (view.rows % kPackRows != 0 || view.cols % 32 != 0)
    return fail("cannot pack a ", view.rows, " x ", view.cols, " matrix: rows must be a multiple of ", kPackRows,
                " and columns of 32");
  const uint32_t size = block_bytes(view.format);
  const uint64_t blocks = view.cols / 32;
  std::unique_ptr<uint8_t[]> packed(new (std::nothrow) uint8_t[view.bytes]);
  if (!packed) return fail("cannot allocate ", view.bytes >> 20, " MiB for packed weights");
  uint8_t* destination = packed.get();
  pool.run([&](unsigned index, unsigned count) {
    const Range rows = split(uint32_t(view.rows), index, count, kPackRows);
    for (uint64_t row = rows.begin; row < rows.end; ++row) {
      const uint8_t* source = view.data + row * blocks * size;
      const uint64_t group = row / kPackRows, lane = row % kPackRows;
      for (uint64_t b = 0; b < blocks; ++b) {
        uint8_t* block = destination + ((group * blocks + b) * kPackRows + lane) * size;
        if (view.format == WeightFormat::bf16) {
          interleave_bf16(source + b * size, lanes, block);
        } else {
          std::memcpy(block, source + b * size, size);
        }
      }
    }
  });
  release_pages(view.data, view.bytes);
  view.data = packed.get();
  bytes_ += view.bytes;
  buffers_.push_back(std::move(packed));
  return {};
}

Result<std::unique_ptr<PackedWeights>> PackedWeights::pack(const ModelWeights& mapped, ThreadPool& pool,
                                                          uint32_t lanes) {
  auto packed = std::unique_ptr<PackedWeights>(new PackedWeights());
  packed->views_ = mapped;
  for (LayerWeights& layer : packed->views_.layers)
    for (WeightView* view : {&layer.attn_q, &layer.attn_k, &layer.attn_v, &layer.attn_output, &layer.ffn_gate,
                             &layer.ffn_up, &layer.ffn_down})
      KIPP_TRY(packed->pack_matrix(*view, pool, lanes));
  KIPP_TRY(packed->pack_matrix(packed->views_.lm_head, pool, lanes));
  return packed;
}

}  // namespace kipp::cpu
