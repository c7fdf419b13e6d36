#include "convert/sentence_transformers.h"

#include "util/files.h"
#include "util/json_fields.h"

namespace kipp {
namespace {

constexpr const char* kModules = "modules.json";
constexpr const char* kPooling = "1_Pooling/config.json";
constexpr const char* kPrompts = "config_sentence_transformers.json";

// sentence-transformers' module types, in the order the published pipeline runs them.
constexpr const char* kTransformer = "sentence_transformers.models.Transformer";
constexpr const char* kPoolingModule = "sentence_transformers.models.Pooling";
constexpr const char* kNormalize = "sentence_transformers.models.Normalize";

Result<json::Json> read_json(const std::string& dir, const char* file) {
  KIPP_ASSIGN(std::string text, read_text_file(dir + "/" + file));
  return json::parse(text, file);
}

// The pipeline must be exactly Transformer, Pooling (from 1_Pooling), Normalize: a missing
// Normalize would mean unnormalised vectors, another module a computation Kipp does not perform.
Status check_modules(const json::Json& modules) {
  if (!modules.is_array()) return fail(kModules, ": expected an array of modules");
  const char* expected[] = {kTransformer, kPoolingModule, kNormalize};
  if (modules.size() != 3)
    return fail(kModules, ": ", modules.size(), " modules, expected Transformer, Pooling and Normalize");
  for (size_t i = 0; i < 3; ++i) {
    if (!modules[i].is_object()) return fail(kModules, ": module ", i, " is not an object");
    KIPP_ASSIGN(std::string type, json::get_string(modules[i], "type", kModules));
    if (type != expected[i]) return fail(kModules, ": module ", i, " is ", type, ", expected ", expected[i]);
  }
  KIPP_ASSIGN(std::string pooling_path, json::get_string(modules[1], "path", kModules));
  if (pooling_path != "1_Pooling") return fail(kModules, ": the Pooling module's path is \"", pooling_path, "\"");
  return {};
}

// Last-token pooling and nothing else, over the hidden width.
Status check_pooling(const json::Json& pooling, const Checkpoint& c) {
  KIPP_ASSIGN(uint64_t width, json::get_uint(pooling, "word_embedding_dimension", kPooling));
  if (width != c.hidden) return fail(kPooling, ": word_embedding_dimension is ", width, ", expected ", c.hidden);
  for (const char* mode : {"pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                           "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"}) {
    auto it = pooling.find(mode);
    if (it != pooling.end() && *it != false)
      return fail(kPooling, ": ", mode, " is ", it->dump(), "; Kipp pools the last token only");
  }
  KIPP_ASSIGN(bool last, json::get_bool(pooling, "pooling_mode_lasttoken", kPooling));
  if (!last) return fail(kPooling, ": pooling_mode_lasttoken is false; Kipp pools the last token only");
  return {};
}

// The prompts are the client's (OpenAI's API sends text as it is); the file must only be well
// formed, with a string per prompt.
Status check_prompts(const json::Json& config) {
  if (!config.is_object()) return fail(kPrompts, ": expected an object");
  if (auto it = config.find("prompts"); it != config.end()) {
    if (!it->is_object()) return fail(kPrompts, ": prompts must be an object");
    for (const auto& [name, prompt] : it->items())
      if (!prompt.is_string()) return fail(kPrompts, ": prompt \"", name, "\" is not a string");
  }
  return {};
}

}  // namespace

std::vector<std::string_view> sentence_transformers_files() { return {kModules, kPooling, kPrompts}; }

Status check_sentence_transformers(const std::string& dir, const Checkpoint& checkpoint) {
  KIPP_ASSIGN(json::Json modules, read_json(dir, kModules));
  KIPP_TRY(check_modules(modules));
  KIPP_ASSIGN(json::Json pooling, read_json(dir, kPooling));
  KIPP_TRY(check_pooling(pooling, checkpoint));
  KIPP_ASSIGN(json::Json prompts, read_json(dir, kPrompts));
  KIPP_TRY(check_prompts(prompts));
  return {};
}

}  // namespace kipp
