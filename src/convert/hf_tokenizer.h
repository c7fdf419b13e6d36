// Turns tokenizer.json + tokenizer_config.json into the standard GGUF tokenizer arrays.
// tokenizer_config.json's added_tokens_decoder is merged over tokenizer.json's added tokens, as
// the Hugging Face loader does: that is what brings ids 151665-151668 to every checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "registry/registry.h"
#include "util/error.h"

namespace kipp {

struct ConvertedTokenizer {
  std::vector<std::string> tokens;   // exactly vocab entries; unused ids become "[PAD<id>]"
  std::vector<int32_t> token_types;  // gguf::TokenType per id
  std::vector<std::string> merges;   // "left right", by rank
  uint32_t eos_id = 0;
  uint32_t padding_id = 0;
  std::optional<std::string> chat_template;
};

Result<ConvertedTokenizer> convert_hf_tokenizer(const std::string& tokenizer_json, const std::string& tokenizer_config,
                                                const Checkpoint& checkpoint);

}  // namespace kipp
