#include "grammar/token_trie.h"

#include <algorithm>
#include <limits>

namespace kipp::grammar {

TokenTrie TokenTrie::build(uint32_t vocab, const std::function<std::string_view(uint32_t)>& spelling) {
  TokenTrie trie;
  trie.vocab_ = vocab;
  std::vector<std::pair<std::string_view, uint32_t>> spelled;  // spelling, id
  for (uint32_t id = 0; id < vocab; ++id) {
    const std::string_view text = spelling(id);
    if (!text.empty() && text.size() <= std::numeric_limits<uint16_t>::max()) spelled.push_back({text, id});
  }
  // Sorted spellings are the trie's depth-first order: each token adds the nodes past its common
  // prefix with the one before. (Equal spellings, were there any, stay in id order.)
  std::sort(spelled.begin(), spelled.end());
  std::vector<uint32_t> path;  // node index at each depth - 1 of the previous token
  std::string_view previous;
  for (const auto& [text, id] : spelled) {
    size_t common = 0;
    while (common < previous.size() && common < text.size() && previous[common] == text[common]) ++common;
    for (size_t depth = path.size(); depth > common; --depth)  // close the nodes left behind
      trie.nodes_[path[depth - 1]].subtree_end = uint32_t(trie.nodes_.size());
    path.resize(common);
    for (size_t depth = common; depth < text.size(); ++depth) {
      path.push_back(uint32_t(trie.nodes_.size()));
      trie.nodes_.push_back({uint8_t(text[depth]), uint16_t(depth + 1), 0, 0, 0});
    }
    Node& last = trie.nodes_[path.back()];
    if (last.tokens_begin == last.tokens_end) last.tokens_begin = last.tokens_end = uint32_t(trie.token_ids_.size());
    trie.token_ids_.push_back(id);
    ++last.tokens_end;
    trie.max_depth_ = std::max(trie.max_depth_, uint32_t(text.size()));
    previous = text;
  }
  for (uint32_t index : path) trie.nodes_[index].subtree_end = uint32_t(trie.nodes_.size());
  return trie;
}

}  // namespace kipp::grammar
