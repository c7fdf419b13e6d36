#include "synthetic_checkpoint.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "model/artifact_layout.h"
#include "quant/float_formats.h"
#include "util/files.h"

namespace kipp::testing {
namespace {

using Json = nlohmann::ordered_json;

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_hash(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Weight scales: unit-variance activations through projections (std 1/sqrt(fan_in)), norm gains
// near 1, and an embedding std of 0.05 so that tied logits have a spread of about
// 0.05 * sqrt(hidden). Embedding and lm_head rows are further scaled by a log-normal factor
// (sigma 1, see row_gain): with rows of equal norm, a few percent of positions would have a
// top-1/top-2 logit margin small enough for an error inside the 5e-5 NMSE gate to flip the argmax;
// unequal rows spread the top logits apart.
// The token embedding (model.embed_tokens.weight, or embed_tokens.weight in an embedding
// checkpoint) and the untied head.
bool is_vocabulary_matrix(const std::string& hf_name) {
  return hf_name == "model.embed_tokens.weight" || hf_name == "embed_tokens.weight" || hf_name == "lm_head.weight";
}

float element_std(const std::string& hf_name, uint64_t rows, uint64_t cols) {
  if (rows == 1) return 0.0f;  // norm vectors use their own rule
  if (is_vocabulary_matrix(hf_name)) return 0.05f;
  return 1.0f / std::sqrt(float(cols));
}

Status write_text(const std::string& path, const std::string& text) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);  // 1_Pooling/
  if (error) return fail(path, ": cannot create its directory: ", error.message());
  KIPP_ASSIGN(AtomicFile out, AtomicFile::create(path));
  KIPP_TRY(out.write(text.data(), text.size()));
  return out.commit();
}

// One shard: the header, then each tensor's data in the header's (name) order.
// `head_is_embedding`: lm_head.weight (a stored tied head) gets the embedding's values.
Status write_shard(const std::string& path, const PlannedShard& shard, uint64_t seed, bool head_is_embedding) {
  KIPP_ASSIGN(AtomicFile out, AtomicFile::create(path));
  const std::string header = safetensors_header(shard.tensors);
  const uint64_t header_size = header.size();
  KIPP_TRY(out.write(&header_size, 8));
  KIPP_TRY(out.write(header.data(), header.size()));
  std::vector<uint16_t> chunk;
  constexpr uint64_t kChunk = 1 << 20;
  for (const ExpectedTensor* t : in_file_order(shard.tensors)) {
    const bool copy = head_is_embedding && t->hf_name == "lm_head.weight";
    const std::string values_of = copy ? "model.embed_tokens.weight" : t->hf_name;
    const SyntheticTensor values(seed, values_of, t->rows, t->cols);
    const uint64_t count = t->rows * t->cols;
    for (uint64_t start = 0; start < count; start += kChunk) {
      const uint64_t n = std::min(kChunk, count - start);
      chunk.resize(n);
      values.fill(start, chunk.data(), n);
      KIPP_TRY(out.write(chunk.data(), n * 2));
    }
  }
  return out.commit();
}

// exp(N(0, 1)) for one row, from two uniform draws (Box-Muller).
float row_gain(uint64_t seed, uint64_t name_hash, uint64_t row) {
  const uint64_t bits = mix(mix(seed ^ name_hash ^ 0x5eedull) + row);
  const double u1 = (double(bits >> 40) + 0.5) * 0x1p-24, u2 = double(bits & 0xffffff) * 0x1p-24;
  return float(std::exp(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2)));
}

}  // namespace

SyntheticTensor::SyntheticTensor(uint64_t seed, const std::string& hf_name, uint64_t rows, uint64_t cols)
    : seed_(seed),
      name_hash_(name_hash(hf_name)),
      cols_(cols),
      norm_(rows == 1),
      vocabulary_(is_vocabulary_matrix(hf_name)),
      std_(element_std(hf_name, rows, cols)) {}

void SyntheticTensor::fill(uint64_t start, uint16_t* out, uint64_t count) const {
  uint64_t gain_row = ~0ull;
  float gain = 1.0f;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t index = start + i;
    const uint64_t bits = mix(mix(seed_ ^ name_hash_) + index);
    const float uniform = float(bits >> 40) * 0x1p-24f * 2.0f - 1.0f;  // [-1, 1)
    if (norm_) {
      out[i] = f32_to_bf16(1.0f + 0.25f * uniform);  // norm gains in [0.75, 1.25)
      continue;
    }
    if (vocabulary_ && index / cols_ != gain_row) {
      gain_row = index / cols_;
      gain = row_gain(seed_, name_hash_, gain_row);
    }
    out[i] = f32_to_bf16(uniform * std::sqrt(3.0f) * std_ * gain);
  }
}

Status write_synthetic_checkpoint(const SyntheticOptions& options) {
  const Checkpoint& c = *options.checkpoint;
  const PublishedLayout& layout = options.layout ? *options.layout : default_layout_for(c);
  const Checkpoint& published = layout_checkpoint(layout);
  // An embedding checkpoint has no head either way: tying only changes its config.json's flag.
  const bool same_tying = published.tied == c.tied || !c.has_head();
  if (published.variant != c.variant || !same_tying || published.role != c.role)
    return fail(c.id, " (", variant_name(c.variant), c.tied ? ", tied, " : ", untied, ", role_name(c.role),
                ") cannot take the files of ", published.id, " (", variant_name(published.variant),
                published.tied ? ", tied, " : ", untied, ", role_name(published.role), ")");
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) return fail(options.out_dir, ": cannot create: ", error.message());
  const std::string dir = options.out_dir + "/";

  KIPP_ASSIGN(auto small_files, published_small_files(c, layout, options.sources));
  for (const auto& [name, content] : small_files) KIPP_TRY(write_text(dir + name, content));
  const std::vector<PlannedShard> shards = plan_shards(c, layout);
  for (const PlannedShard& shard : shards)
    KIPP_TRY(write_shard(dir + shard.file_name, shard, options.seed, c.tied && options.head_equals_embedding));
  if (shards.size() > 1) KIPP_TRY(write_text(dir + "model.safetensors.index.json", safetensors_index(shards, layout)));
  return {};
}

Status write_safetensors(const std::string& path, const std::vector<RawTensor>& tensors) {
  Json header;
  uint64_t offset = 0;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  KIPP_ASSIGN(AtomicFile out, AtomicFile::create(path));
  const uint64_t size = text.size();
  KIPP_TRY(out.write(&size, 8));
  KIPP_TRY(out.write(text.data(), text.size()));
  for (const RawTensor& t : tensors) KIPP_TRY(out.write(t.data.data(), t.data.size()));
  return out.commit();
}

}  // namespace kipp::testing
