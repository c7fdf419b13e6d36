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
  // Sorted spellings give the trie in depth-first order: each token adds the nodes past its
  // common prefix with the one before. (Equal spellings, were there any, stay in id order.)
  std::sort(spelled.begin(), spelled.end());
  struct PreorderNode {
    uint8_t byte;
    uint32_t depth;
    uint32_t parent;       // preorder index
    uint32_t token_count;  // tokens spelled exactly by this node's path
  };
  std::vector<PreorderNode> preorder = {{0, 0, 0, 0}};  // the root
  std::vector<uint32_t> token_node;                     // per entry of `spelled`: its preorder node
  std::vector<uint32_t> path = {0};                     // preorder index at each depth of the previous token
  std::string_view previous;
  for (const auto& [text, id] : spelled) {
    size_t common = 0;
    while (common < previous.size() && common < text.size() && previous[common] == text[common]) ++common;
    path.resize(common + 1);
    for (size_t depth = common; depth < text.size(); ++depth) {
      preorder.push_back({uint8_t(text[depth]), uint32_t(depth + 1), path.back(), 0});
      path.push_back(uint32_t(preorder.size() - 1));
    }
    ++preorder[path.back()].token_count;
    token_node.push_back(path.back());
    previous = text;
  }
  // Breadth-first order is the preorder stably sorted by depth: within one depth, preorder is
  // lexicographic order, so the children of each node come out together and in their parents'
  // order, which is what lets first_child_ be a running sum.
  uint32_t max_depth = 0;
  for (const PreorderNode& node : preorder) max_depth = std::max(max_depth, node.depth);
  std::vector<uint32_t> depth_start(max_depth + 2, 0);
  for (const PreorderNode& node : preorder) ++depth_start[node.depth + 1];
  for (size_t d = 1; d < depth_start.size(); ++d) depth_start[d] += depth_start[d - 1];
  std::vector<uint32_t> breadth_of(preorder.size());  // preorder index -> node id
  for (size_t i = 0; i < preorder.size(); ++i) breadth_of[i] = depth_start[preorder[i].depth]++;

  const size_t n = preorder.size();
  std::vector<uint32_t> child_count(n, 0), token_count(n, 0);
  trie.bytes_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t node = breadth_of[i];
    trie.bytes_[node] = preorder[i].byte;
    token_count[node] = preorder[i].token_count;
    if (i != 0) ++child_count[breadth_of[preorder[i].parent]];
  }
  trie.first_child_.assign(n + 1, 0);
  trie.first_token_.assign(n + 1, 0);
  trie.first_child_[0] = 1;  // the root's children follow it
  for (size_t node = 0; node < n; ++node) {
    trie.first_child_[node + 1] = trie.first_child_[node] + child_count[node];
    trie.first_token_[node + 1] = trie.first_token_[node] + token_count[node];
  }
  // first_child_[n] is n by construction: every node but the root is someone's child.
  trie.token_ids_.assign(spelled.size(), 0);
  std::vector<uint32_t> next_slot(trie.first_token_.begin(), trie.first_token_.end() - 1);
  for (size_t k = 0; k < spelled.size(); ++k)
    trie.token_ids_[next_slot[breadth_of[token_node[k]]]++] = spelled[k].second;
  return trie;
}

}  // namespace kipp::grammar
