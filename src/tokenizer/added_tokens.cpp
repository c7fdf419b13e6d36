// A scan for the first bytes of added tokens, then a longest-first comparison at each hit. With
// a few dozen tokens that share one or two first bytes this beats an automaton on real text.
#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cstring>

namespace kipp {

void AddedTokenMatcher::add(std::string_view text, TokenId id) {
  if (text.empty()) return;
  tokens_.push_back({std::string(text), id});
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const Token& a, const Token& b) { return a.text.size() > b.text.size(); });
  starts_token_[uint8_t(text[0])] = true;
}

AddedTokenMatch AddedTokenMatcher::find(std::string_view text, size_t from) const {
  if (tokens_.empty()) return {text.size(), 0, 0};
  for (size_t pos = from; pos < text.size(); ++pos) {
    if (!starts_token_[uint8_t(text[pos])]) continue;
    const std::string_view rest = text.substr(pos);
    for (const Token& token : tokens_)
      if (rest.size() >= token.text.size() && std::memcmp(rest.data(), token.text.data(), token.text.size()) == 0)
        return {pos, token.text.size(), token.id};
  }
  return {text.size(), 0, 0};
}

}  // namespace kipp
