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

// Where row i of a panel goes among a column's kPanelRows slots (see the header).
uint32_t panel_slot(WeightFormat format, uint32_t lanes, uint32_t i) {
  if (format != WeightFormat::bf16 || 2 * lanes > kPanelRows) return i;
  const uint32_t run = i / (2 * lanes) * (2 * lanes), j = i % (2 * lanes);
  return j < lanes ? run + 2 * j : run + 2 * (j - lanes) + 1;
}

// Rows [begin, end) of a FP32 or BF16 matrix (whole panels) into the panel layout.
template <class Word>
void pack_panels(const WeightView& view, const PackingLayout& layout, uint32_t begin, uint32_t end,
                 uint8_t* destination) {
  const bool pairs = view.format == WeightFormat::bf16 && layout.bf16_column_pairs;
  uint32_t slot[kPanelRows];
  for (uint32_t i = 0; i < kPanelRows; ++i) slot[i] = panel_slot(view.format, layout.lanes, i);
  const Word* source = reinterpret_cast<const Word*>(view.data);
  Word* packed = reinterpret_cast<Word*>(destination);
  for (uint64_t row0 = begin; row0 < end; row0 += kPanelRows) {
    const Word* rows = source + row0 * view.cols;
    Word* panel = packed + row0 * view.cols;
    for (uint64_t c = 0; c < view.cols; ++c)
      for (uint32_t i = 0; i < kPanelRows; ++i) {
        const uint64_t at = pairs ? (c & ~uint64_t(1)) * kPanelRows + 2 * i + (c & 1) : c * kPanelRows + slot[i];
        panel[at] = rows[i * view.cols + c];
      }
  }
}

// Rows [begin, end) of a Q8_0 or Q4_1 matrix (whole groups of `lanes` rows) into records (see
// the header).
void pack_block_groups(const WeightView& view, uint32_t lanes, uint32_t begin, uint32_t end, uint8_t* destination) {
  const uint32_t size = block_bytes(view.format);
  const uint64_t blocks = view.cols / 32;
  const bool q8 = view.format == WeightFormat::q8_0;
  for (uint64_t row = begin; row < end; ++row) {
    const uint64_t group = row / lanes, lane = row % lanes;
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint8_t* block = view.data + (row * blocks + b) * size;
      uint8_t* record = destination + (group * blocks + b) * lanes * size;
      std::memcpy(record + 2 * lane, block, 2);  // scale
      if (q8) {
        for (uint32_t p = 0; p < 16; ++p)
          std::memcpy(record + 2 * lanes + (p * lanes + lane) * 2, block + 2 + 2 * p, 2);
      } else {
        std::memcpy(record + 2 * lanes + 2 * lane, block + 2, 2);  // minimum
        for (uint32_t i = 0; i < 4; ++i) std::memcpy(record + 4 * lanes + (i * lanes + lane) * 4, block + 4 + 4 * i, 4);
      }
    }
  }
}

}  // namespace

Result<std::unique_ptr<uint8_t[]>> pack_matrix(const WeightView& view, ThreadPool& pool, const PackingLayout& layout) {
  if (view.rows % kPanelRows != 0 || view.cols % 32 != 0)
    return fail("cannot pack a ", view.rows, " x ", view.cols, " matrix: rows must be a multiple of ", kPanelRows,
                " and columns of 32");
  std::unique_ptr<uint8_t[]> packed(new (std::nothrow) uint8_t[view.bytes]);
  if (!packed) return fail("cannot allocate ", view.bytes >> 20, " MiB for packed weights");
  uint8_t* destination = packed.get();
  pool.run([&](unsigned index, unsigned count) {
    const Range rows = split(uint32_t(view.rows), index, count, kPanelRows);
    if (rows.begin == rows.end) return;
    switch (view.format) {
      case WeightFormat::f32: return pack_panels<uint32_t>(view, layout, rows.begin, rows.end, destination);
      case WeightFormat::bf16: return pack_panels<uint16_t>(view, layout, rows.begin, rows.end, destination);
      case WeightFormat::q8_0:
      case WeightFormat::affine4: return pack_block_groups(view, layout.lanes, rows.begin, rows.end, destination);
    }
  });
  return packed;
}

Result<PackedMatrix> PackedWeights::pack_one(const WeightView& mapped, ThreadPool& pool, const PackingLayout& layout) {
  KIPP_ASSIGN(std::unique_ptr<uint8_t[]> packed, cpu::pack_matrix(mapped, pool, layout));
  release_pages(mapped.data, mapped.bytes);
  const PackedMatrix matrix = packed_as(mapped, packed.get());
  bytes_ += mapped.bytes;
  buffers_.push_back(std::move(packed));
  return matrix;
}

bool head_is_packable(const WeightView& head) { return head.data && head.rows % kPanelRows == 0; }

Result<std::unique_ptr<PackedWeights>> PackedWeights::pack(const ModelWeights& mapped, ThreadPool& pool,
                                                           const PackingLayout& layout) {
  auto packed = std::unique_ptr<PackedWeights>(new PackedWeights());
  for (const LayerWeights& layer : mapped.layers) {
    PackedLayer& out = packed->layers_.emplace_back();
    for (auto [from, to] : {std::pair{&layer.attn_q, &out.attn_q},
                            {&layer.attn_k, &out.attn_k},
                            {&layer.attn_v, &out.attn_v},
                            {&layer.attn_output, &out.attn_output},
                            {&layer.ffn_gate, &out.ffn_gate},
                            {&layer.ffn_up, &out.ffn_up},
                            {&layer.ffn_down, &out.ffn_down},
                            {&layer.ffn_gate_inp, &out.ffn_gate_inp}}) {
      if (!from->data) continue;  // a MoE layer has no dense MLP, a dense one no router
      KIPP_ASSIGN(*to, packed->pack_one(*from, pool, layout));
    }
    for (auto [from, to] : {std::pair{&layer.ffn_gate_exps, &out.gate_exps},
                            {&layer.ffn_up_exps, &out.up_exps},
                            {&layer.ffn_down_exps, &out.down_exps}}) {
      for (uint64_t e = 0; e < from->experts; ++e) {
        KIPP_ASSIGN(PackedMatrix expert, packed->pack_one(from->expert(e), pool, layout));
        to->push_back(expert);
      }
    }
  }
  if (head_is_packable(mapped.lm_head)) {
    KIPP_ASSIGN(packed->lm_head_, packed->pack_one(mapped.lm_head, pool, layout));
  }
  return packed;
}

}  // namespace kipp::cpu
