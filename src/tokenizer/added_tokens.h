// Finds the added tokens (<|im_start|>, <think>, ...) in raw text, before normalization, as the
// reference does: leftmost match first, the longest token where several start at one place.
// They become their own ids and are never split or merged with the text around them.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_id.h"

namespace kipp {

struct AddedTokenMatch {
  size_t offset = 0;  // where the token starts; text.size() when none is found
  size_t length = 0;
  TokenId id = 0;
};

class AddedTokenMatcher {
 public:
  void add(std::string_view text, TokenId id);

  // The first added token at or after `from`.
  AddedTokenMatch find(std::string_view text, size_t from) const;

  size_t size() const { return tokens_.size(); }

 private:
  struct Token {
    std::string text;
    TokenId id;
  };

  std::vector<Token> tokens_;             // longest first
  std::array<bool, 256> starts_token_{};  // first bytes of any token
};

}  // namespace kipp
