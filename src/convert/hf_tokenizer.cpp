#include "convert/hf_tokenizer.h"

#include <charconv>
#include <map>
#include <unordered_map>

#include "gguf/gguf_format.h"
#include "util/json_fields.h"

namespace kipp {
namespace {

// The Qwen2 pre-tokenizer split pattern; Kipp's tokenizer implements exactly this one.
constexpr const char* kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct AddedToken {
  std::string content;
  bool special = false;
};

// A member compared against an expected name: absent or of another type, it is simply not that
// name (nlohmann's value(key, "") would throw on a number there).
std::string string_member(const json::Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// An added token's `special` flag: absent is false; anything but a boolean is refused.
Result<bool> special_flag(const json::Json& token, const std::string& what) {
  auto it = token.find("special");
  if (it == token.end()) return false;
  if (!it->is_boolean()) return fail(what, ": special must be true or false, not ", it->dump());
  return it->get<bool>();
}

Status check_pipeline(const json::Json& tokenizer) {
  const std::string what = "tokenizer.json";
  KIPP_ASSIGN(const json::Json* normalizer, json::field(tokenizer, "normalizer", what));
  if (!normalizer->is_object() || string_member(*normalizer, "type") != "NFC")
    return fail(what, ": normalizer is ", normalizer->dump(), ", expected NFC");
  KIPP_ASSIGN(const json::Json* pre, json::field(tokenizer, "pre_tokenizer", what));
  const json::Json* split = nullptr;
  bool byte_level = false;
  if (pre->is_object() && string_member(*pre, "type") == "Sequence" && pre->contains("pretokenizers") &&
      (*pre)["pretokenizers"].is_array()) {
    for (const auto& step : (*pre)["pretokenizers"]) {
      if (!step.is_object()) continue;
      if (string_member(step, "type") == "Split") split = &step;
      if (string_member(step, "type") == "ByteLevel") byte_level = true;
    }
  }
  const bool pattern_ok = split && split->contains("pattern") && (*split)["pattern"].is_object() &&
                          string_member((*split)["pattern"], "Regex") == kQwen2SplitPattern;
  if (!pattern_ok || !byte_level)
    return fail(what, ": pre_tokenizer is not the Qwen2 split regex followed by ByteLevel");
  KIPP_ASSIGN(const json::Json* model, json::field(tokenizer, "model", what));
  if (!model->is_object() || string_member(*model, "type") != "BPE") return fail(what, ": model.type must be BPE");
  return {};
}

Result<std::string> special_token_name(const json::Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return fail("tokenizer_config.json: ", key, " must be a string or an object with content");
}

}  // namespace

Result<ConvertedTokenizer> convert_hf_tokenizer(const std::string& tokenizer_text, const std::string& config_text,
                                                const Checkpoint& checkpoint) {
  KIPP_ASSIGN(json::Json tokenizer, json::parse(tokenizer_text, "tokenizer.json"));
  KIPP_ASSIGN(json::Json config, json::parse(config_text, "tokenizer_config.json"));
  KIPP_TRY(check_pipeline(tokenizer));
  const uint32_t vocab = checkpoint.vocab();

  ConvertedTokenizer out;
  out.tokens.assign(vocab, std::string());
  out.token_types.assign(vocab, int32_t(gguf::TokenType::unused));
  std::unordered_map<std::string, uint32_t> id_of;

  auto place = [&](uint64_t id, std::string text, gguf::TokenType type, const char* where) -> Status {
    if (id >= vocab) return fail(where, ": token id ", id, " is outside the vocabulary of ", vocab);
    if (text.empty()) return fail(where, ": token ", id, " is empty");
    if (!out.tokens[id].empty() && out.tokens[id] != text)
      return fail(where, ": token id ", id, " is both \"", out.tokens[id], "\" and \"", text, "\"");
    auto [it, inserted] = id_of.emplace(text, uint32_t(id));
    if (!inserted && it->second != id)
      return fail(where, ": token \"", text, "\" has ids ", it->second, " and ", id);
    out.tokens[id] = std::move(text);
    out.token_types[id] = int32_t(type);
    return {};
  };

  const json::Json& model = tokenizer["model"];
  KIPP_ASSIGN(const json::Json* vocab_map, json::field(model, "vocab", "tokenizer.json model"));
  if (!vocab_map->is_object()) return fail("tokenizer.json: model.vocab must be an object");
  for (const auto& [text, id] : vocab_map->items()) {
    if (!id.is_number_unsigned()) return fail("tokenizer.json: vocab entry ", text, " has no valid id");
    KIPP_TRY(place(id.get<uint64_t>(), text, gguf::TokenType::normal, "tokenizer.json vocab"));
  }

  // Added tokens: tokenizer.json's list, then tokenizer_config.json's decoder over it.
  std::map<uint64_t, AddedToken> added;
  if (auto it = tokenizer.find("added_tokens"); it != tokenizer.end() && it->is_array()) {
    for (const auto& token : *it) {
      KIPP_ASSIGN(uint64_t id, json::get_uint(token, "id", "tokenizer.json added_tokens"));
      KIPP_ASSIGN(std::string content, json::get_string(token, "content", "tokenizer.json added_tokens"));
      KIPP_ASSIGN(bool special, special_flag(token, "tokenizer.json added_tokens"));
      added[id] = {content, special};
    }
  }
  if (auto it = config.find("added_tokens_decoder"); it != config.end()) {
    if (!it->is_object()) return fail("tokenizer_config.json: added_tokens_decoder must be an object");
    for (const auto& [key, token] : it->items()) {
      // Decimal digits only: no sign, space or suffix (std::stoull would take " -1" and wrap it).
      uint64_t id = 0;
      const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (key.empty() || error != std::errc() || end != key.data() + key.size())
        return fail("tokenizer_config.json: added_tokens_decoder key \"", key, "\" is not a token id");
      KIPP_ASSIGN(std::string content, json::get_string(token, "content", "tokenizer_config.json added token " + key));
      KIPP_ASSIGN(bool special, special_flag(token, "tokenizer_config.json added token " + key));
      added[id] = {content, special};
    }
  }
  for (auto& [id, token] : added) {
    if (id < out.tokens.size() && out.token_types[id] == int32_t(gguf::TokenType::normal)) {
      if (out.tokens[id] != token.content)
        return fail("added token ", id, " \"", token.content, "\" conflicts with vocab entry \"", out.tokens[id], "\"");
    }
    const auto type = token.special ? gguf::TokenType::control : gguf::TokenType::user_defined;
    if (id < out.tokens.size() && out.tokens[id] == token.content) {
      out.token_types[id] = int32_t(type);
      continue;
    }
    KIPP_TRY(place(id, token.content, type, "added tokens"));
  }
  for (uint32_t id = 0; id < vocab; ++id)
    if (out.tokens[id].empty()) out.tokens[id] = "[PAD" + std::to_string(id) + "]";

  KIPP_ASSIGN(const json::Json* merges, json::field(model, "merges", "tokenizer.json model"));
  if (!merges->is_array() || merges->empty()) return fail("tokenizer.json: model.merges must be a non-empty array");
  out.merges.reserve(merges->size());
  for (const auto& merge : *merges) {
    std::string left, right;
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos) return fail("tokenizer.json: merge \"", text, "\" has no space");
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      return fail("tokenizer.json: merge ", merge.dump(), " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    if (left.empty() || right.empty() || left.find(' ') != std::string::npos || right.find(' ') != std::string::npos)
      return fail("tokenizer.json: merge ", merge.dump(), " must be two non-empty pieces without spaces");
    if (!id_of.count(left) || !id_of.count(right) || !id_of.count(left + right))
      return fail("tokenizer.json: merge ", merge.dump(), " uses a piece that is not in the vocabulary");
    out.merges.push_back(left + " " + right);
  }

  auto lookup = [&](const char* key, uint32_t fallback) -> Result<uint32_t> {
    KIPP_ASSIGN(std::string name, special_token_name(config, key));
    if (name.empty()) return fallback;
    auto it = id_of.find(name);
    if (it == id_of.end()) return fail("tokenizer_config.json: ", key, " \"", name, "\" is not a token");
    return it->second;
  };
  KIPP_ASSIGN(out.eos_id, lookup("eos_token", family::token_endoftext));
  if (out.eos_id != checkpoint.eos_id())
    return fail("tokenizer_config.json: eos_token is id ", out.eos_id, ", expected ", checkpoint.eos_id(), " for ",
                checkpoint.id, " (", variant_name(checkpoint.variant), ")");
  KIPP_ASSIGN(out.padding_id, lookup("pad_token", family::token_endoftext));
  if (auto it = config.find("chat_template"); it != config.end() && it->is_string())
    out.chat_template = it->get<std::string>();
  return out;
}

}  // namespace kipp
