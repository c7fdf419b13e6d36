#include "model/model_file.h"

#include <cstring>
#include <utility>

#include "util/printable.h"
#include "util/utf8.h"

namespace kipp {
namespace {

// Longest token text accepted; real Qwen3 tokens are far shorter.
constexpr size_t kMaxTokenBytes = 1024;
// Byte-level BPE: the first 256 tokens are the byte symbols, then merge r creates token 256 + r.
constexpr size_t kByteTokens = 256;
// Kipp writes no scores (byte-level BPE ranks by merges), but llama.cpp reads them when present.
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";

Status expect_u32(const gguf::File& file, std::string_view key, uint32_t expected, const Checkpoint& c) {
  KIPP_ASSIGN(uint32_t value, file.get_u32(key));
  if (value != expected) return fail("metadata ", key, " is ", value, ", expected ", expected, " for ", c.id);
  return {};
}

Status expect_f32(const gguf::File& file, std::string_view key, float expected, const Checkpoint& c) {
  KIPP_ASSIGN(float value, file.get_f32(key));
  if (std::memcmp(&value, &expected, sizeof value) != 0)
    return fail("metadata ", key, " is ", value, ", expected ", expected, " for ", c.id);
  return {};
}

Status expect_string(const gguf::File& file, std::string_view key, std::string_view expected) {
  KIPP_ASSIGN(std::string_view value, file.get_string(key));
  if (value != expected) return fail("metadata ", key, " is \"", printable(value), "\", expected \"", expected, "\"");
  return {};
}

Result<uint32_t> token_id(const gguf::File& file, std::string_view key, uint32_t vocab) {
  KIPP_ASSIGN(uint32_t id, file.get_u32(key));
  if (id >= vocab) return fail("metadata ", key, " is ", id, ", outside the vocabulary of ", vocab);
  return id;
}

Result<const Checkpoint*> match_registry(const gguf::File& file) {
  KIPP_ASSIGN(std::string_view architecture, file.get_string(keys::architecture));
  if (architecture != "qwen3" && architecture != "qwen3moe")
    return fail("metadata ", keys::architecture, " is \"", printable(architecture),
                "\", expected \"qwen3\" or \"qwen3moe\"");
  KIPP_ASSIGN(std::string_view repository, file.get_string(keys::kipp_repository));
  KIPP_ASSIGN(std::string_view revision, file.get_string(keys::kipp_revision));
  const Checkpoint* checkpoint = find_checkpoint_by_source(repository, revision);
  if (!checkpoint)
    return fail("checkpoint ", printable(repository), "@", printable(revision),
                " is not in the Kipp registry (see `kipp registry`)");
  KIPP_ASSIGN(uint32_t format, file.get_u32(keys::kipp_format_version));
  if (format != kArtifactFormatVersion)
    return fail("metadata ", keys::kipp_format_version, " is ", format, ", expected ", kArtifactFormatVersion);
  KIPP_TRY(expect_string(file, keys::kipp_checkpoint, checkpoint->id));
  KIPP_TRY(expect_string(file, keys::architecture, gguf_architecture(*checkpoint)));
  return checkpoint;
}

Status check_hyperparameters(const gguf::File& file, const Checkpoint& c) {
  auto key = [&c](std::string_view qwen3_key) { return architecture_key(c, qwen3_key); };
  KIPP_TRY(expect_u32(file, key(keys::context_length), c.context, c));
  KIPP_TRY(expect_u32(file, key(keys::embedding_length), c.hidden, c));
  KIPP_TRY(expect_u32(file, key(keys::block_count), c.layers, c));
  KIPP_TRY(expect_u32(file, key(keys::feed_forward_length), c.ffn, c));
  KIPP_TRY(expect_u32(file, key(keys::head_count), c.q_heads, c));
  KIPP_TRY(expect_u32(file, key(keys::head_count_kv), c.kv_heads, c));
  KIPP_TRY(expect_u32(file, key(keys::key_length), c.head_dim(), c));
  KIPP_TRY(expect_u32(file, key(keys::value_length), c.head_dim(), c));
  KIPP_TRY(expect_u32(file, key(keys::rope_dimension_count), c.head_dim(), c));
  KIPP_TRY(expect_f32(file, key(keys::rope_freq_base), c.rope_theta, c));
  KIPP_TRY(expect_f32(file, key(keys::rms_epsilon), c.rms_norm_eps(), c));
  if (c.is_moe()) {
    KIPP_TRY(expect_u32(file, keys::expert_count, c.experts.count, c));
    KIPP_TRY(expect_u32(file, keys::expert_used_count, c.experts.per_token, c));
    KIPP_TRY(expect_u32(file, keys::expert_feed_forward_length, c.experts.ffn, c));
  }
  // An embedding artifact tells llama.cpp what Kipp knows from the registry: the last token's state,
  // with <|endoftext|> appended to every input.
  if (c.appends_endoftext()) {
    KIPP_TRY(expect_u32(file, key(keys::pooling_type), keys::kPoolingLast, c));
    KIPP_ASSIGN(bool add_eos, file.get_bool(keys::add_eos_token));
    if (!add_eos) return fail("metadata ", keys::add_eos_token, " is false; ", c.id, " appends <|endoftext|>");
  }
  if (file.alignment != gguf::kDefaultAlignment)
    return fail("metadata ", keys::alignment, " is ", file.alignment, ", Kipp artifacts use ", gguf::kDefaultAlignment);
  return {};
}

Result<QuantScheme> check_scheme(const gguf::File& file) {
  KIPP_ASSIGN(std::string_view name, file.get_string(keys::kipp_quant_scheme));
  auto scheme = parse_quant_scheme(name);
  if (!scheme)
    return fail("metadata ", keys::kipp_quant_scheme, " is \"", printable(name),
                "\", expected bf16, q8_0 or affine4_gs32");
  KIPP_ASSIGN(uint32_t file_type, file.get_u32(keys::file_type));
  if (file_type != llama_file_type(*scheme))
    return fail("metadata ", keys::file_type, " is ", file_type, ", expected ", llama_file_type(*scheme),
                " for scheme ", name);
  return *scheme;
}

// kipp.quant.head: absent means BF16 (artifacts before the key existed, and every BF16 head).
Result<HeadScheme> check_head(const gguf::File& file) {
  if (!file.find(keys::kipp_quant_head)) return HeadScheme::bf16;
  KIPP_ASSIGN(std::string_view name, file.get_string(keys::kipp_quant_head));
  auto head = parse_head_scheme(name);
  if (!head) return fail("metadata ", keys::kipp_quant_head, " is \"", printable(name), "\", expected bf16 or q8_0");
  return *head;
}

Result<TokenizerData> check_tokenizer(const gguf::File& file, const Checkpoint& c) {
  KIPP_TRY(expect_string(file, keys::tokenizer_model, kTokenizerModel));
  KIPP_TRY(expect_string(file, keys::tokenizer_pre, kTokenizerPre));
  TokenizerData data;
  KIPP_ASSIGN(const gguf::Value* tokens, file.get_array(keys::tokens, gguf::ValueType::string));
  if (tokens->count != c.vocab())
    return fail("metadata ", keys::tokens, " has ", tokens->count, " entries, expected ", c.vocab());
  for (size_t id = 0; id < tokens->strings.size(); ++id) {
    std::string_view text = tokens->strings[id];
    if (text.empty() || text.size() > kMaxTokenBytes)
      return fail("metadata ", keys::tokens, ": token ", id, " has ", text.size(), " bytes, expected 1 to ",
                  kMaxTokenBytes);
    if (!utf8::validate(text)) return fail("metadata ", keys::tokens, ": token ", id, " is not valid UTF-8");
  }
  data.tokens = tokens->strings;
  // A reranker's score reads the head rows of "yes" and "no" by id: they must be those words.
  if (c.role == Role::rerank)
    for (auto [id, word] : {std::pair{family::token_yes, "yes"}, std::pair{family::token_no, "no"}})
      if (data.tokens[id] != word)
        return fail("metadata ", keys::tokens, ": token ", id, " is \"", printable(data.tokens[id]), "\", expected \"",
                    word, "\" (", c.id, " scores by it)");

  KIPP_ASSIGN(const gguf::Value* types, file.get_array(keys::token_type, gguf::ValueType::i32));
  if (types->count != tokens->count)
    return fail("metadata ", keys::token_type, " has ", types->count, " entries, expected ", tokens->count);
  if (file.find(kScoresKey)) {
    KIPP_ASSIGN(const gguf::Value* scores, file.get_array(kScoresKey, gguf::ValueType::f32));
    if (scores->count != tokens->count)
      return fail("metadata ", kScoresKey, " has ", scores->count, " entries, expected ", tokens->count);
  }
  data.token_types.resize(types->count);
  std::memcpy(data.token_types.data(), types->raw.data(), types->raw.size());
  for (size_t id = 0; id < data.token_types.size(); ++id) {
    const int32_t type = data.token_types[id];
    if (type < int32_t(gguf::TokenType::normal) || type > int32_t(gguf::TokenType::byte))
      return fail("metadata ", keys::token_type, ": token ", id, " has type ", type, ", expected 1 to 6");
  }

  KIPP_ASSIGN(const gguf::Value* merges, file.get_array(keys::merges, gguf::ValueType::string));
  if (merges->count == 0) return fail("metadata ", keys::merges, " is empty");
  if (merges->count > tokens->count - kByteTokens)
    return fail("metadata ", keys::merges, " has ", merges->count, " entries, more than the ",
                tokens->count - kByteTokens, " tokens above the byte symbols");
  for (size_t rank = 0; rank < merges->strings.size(); ++rank) {
    std::string_view merge = merges->strings[rank];
    const size_t space = merge.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == merge.size() ||
        merge.find(' ', space + 1) != std::string_view::npos)
      return fail("metadata ", keys::merges, ": merge ", rank, " is not two pieces separated by one space");
    // Merge r must join into token 256 + r, as the vocabulary was built: one sequential pass that
    // rejects merges of pieces from another vocabulary and merges out of rank order.
    const std::string_view joined = tokens->strings[kByteTokens + rank];
    if (joined.size() != merge.size() - 1 || joined.substr(0, space) != merge.substr(0, space) ||
        joined.substr(space) != merge.substr(space + 1))
      return fail("metadata ", keys::merges, ": merge ", rank, " \"", printable(merge), "\" does not join into token ",
                  kByteTokens + rank, " \"", printable(joined), "\"");
  }
  data.merges = merges->strings;

  KIPP_ASSIGN(data.eos_id, token_id(file, keys::eos_token_id, c.vocab()));
  if (data.eos_id != c.eos_id())
    return fail("metadata ", keys::eos_token_id, " is ", data.eos_id, ", expected ", c.eos_id(), " for ", c.id);
  KIPP_ASSIGN(data.padding_id, token_id(file, keys::padding_token_id, c.vocab()));
  if (file.find(keys::bos_token_id)) {
    KIPP_ASSIGN(data.bos_id, token_id(file, keys::bos_token_id, c.vocab()));
  }
  KIPP_ASSIGN(data.add_bos, file.get_bool(keys::add_bos_token));
  if (data.add_bos) return fail("metadata ", keys::add_bos_token, " is true; Qwen3 inserts no BOS token");
  if (file.find(keys::chat_template)) {
    KIPP_ASSIGN(data.chat_template, file.get_string(keys::chat_template));
  }
  return data;
}

Result<Provenance> read_provenance(const gguf::File& file) {
  Provenance out;
  KIPP_ASSIGN(out.converter_version, file.get_string(keys::kipp_converter));
  KIPP_ASSIGN(const gguf::Value* names, file.get_array(keys::kipp_source_files, gguf::ValueType::string));
  KIPP_ASSIGN(const gguf::Value* hashes, file.get_array(keys::kipp_source_sha256, gguf::ValueType::string));
  if (names->count != hashes->count)
    return fail("metadata ", keys::kipp_source_sha256, " has ", hashes->count, " entries for ", names->count, " files");
  for (size_t i = 0; i < names->strings.size(); ++i) {
    if (hashes->strings[i].size() != 64)
      return fail("metadata ", keys::kipp_source_sha256, ": entry ", i, " is not a SHA-256");
    out.source_files.push_back({names->strings[i], hashes->strings[i]});
  }
  return out;
}

}  // namespace

Result<ValidatedArtifact> validate_artifact(const gguf::File& file) {
  ValidatedArtifact out;
  KIPP_ASSIGN(out.checkpoint, match_registry(file));
  KIPP_TRY(check_hyperparameters(file, *out.checkpoint));
  KIPP_ASSIGN(out.scheme, check_scheme(file));
  KIPP_ASSIGN(out.head, check_head(file));
  KIPP_ASSIGN(out.tokenizer, check_tokenizer(file, *out.checkpoint));
  KIPP_ASSIGN(out.provenance, read_provenance(file));
  KIPP_ASSIGN(out.weights, bind_weights(file, *out.checkpoint, out.scheme, out.head));
  return out;
}

Result<std::unique_ptr<ModelFile>> ModelFile::open(const std::string& path) {
  auto model = std::unique_ptr<ModelFile>(new ModelFile());
  KIPP_ASSIGN(model->mapping_, MappedFile::open(path));
  auto parsed = gguf::File::parse(model->mapping_.bytes());
  if (!parsed) return with_context(path, parsed.error());
  model->gguf_ = std::move(parsed).value();
  auto validated = validate_artifact(model->gguf_);
  if (!validated) return with_context(path, validated.error());
  model->artifact_ = std::move(validated).value();
  return model;
}

}  // namespace kipp
