#include "convert/converter.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "convert/hf_config.h"
#include "convert/hf_tokenizer.h"
#include "convert/safetensors.h"
#include "convert/sentence_transformers.h"
#include "gguf/gguf_writer.h"
#include "quant/blocks.h"
#include "quant/float_formats.h"
#include "registry/registry.h"
#include "util/files.h"
#include "util/sha256.h"

namespace kipp {
namespace {

constexpr uint64_t kChunkBytes = 8ull << 20;  // source bytes read per step: bounds the converter's memory
constexpr const char* kConverterVersion = "kipp-convert 1";

constexpr const char* kHeadName = "lm_head.weight";

// The token embedding's source name: model.embed_tokens.weight, or embed_tokens.weight in an
// embedding checkpoint (saved without the prefix).
std::string embedding_name(const Checkpoint& c) { return std::string(c.source_prefix()) + "embed_tokens.weight"; }

// The checkpoints that store a tied head (Qwen3-0.6B and -1.7B) name their embedding so.
constexpr const char* kStoredBesideEmbedding = "model.embed_tokens.weight";

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string text;
  for (uint64_t d : shape) text += (text.empty() ? "" : ", ") + std::to_string(d);
  return "[" + text + "]";
}

Status check_tensor(const SafetensorsTensor& found, const std::string& name, const std::vector<uint64_t>& shape,
                    const Checkpoint& checkpoint) {
  if (found.dtype != "BF16") return fail(name, ": dtype ", found.dtype, ", expected BF16");
  if (found.shape != shape)
    return fail(name, ": shape ", shape_text(found.shape), ", expected ", shape_text(shape), " for ", checkpoint.id);
  return {};
}

// Every expected tensor present with its dtype and shape, nothing else; a tied checkpoint may also
// store lm_head.weight, which must then have the embedding's dtype and shape.
Status check_tensor_set(const SafetensorsCheckpoint& source, const std::vector<ExpectedTensor>& expected,
                        const Checkpoint& checkpoint) {
  std::map<std::string, const ExpectedTensor*> by_name;
  for (const auto& tensor : expected) by_name[tensor.hf_name] = &tensor;
  for (const auto& [name, tensor] : source.tensors()) {
    if (by_name.count(name)) continue;
    if (checkpoint.tied && name == kHeadName) {
      const std::vector<uint64_t> embedding_shape = {checkpoint.vocab(), checkpoint.hidden};
      KIPP_TRY(check_tensor(tensor, name + " (stored beside the tied embedding)", embedding_shape, checkpoint));
      continue;
    }
    return fail(source.shard_files()[tensor.shard], ": unexpected tensor ", name, " for ", checkpoint.id);
  }
  for (const auto& tensor : expected) {
    const SafetensorsTensor* found = source.find(tensor.hf_name);
    if (!found) return fail("safetensors: missing tensor ", tensor.hf_name, " for ", checkpoint.id);
    KIPP_TRY(check_tensor(*found, tensor.hf_name, tensor.hf_shape(), checkpoint));
  }
  return {};
}

// Compares a stored tied head with the embedding, chunk by chunk, counting the elements whose bits differ.
Result<StoredTiedHead> compare_stored_head(const SafetensorsCheckpoint& source, const Checkpoint& checkpoint) {
  StoredTiedHead head;
  const SafetensorsTensor* stored = source.find(kHeadName);
  if (!checkpoint.tied || !stored) return head;  // an untied checkpoint's lm_head is its head
  const SafetensorsTensor* embedding = source.find(embedding_name(checkpoint));
  head.present = true;
  head.elements = stored->bytes / 2;
  std::vector<uint16_t> a(kChunkBytes / 2), b(kChunkBytes / 2);
  for (uint64_t offset = 0; offset < stored->bytes; offset += kChunkBytes) {
    const uint64_t size = std::min(kChunkBytes, stored->bytes - offset);
    KIPP_TRY(source.read(*stored, offset, a.data(), size));
    KIPP_TRY(source.read(*embedding, offset, b.data(), size));
    for (uint64_t i = 0; i < size / 2; ++i) head.differing_elements += a[i] != b[i];
  }
  return head;
}

// Converts `count` BF16 values of one source chunk into the artifact's encoding of that tensor.
Status encode_chunk(const uint16_t* source, uint64_t count, uint64_t first_index, gguf::TensorType type,
                    const std::string& name, std::vector<uint8_t>& out) {
  for (uint64_t i = 0; i < count; ++i)
    if (!bf16_is_finite(source[i]))
      return fail(name, ": element ", first_index + i, " is not finite (NaN or infinity)");
  out.clear();
  switch (type) {
    case gguf::TensorType::bf16:
      out.resize(count * 2);
      std::memcpy(out.data(), source, count * 2);
      return {};
    case gguf::TensorType::f32: {
      out.resize(count * 4);
      for (uint64_t i = 0; i < count; ++i) {
        const float widened = bf16_to_f32(source[i]);
        std::memcpy(out.data() + 4 * i, &widened, 4);
      }
      return {};
    }
    case gguf::TensorType::q8_0:
    case gguf::TensorType::q4_1: {
      const bool q8 = type == gguf::TensorType::q8_0;
      const size_t block_bytes = q8 ? sizeof(BlockQ8_0) : sizeof(BlockAffine4);
      out.resize(count / kBlockSize * block_bytes);
      float values[kBlockSize];
      for (uint64_t b = 0; b < count / kBlockSize; ++b) {
        for (size_t i = 0; i < kBlockSize; ++i) values[i] = bf16_to_f32(source[b * kBlockSize + i]);
        if (q8) {
          const BlockQ8_0 block = quantize_q8_0(values);
          std::memcpy(out.data() + b * block_bytes, &block, block_bytes);
        } else {
          const BlockAffine4 block = quantize_affine4(values);
          std::memcpy(out.data() + b * block_bytes, &block, block_bytes);
        }
      }
      return {};
    }
    default: return fail(name, ": no encoder for the target type");
  }
}

void add_metadata(gguf::Writer& writer, const Checkpoint& c, QuantScheme scheme, HeadScheme head,
                  const ConvertedTokenizer& tok, const std::vector<std::string>& files,
                  const std::vector<std::string>& hashes) {
  writer.add_string(keys::architecture, gguf_architecture(c));
  writer.add_string(keys::name, c.repository);
  writer.add_string(keys::license, "apache-2.0");
  writer.add_u32(keys::alignment, gguf::kDefaultAlignment);
  writer.add_u32(keys::file_type, llama_file_type(scheme));
  if (scheme != QuantScheme::bf16 || head != HeadScheme::bf16)
    writer.add_u32(keys::quantization_version, gguf::kQuantizationVersion);
  auto key = [&c](std::string_view qwen3_key) { return architecture_key(c, qwen3_key); };
  writer.add_u32(key(keys::context_length), c.context);
  writer.add_u32(key(keys::embedding_length), c.hidden);
  writer.add_u32(key(keys::block_count), c.layers);
  writer.add_u32(key(keys::feed_forward_length), c.ffn);
  writer.add_u32(key(keys::head_count), c.q_heads);
  writer.add_u32(key(keys::head_count_kv), c.kv_heads);
  writer.add_u32(key(keys::key_length), c.head_dim());
  writer.add_u32(key(keys::value_length), c.head_dim());
  writer.add_u32(key(keys::rope_dimension_count), c.head_dim());
  writer.add_f32(key(keys::rope_freq_base), c.rope_theta);
  writer.add_f32(key(keys::rms_epsilon), c.rms_norm_eps());
  if (c.is_moe()) {
    writer.add_u32(keys::expert_count, c.experts.count);
    writer.add_u32(keys::expert_used_count, c.experts.per_token);
    writer.add_u32(keys::expert_feed_forward_length, c.experts.ffn);
  }
  writer.add_string(keys::tokenizer_model, kTokenizerModel);
  writer.add_string(keys::tokenizer_pre, kTokenizerPre);
  writer.add_string_array(keys::tokens, tok.tokens);
  writer.add_i32_array(keys::token_type, tok.token_types);
  writer.add_string_array(keys::merges, tok.merges);
  writer.add_u32(keys::bos_token_id, family::token_endoftext);
  writer.add_u32(keys::eos_token_id, tok.eos_id);
  writer.add_u32(keys::padding_token_id, tok.padding_id);
  writer.add_bool(keys::add_bos_token, false);
  if (c.appends_endoftext()) {
    writer.add_bool(keys::add_eos_token, true);
    writer.add_u32(key(keys::pooling_type), keys::kPoolingLast);
  }
  if (tok.chat_template) writer.add_string(keys::chat_template, *tok.chat_template);
  writer.add_u32(keys::kipp_format_version, kArtifactFormatVersion);
  writer.add_string(keys::kipp_checkpoint, c.id);
  writer.add_string(keys::kipp_repository, c.repository);
  writer.add_string(keys::kipp_revision, c.revision);
  writer.add_string(keys::kipp_quant_scheme, quant_scheme_name(scheme));
  if (head != HeadScheme::bf16) writer.add_string(keys::kipp_quant_head, head_scheme_name(head));
  writer.add_string(keys::kipp_converter, kConverterVersion);
  writer.add_string_array(keys::kipp_source_files, files);
  writer.add_string_array(keys::kipp_source_sha256, hashes);
}

// The SHA-256 of each of `files` in `dir`: the one `known` already holds (a download verified it),
// else hashed here.
Result<std::vector<std::string>> sha256_of_files(const std::string& dir, const std::vector<std::string>& files,
                                                 const std::map<std::string, std::string>& known) {
  std::vector<std::string> hashes;
  for (const auto& file : files) {
    if (auto it = known.find(file); it != known.end()) {
      hashes.push_back(it->second);
      continue;
    }
    KIPP_ASSIGN(std::string hash, sha256_file(dir + "/" + file));
    hashes.push_back(hash);
  }
  return hashes;
}

// Every tensor's bytes after the header, in the header's order, a bounded chunk of rows at a time:
// a stack of experts is written expert after expert, so it is never held whole.
Status write_tensors(const SafetensorsCheckpoint& source, const std::vector<ExpectedTensor>& expected,
                     const ConvertOptions& options, uint64_t source_bytes_total, gguf::Writer& writer,
                     AtomicFile& out) {
  std::vector<uint16_t> chunk;
  std::vector<uint8_t> encoded;
  ConvertProgress progress{0, source_bytes_total};
  for (const auto& tensor : expected) {
    const gguf::TensorType type = expected_tensor_type(tensor, options.scheme, options.head);
    const uint64_t row_values = tensor.cols;
    const uint64_t rows_per_chunk = std::max<uint64_t>(1, kChunkBytes / (row_values * 2));
    for (const ExpectedTensor& piece : unstacked({tensor})) {
      const std::string& name = piece.hf_name;
      const SafetensorsTensor& src = *source.find(name);
      for (uint64_t row = 0; row < tensor.rows; row += rows_per_chunk) {
        const uint64_t rows = std::min(rows_per_chunk, tensor.rows - row);
        chunk.resize(rows * row_values);
        KIPP_TRY(source.read(src, row * row_values * 2, chunk.data(), chunk.size() * 2));
        KIPP_TRY(encode_chunk(chunk.data(), chunk.size(), row * row_values, type, name, encoded));
        KIPP_TRY(writer.append_tensor_bytes(out, encoded));
        progress.bytes_done += chunk.size() * 2;
        if (options.on_progress) options.on_progress(progress);
      }
    }
  }
  return {};
}

}  // namespace

std::string describe_stored_tied_head(const StoredTiedHead& head, std::string_view checkpoint_id) {
  if (!head.present) return {};
  std::string line =
      std::string(kHeadName) + ": stored although " + std::string(checkpoint_id) + " ties the head to the embedding; ";
  if (head.differing_elements == 0) line += "bit for bit equal to " + std::string(kStoredBesideEmbedding);
  else
    line += "differs from " + std::string(kStoredBesideEmbedding) + " in " + std::to_string(head.differing_elements) +
            " of " + std::to_string(head.elements) + " elements";
  return line + "; not written (the embedding is the head, as in transformers)";
}

std::string describe_long_context_config(std::string_view checkpoint_id) {
  return std::string(kLongContextConfig) +
         ": the million-token context settings (Dual Chunk Attention) are not read; " + std::string(checkpoint_id) +
         " runs with config.json's context, as the registry pins it";
}

std::function<void(const ConvertProgress&)> show_progress_on(ProgressDisplay& display) {
  return [&display, started = false](const ConvertProgress& progress) mutable {
    if (!started) display.start("converting", progress.bytes_total, 0);
    started = true;
    display.update(progress.bytes_done);
  };
}

Result<ConvertReport> convert_checkpoint(const ConvertOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const Checkpoint* checkpoint = find_checkpoint(options.checkpoint_id);
  if (!checkpoint)
    return fail("checkpoint ", options.checkpoint_id, " is not in the Kipp registry (see `kipp registry`)");
  const Checkpoint& c = *checkpoint;
  const std::string& dir = options.source_dir;

  // 1. Everything is checked before anything is written.
  KIPP_ASSIGN(std::string config_text, read_text_file(dir + "/config.json"));
  KIPP_TRY(check_hf_config(config_text, c));
  ConvertedTokenizer tokenizer;
  {
    KIPP_ASSIGN(std::string tokenizer_text, read_text_file(dir + "/tokenizer.json"));
    KIPP_ASSIGN(std::string tokenizer_config, read_text_file(dir + "/tokenizer_config.json"));
    KIPP_ASSIGN(tokenizer, convert_hf_tokenizer(tokenizer_text, tokenizer_config, c));
  }
  if (c.role == Role::embed) KIPP_TRY(check_sentence_transformers(dir, c));
  KIPP_ASSIGN(SafetensorsCheckpoint source, SafetensorsCheckpoint::open(dir));
  const std::vector<ExpectedTensor> expected = expected_tensors(c);
  KIPP_TRY(check_tensor_set(source, unstacked(expected), c));
  KIPP_ASSIGN(StoredTiedHead stored_head, compare_stored_head(source, c));

  // 2. Provenance: the SHA-256 of every source file that went into the artifact.
  std::vector<std::string> files = {"config.json", "tokenizer.json", "tokenizer_config.json"};
  if (c.role == Role::embed)
    for (std::string_view file : sentence_transformers_files()) files.emplace_back(file);
  files.insert(files.end(), source.source_files().begin(), source.source_files().end());
  KIPP_ASSIGN(std::vector<std::string> hashes, sha256_of_files(dir, files, options.known_sha256));

  // 3. Header, then tensors streamed in directory order.
  gguf::Writer writer;
  add_metadata(writer, c, options.scheme, options.head, tokenizer, files, hashes);
  tokenizer = ConvertedTokenizer{};  // the writer holds its own copy now
  uint64_t source_bytes_total = 0;
  for (const auto& tensor : expected) {
    KIPP_TRY(writer.add_tensor(tensor.gguf_name, tensor.gguf_dims(),
                               expected_tensor_type(tensor, options.scheme, options.head)));
    for (const ExpectedTensor& piece : unstacked({tensor})) source_bytes_total += source.find(piece.hf_name)->bytes;
  }
  if (auto parent = std::filesystem::path(options.out_path).parent_path(); !parent.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(parent, ignored);
  }
  KIPP_ASSIGN(AtomicFile out, AtomicFile::create(options.out_path));
  KIPP_TRY(writer.write_header(out));

  KIPP_TRY(write_tensors(source, expected, options, source_bytes_total, writer, out));
  const uint64_t written = out.written();
  KIPP_TRY(writer.finish(out));

  ConvertReport report;
  report.tensors = expected.size();
  report.bytes_written = written;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  report.peak_rss_bytes = peak_rss_bytes();
  report.stored_tied_head = stored_head;
  report.long_context_config_beside = std::filesystem::exists(dir + "/" + kLongContextConfig);
  return report;
}

}  // namespace kipp
