// Writes the seed corpus of kipp_fuzz_gguf into a directory: small valid GGUF images (each well
// under 64 KiB) that reach every part of the parser and as far into the strict loader as a
// small file can: every value type, every tensor type Kipp knows, a non-default alignment, and
// a Kipp-shaped header for each test entry (all its metadata, a short vocabulary, its tensor
// directory with small shapes). Usage: kipp_fuzz_seeds OUT_DIR
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_format.h"
#include "model/artifact_layout.h"
#include "registry/registry.h"

namespace {

using kipp::gguf::TensorType;
using kipp::gguf::ValueType;

class Image {
 public:
  explicit Image(uint32_t alignment = kipp::gguf::kDefaultAlignment) : alignment_(alignment) {}

  template <class T>
  static void put(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  static void put_string(std::string& out, std::string_view text) {
    put<uint64_t>(out, text.size());
    out.append(text);
  }

  void kv(std::string_view key, ValueType type, const std::string& payload) {
    put_string(metadata_, key);
    put<uint32_t>(metadata_, uint32_t(type));
    metadata_ += payload;
    ++n_kv_;
  }
  void kv_u32(std::string_view key, uint32_t v) { kv(key, ValueType::u32, raw(v)); }
  void kv_f32(std::string_view key, float v) { kv(key, ValueType::f32, raw(v)); }
  void kv_bool(std::string_view key, bool v) { kv(key, ValueType::boolean, raw<uint8_t>(v ? 1 : 0)); }
  void kv_string(std::string_view key, std::string_view v) {
    std::string payload;
    put_string(payload, v);
    kv(key, ValueType::string, payload);
  }
  void kv_strings(std::string_view key, const std::vector<std::string>& items) {
    std::string payload = raw(uint32_t(ValueType::string)) + raw(uint64_t(items.size()));
    for (const auto& item : items) put_string(payload, item);
    kv(key, ValueType::array, payload);
  }
  template <class T>
  void kv_array(std::string_view key, ValueType element, const std::vector<T>& items) {
    std::string payload = raw(uint32_t(element)) + raw(uint64_t(items.size()));
    for (const T& item : items) payload += raw(item);
    kv(key, ValueType::array, payload);
  }

  // dims[0] is the contiguous dimension; the data is a deterministic byte pattern.
  void tensor(std::string_view name, std::vector<uint64_t> dims, TensorType type) {
    const auto info = kipp::gguf::tensor_type_info(uint32_t(type));
    uint64_t elements = 1;
    for (uint64_t d : dims) elements *= d;
    const uint64_t bytes = elements / info->block_elements * info->block_bytes;
    put_string(directory_, name);
    put<uint32_t>(directory_, uint32_t(dims.size()));
    for (uint64_t d : dims) put<uint64_t>(directory_, d);
    put<uint32_t>(directory_, uint32_t(type));
    put<uint64_t>(directory_, data_.size());
    for (uint64_t i = 0; i < bytes; ++i) data_.push_back(char(i * 131 + data_.size()));
    while (data_.size() % alignment_) data_.push_back(0);
    ++n_tensors_;
  }

  std::string bytes() const {
    std::string out = "GGUF";
    put<uint32_t>(out, kipp::gguf::kVersion);
    put<int64_t>(out, n_tensors_);
    put<int64_t>(out, n_kv_);
    out += metadata_ + directory_;
    while (out.size() % alignment_) out.push_back(0);
    return out + data_;
  }

  template <class T>
  static std::string raw(T value) {
    std::string out;
    put(out, value);
    return out;
  }

 private:
  uint32_t alignment_;
  int64_t n_tensors_ = 0, n_kv_ = 0;
  std::string metadata_, directory_, data_;
};

int written = 0;

bool save(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  if (bytes.size() >= 64 * 1024) {
    std::fprintf(stderr, "kipp_fuzz_seeds: seed %s is %zu bytes, over 64 KiB\n", name.c_str(), bytes.size());
    return false;
  }
  std::ofstream out(dir / name, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ++written;
  return bool(out);
}

// Every metadata entry the converter writes, with a short vocabulary, and the entry's tensor
// directory with every tensor cut to a small shape of its expected type.
std::string kipp_shaped(const kipp::Checkpoint& c, kipp::QuantScheme scheme, bool full_shapes_for_norms) {
  namespace keys = kipp::keys;
  Image image;
  image.kv_string(keys::architecture, "qwen3");
  image.kv_string(keys::name, c.repository);
  image.kv_u32(keys::alignment, kipp::gguf::kDefaultAlignment);
  image.kv_u32(keys::file_type, kipp::llama_file_type(scheme));
  image.kv_u32(keys::context_length, c.context);
  image.kv_u32(keys::embedding_length, c.hidden);
  image.kv_u32(keys::block_count, c.layers);
  image.kv_u32(keys::feed_forward_length, c.ffn);
  image.kv_u32(keys::head_count, c.q_heads);
  image.kv_u32(keys::head_count_kv, c.kv_heads);
  image.kv_u32(keys::key_length, c.head_dim());
  image.kv_u32(keys::value_length, c.head_dim());
  image.kv_u32(keys::rope_dimension_count, c.head_dim());
  image.kv_f32(keys::rope_freq_base, c.rope_theta);
  image.kv_f32(keys::rms_epsilon, c.rms_norm_eps());
  image.kv_string(keys::tokenizer_model, kipp::kTokenizerModel);
  image.kv_string(keys::tokenizer_pre, kipp::kTokenizerPre);
  std::vector<std::string> tokens = {"!", "\"", "#", "a", "b", "ab", "\xc4\xa0", "\xc4\xa0t", "<|im_end|>"};
  image.kv_strings(keys::tokens, tokens);
  image.kv_array<int32_t>(keys::token_type, ValueType::i32, {1, 1, 1, 1, 1, 1, 1, 1, 3});
  image.kv_strings(keys::merges, {"a b", "\xc4\xa0 t"});
  image.kv_u32(keys::bos_token_id, kipp::family::token_endoftext);
  image.kv_u32(keys::eos_token_id, c.eos_id());
  image.kv_u32(keys::padding_token_id, kipp::family::token_endoftext);
  image.kv_bool(keys::add_bos_token, false);
  image.kv_string(keys::chat_template, "{% for m in messages %}{{ m.content }}{% endfor %}");
  image.kv_u32(keys::kipp_format_version, kipp::kArtifactFormatVersion);
  image.kv_string(keys::kipp_checkpoint, c.id);
  image.kv_string(keys::kipp_repository, c.repository);
  image.kv_string(keys::kipp_revision, c.revision);
  image.kv_string(keys::kipp_quant_scheme, kipp::quant_scheme_name(scheme));
  image.kv_string(keys::kipp_converter, "kipp-convert 1");
  image.kv_strings(keys::kipp_source_files, {"model.safetensors"});
  image.kv_strings(keys::kipp_source_sha256, {std::string(64, 'a')});
  for (const kipp::ExpectedTensor& t : kipp::expected_tensors(c)) {
    const TensorType type = kipp::expected_tensor_type(t, scheme);
    if (t.is_vector() && full_shapes_for_norms) image.tensor(t.gguf_name, t.gguf_dims(), type);
    else image.tensor(t.gguf_name, t.is_vector() ? std::vector<uint64_t>{32} : std::vector<uint64_t>{32, 1}, type);
  }
  return image.bytes();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kipp_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  bool ok = true;

  ok &= save(dir, "empty-header.gguf", Image().bytes());

  {  // every scalar and array value type
    Image image;
    image.kv("v.u8", ValueType::u8, Image::raw<uint8_t>(200));
    image.kv("v.i8", ValueType::i8, Image::raw<int8_t>(-100));
    image.kv("v.u16", ValueType::u16, Image::raw<uint16_t>(60000));
    image.kv("v.i16", ValueType::i16, Image::raw<int16_t>(-30000));
    image.kv_u32("v.u32", 4000000000u);
    image.kv("v.i32", ValueType::i32, Image::raw<int32_t>(-2000000000));
    image.kv_f32("v.f32", 1.5f);
    image.kv_bool("v.bool", true);
    image.kv_string("v.string", "hello");
    image.kv("v.u64", ValueType::u64, Image::raw<uint64_t>(1ull << 40));
    image.kv("v.i64", ValueType::i64, Image::raw<int64_t>(-(1ll << 40)));
    image.kv("v.f64", ValueType::f64, Image::raw<double>(-2.25));
    image.kv_array<uint8_t>("a.u8", ValueType::u8, {1, 2, 3});
    image.kv_array<int16_t>("a.i16", ValueType::i16, {-1, 2});
    image.kv_array<int32_t>("a.i32", ValueType::i32, {1, 2, 3, 4});
    image.kv_array<float>("a.f32", ValueType::f32, {0.5f, -1.0f});
    image.kv_array<uint8_t>("a.bool", ValueType::boolean, {0, 1});
    image.kv_array<uint64_t>("a.u64", ValueType::u64, {7});
    image.kv_array<double>("a.f64", ValueType::f64, {});
    image.kv_strings("a.string", {"x", "", "yz"});
    ok &= save(dir, "value-types.gguf", image.bytes());
  }

  {  // every tensor type Kipp can describe, one small tensor each
    Image image;
    const uint32_t ids[] = {0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 30};
    for (uint32_t id : ids) {
      const auto info = kipp::gguf::tensor_type_info(id);
      image.tensor("t." + std::string(info->name), {info->block_elements, 2}, TensorType(id));
    }
    ok &= save(dir, "tensor-types.gguf", image.bytes());
  }

  {  // a non-default alignment
    Image image(64);
    image.kv_u32("general.alignment", 64);
    image.tensor("a", {8}, TensorType::f32);
    image.tensor("b", {32, 3}, TensorType::q8_0);
    image.tensor("c", {4, 2, 2, 2}, TensorType::bf16);
    ok &= save(dir, "alignment-64.gguf", image.bytes());
  }

  for (std::string_view id : {"kipp-test/qwen3-tiny", "kipp-test/qwen3-tiny-untied"}) {
    const kipp::Checkpoint* c = kipp::find_checkpoint(id);
    if (!c) {
      std::fprintf(stderr, "kipp_fuzz_seeds: no registry entry %.*s\n", int(id.size()), id.data());
      return 1;
    }
    const std::string stem = std::string(id.substr(id.find('/') + 1));
    for (kipp::QuantScheme scheme : {kipp::QuantScheme::bf16, kipp::QuantScheme::q8_0, kipp::QuantScheme::affine4_gs32})
      ok &= save(dir, stem + "." + std::string(kipp::quant_scheme_name(scheme)) + ".gguf",
                 kipp_shaped(*c, scheme, false));
    ok &= save(dir, stem + ".bf16-norms.gguf", kipp_shaped(*c, kipp::QuantScheme::bf16, true));
  }
  std::printf("kipp_fuzz_seeds: %d seeds in %s\n", written, dir.c_str());
  return ok ? 0 : 1;
}
