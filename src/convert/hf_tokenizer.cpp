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

// The TemplateProcessing step of a post_processor (itself, or one step of a Sequence), or null.
const json::Json* template_step(const json::Json& post) {
  if (!post.is_object()) return nullptr;
  if (string_member(post, "type") == "TemplateProcessing") return &post;
  if (string_member(post, "type") != "Sequence" || !post.contains("processors") || !post["processors"].is_array())
    return nullptr;
  for (const auto& step : post["processors"])
    if (step.is_object() && string_member(step, "type") == "TemplateProcessing") return &step;
  return nullptr;
}

// What the tokenizer adds around one input, against the registry: an embedding checkpoint's
// post-processor appends <|endoftext|> (single = $A <|endoftext|>), which is the token its vector
// is read at; every other checkpoint's adds nothing. Kipp appends the token itself
// (Checkpoint::appends_endoftext), so a tokenizer.json that disagrees is refused, not followed.
Status check_post_processor(const json::Json& tokenizer, const Checkpoint& checkpoint) {
  const std::string what = "tokenizer.json: post_processor";
  auto it = tokenizer.find("post_processor");
  const json::Json* step = it == tokenizer.end() ? nullptr : template_step(*it);
  if (!checkpoint.appends_endoftext()) {
    if (step) return fail(what, " is a TemplateProcessing, but ", checkpoint.id, "'s tokenizer adds no tokens");
    return {};
  }
  if (!step)
    return fail(what, " does not append <|endoftext|>, which ", checkpoint.id,
                "'s published tokenizer does (a TemplateProcessing single = $A <|endoftext|>)");
  const json::Json single = step->value("single", json::Json());
  const json::Json sequence = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const json::Json endoftext = {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}};
  if (single != json::Json::array({sequence, endoftext}))
    return fail(what, ": single is ", single.dump(), ", expected $A <|endoftext|>");
  const json::Json ids = step->value("special_tokens", json::Json::object())
                             .value("<|endoftext|>", json::Json())
                             .value("ids", json::Json());
  if (ids != json::Json::array({family::token_endoftext}))
    return fail(what, ": <|endoftext|> has ids ", ids.dump(), ", expected [", family::token_endoftext, "]");
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

// The vocabulary as it is assembled: each id's text and type, and each text's id, kept
// consistent (an id has one text, a text one id).
struct Vocabulary {
  explicit Vocabulary(uint32_t size) : tokens(size), types(size, int32_t(gguf::TokenType::unused)) {}

  Status place(uint64_t id, std::string text, gguf::TokenType type, const char* where) {
    if (id >= tokens.size()) return fail(where, ": token id ", id, " is outside the vocabulary of ", tokens.size());
    if (text.empty()) return fail(where, ": token ", id, " is empty");
    if (!tokens[id].empty() && tokens[id] != text)
      return fail(where, ": token id ", id, " is both \"", tokens[id], "\" and \"", text, "\"");
    auto [it, inserted] = id_of.emplace(text, uint32_t(id));
    if (!inserted && it->second != id) return fail(where, ": token \"", text, "\" has ids ", it->second, " and ", id);
    tokens[id] = std::move(text);
    types[id] = int32_t(type);
    return {};
  }

  bool has(const std::string& text) const { return id_of.count(text) > 0; }

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::unordered_map<std::string, uint32_t> id_of;
};

Status place_vocab(const json::Json& model, Vocabulary& vocabulary) {
  KIPP_ASSIGN(const json::Json* vocab_map, json::field(model, "vocab", "tokenizer.json model"));
  if (!vocab_map->is_object()) return fail("tokenizer.json: model.vocab must be an object");
  for (const auto& [text, id] : vocab_map->items()) {
    if (!id.is_number_unsigned()) return fail("tokenizer.json: vocab entry ", text, " has no valid id");
    KIPP_TRY(vocabulary.place(id.get<uint64_t>(), text, gguf::TokenType::normal, "tokenizer.json vocab"));
  }
  return {};
}

// Added tokens by id: tokenizer.json's list, then tokenizer_config.json's decoder over it.
Result<std::map<uint64_t, AddedToken>> read_added_tokens(const json::Json& tokenizer, const json::Json& config) {
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
  return added;
}

// An added token may repeat a vocab entry (then it only takes the added type) but not contradict it.
Status place_added_tokens(const std::map<uint64_t, AddedToken>& added, Vocabulary& vocabulary) {
  std::vector<std::string>& tokens = vocabulary.tokens;
  for (const auto& [id, token] : added) {
    if (id < tokens.size() && vocabulary.types[id] == int32_t(gguf::TokenType::normal)) {
      if (tokens[id] != token.content)
        return fail("added token ", id, " \"", token.content, "\" conflicts with vocab entry \"", tokens[id], "\"");
    }
    const auto type = token.special ? gguf::TokenType::control : gguf::TokenType::user_defined;
    if (id < tokens.size() && tokens[id] == token.content) {
      vocabulary.types[id] = int32_t(type);
      continue;
    }
    KIPP_TRY(vocabulary.place(id, token.content, type, "added tokens"));
  }
  return {};
}

// One merge as "left right", from either form tokenizer.json writes ("a b" or ["a", "b"]); both
// pieces and their join must be tokens.
Result<std::string> merge_of(const json::Json& merge, const Vocabulary& vocabulary) {
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
  if (!vocabulary.has(left) || !vocabulary.has(right) || !vocabulary.has(left + right))
    return fail("tokenizer.json: merge ", merge.dump(), " uses a piece that is not in the vocabulary");
  return left + " " + right;
}

Result<std::vector<std::string>> read_merges(const json::Json& model, const Vocabulary& vocabulary) {
  KIPP_ASSIGN(const json::Json* merges, json::field(model, "merges", "tokenizer.json model"));
  if (!merges->is_array() || merges->empty()) return fail("tokenizer.json: model.merges must be a non-empty array");
  std::vector<std::string> pairs;
  pairs.reserve(merges->size());
  for (const auto& merge : *merges) {
    KIPP_ASSIGN(std::string pair, merge_of(merge, vocabulary));
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

// The id of tokenizer_config.json's `key` token (eos_token, pad_token), or `fallback` when unnamed.
Result<uint32_t> special_token_id(const json::Json& config, const char* key, uint32_t fallback,
                                  const Vocabulary& vocabulary) {
  KIPP_ASSIGN(std::string name, special_token_name(config, key));
  if (name.empty()) return fallback;
  auto it = vocabulary.id_of.find(name);
  if (it == vocabulary.id_of.end()) return fail("tokenizer_config.json: ", key, " \"", name, "\" is not a token");
  return it->second;
}

}  // namespace

Result<ConvertedTokenizer> convert_hf_tokenizer(const std::string& tokenizer_text, const std::string& config_text,
                                                const Checkpoint& checkpoint) {
  KIPP_ASSIGN(json::Json tokenizer, json::parse(tokenizer_text, "tokenizer.json"));
  KIPP_ASSIGN(json::Json config, json::parse(config_text, "tokenizer_config.json"));
  KIPP_TRY(check_pipeline(tokenizer));
  KIPP_TRY(check_post_processor(tokenizer, checkpoint));
  Vocabulary vocabulary(checkpoint.vocab());
  const json::Json& model = tokenizer["model"];
  KIPP_TRY(place_vocab(model, vocabulary));
  KIPP_ASSIGN(auto added, read_added_tokens(tokenizer, config));
  KIPP_TRY(place_added_tokens(added, vocabulary));
  for (uint32_t id = 0; id < vocabulary.tokens.size(); ++id)
    if (vocabulary.tokens[id].empty()) vocabulary.tokens[id] = "[PAD" + std::to_string(id) + "]";

  ConvertedTokenizer out;
  KIPP_ASSIGN(out.merges, read_merges(model, vocabulary));
  KIPP_ASSIGN(out.eos_id, special_token_id(config, "eos_token", family::token_endoftext, vocabulary));
  // An embedding checkpoint's tokenizer_config.json names <|im_end|> (Qwen3-Embedding-0.6B, 4B)
  // while its post-processor ends every input with <|endoftext|>: the artifact's eos is the latter,
  // with add_eos_token, as llama.cpp needs to embed it.
  if (checkpoint.appends_endoftext()) out.eos_id = family::token_endoftext;
  if (out.eos_id != checkpoint.eos_id())
    return fail("tokenizer_config.json: eos_token is id ", out.eos_id, ", expected ", checkpoint.eos_id(), " for ",
                checkpoint.id, " (", variant_name(checkpoint.variant), ")");
  KIPP_ASSIGN(out.padding_id, special_token_id(config, "pad_token", family::token_endoftext, vocabulary));
  if (auto it = config.find("chat_template"); it != config.end() && it->is_string())
    out.chat_template = it->get<std::string>();
  out.tokens = std::move(vocabulary.tokens);
  out.token_types = std::move(vocabulary.types);
  return out;
}
}  // namespace kipp
