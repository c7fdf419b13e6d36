#include "synthetic_checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

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
float element_std(const std::string& hf_name, uint64_t rows, uint64_t cols) {
  if (rows == 1) return 0.0f;  // norm vectors use their own rule
  if (hf_name == "model.embed_tokens.weight" || hf_name == "lm_head.weight") return 0.05f;
  return 1.0f / std::sqrt(float(cols));
}

Status write_text(const std::string& path, const std::string& text) {
  KIPP_ASSIGN(AtomicFile out, AtomicFile::create(path));
  KIPP_TRY(out.write(text.data(), text.size()));
  return out.commit();
}

Json config_json(const Checkpoint& c) {
  Json config;
  config["architectures"] = {"Qwen3ForCausalLM"};
  config["attention_bias"] = false;
  config["attention_dropout"] = 0.0;
  config["bos_token_id"] = family::token_endoftext;
  config["eos_token_id"] = c.eos_id();
  config["head_dim"] = c.head_dim();
  config["hidden_act"] = "silu";
  config["hidden_size"] = c.hidden;
  config["initializer_range"] = 0.02;
  config["intermediate_size"] = c.ffn;
  config["max_position_embeddings"] = c.context;
  config["max_window_layers"] = c.layers;
  config["model_type"] = "qwen3";
  config["num_attention_heads"] = c.q_heads;
  config["num_hidden_layers"] = c.layers;
  config["num_key_value_heads"] = c.kv_heads();
  config["rms_norm_eps"] = 1e-6;
  config["rope_scaling"] = nullptr;
  config["rope_theta"] = double(c.rope_theta);
  config["sliding_window"] = nullptr;
  config["tie_word_embeddings"] = c.tied;
  config["torch_dtype"] = "bfloat16";
  config["transformers_version"] = "4.51.0";
  config["use_cache"] = true;
  config["use_sliding_window"] = false;
  config["vocab_size"] = c.vocab();
  return config;
}

// A safetensors header: JSON padded with spaces to a multiple of 8 bytes.
std::string safetensors_header(const std::vector<const ExpectedTensor*>& tensors) {
  Json header;
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const ExpectedTensor* t : tensors) {
    const uint64_t bytes = t->rows * t->cols * 2;
    header[t->hf_name] = {{"dtype", "BF16"}, {"shape", t->hf_shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

Status write_shard(const std::string& path, const std::vector<const ExpectedTensor*>& tensors, uint64_t seed) {
  KIPP_ASSIGN(AtomicFile out, AtomicFile::create(path));
  const std::string header = safetensors_header(tensors);
  const uint64_t header_size = header.size();
  KIPP_TRY(out.write(&header_size, 8));
  KIPP_TRY(out.write(header.data(), header.size()));
  std::vector<uint16_t> chunk;
  constexpr uint64_t kChunk = 1 << 20;
  for (const ExpectedTensor* t : tensors) {
    const uint64_t count = t->rows * t->cols;
    for (uint64_t start = 0; start < count; start += kChunk) {
      const uint64_t n = std::min(kChunk, count - start);
      chunk.resize(n);
      for (uint64_t i = 0; i < n; ++i) chunk[i] = synthetic_value(seed, t->hf_name, start + i, t->rows, t->cols);
      KIPP_TRY(out.write(chunk.data(), n * 2));
    }
  }
  return out.commit();
}

bool is_vocabulary_matrix(const std::string& hf_name) {
  return hf_name == "model.embed_tokens.weight" || hf_name == "lm_head.weight";
}

// exp(N(0, 1)) for one row, from two uniform draws (Box-Muller).
float row_gain(uint64_t seed, const std::string& hf_name, uint64_t row) {
  const uint64_t bits = mix(mix(seed ^ name_hash(hf_name) ^ 0x5eedull) + row);
  const double u1 = (double(bits >> 40) + 0.5) * 0x1p-24, u2 = double(bits & 0xffffff) * 0x1p-24;
  return float(std::exp(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2)));
}

}  // namespace

uint16_t synthetic_value(uint64_t seed, const std::string& hf_name, uint64_t index, uint64_t rows, uint64_t cols) {
  const uint64_t bits = mix(mix(seed ^ name_hash(hf_name)) + index);
  const float uniform = float(bits >> 40) * 0x1p-24f * 2.0f - 1.0f;  // [-1, 1)
  if (rows == 1) return f32_to_bf16(1.0f + 0.25f * uniform);       // norm gains in [0.75, 1.25)
  const float gain = is_vocabulary_matrix(hf_name) ? row_gain(seed, hf_name, index / cols) : 1.0f;
  return f32_to_bf16(uniform * std::sqrt(3.0f) * element_std(hf_name, rows, cols) * gain);
}

Status write_synthetic_checkpoint(const SyntheticOptions& options) {
  const Checkpoint& c = *options.checkpoint;
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) return fail(options.out_dir, ": cannot create: ", error.message());
  const std::string dir = options.out_dir + "/";

  KIPP_TRY(write_text(dir + "config.json", config_json(c).dump(2) + "\n"));
  Json generation = {{"bos_token_id", family::token_endoftext}, {"eos_token_id", c.stop_ids()},
                     {"pad_token_id", family::token_endoftext}};
  KIPP_TRY(write_text(dir + "generation_config.json", generation.dump(2) + "\n"));
  KIPP_TRY(write_text(dir + "LICENSE", "Synthetic Kipp test checkpoint. Tokenizer files: Qwen, Apache-2.0.\n"));

  KIPP_ASSIGN(std::string tokenizer, read_text_file(options.tokenizer_dir + "/tokenizer.json"));
  KIPP_TRY(write_text(dir + "tokenizer.json", tokenizer));
  KIPP_ASSIGN(std::string tokenizer_config, read_text_file(options.tokenizer_dir + "/tokenizer_config.json"));
  if (c.variant == Variant::base) {  // base checkpoints end text with <|endoftext|>
    Json parsed = Json::parse(tokenizer_config, nullptr, false);
    if (parsed.is_discarded()) return fail(options.tokenizer_dir, "/tokenizer_config.json: not valid JSON");
    parsed["eos_token"] = "<|endoftext|>";
    tokenizer_config = parsed.dump(2);
  }
  KIPP_TRY(write_text(dir + "tokenizer_config.json", tokenizer_config));

  const std::vector<ExpectedTensor> tensors = expected_tensors(c);
  if (options.shards == 0) {
    std::vector<const ExpectedTensor*> all;
    for (const auto& t : tensors) all.push_back(&t);
    return write_shard(dir + "model.safetensors", all, options.seed);
  }
  Json weight_map = Json::object();
  uint64_t total = 0;
  const size_t per_shard = (tensors.size() + options.shards - 1) / options.shards;
  for (uint32_t s = 0; s < options.shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", s + 1, options.shards);
    std::vector<const ExpectedTensor*> part;
    for (size_t i = s * per_shard; i < std::min(tensors.size(), (s + 1) * per_shard); ++i) {
      part.push_back(&tensors[i]);
      weight_map[tensors[i].hf_name] = name;
      total += tensors[i].rows * tensors[i].cols * 2;
    }
    KIPP_TRY(write_shard(dir + name, part, options.seed));
  }
  Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  return write_text(dir + "model.safetensors.index.json", index.dump(2) + "\n");
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
