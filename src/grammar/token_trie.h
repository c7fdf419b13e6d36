// The vocabulary as a byte trie, laid out in depth-first order, so that the tokens a grammar
// state allows are found in one pass over an array: a node whose byte the grammar refuses skips
// its whole subtree (every token that starts with that prefix) at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace kipp::grammar {

class TokenTrie {
 public:
  struct Node {
    uint8_t byte;            // the byte from the parent to here
    uint16_t depth;          // 1 for the first byte of a token
    uint32_t subtree_end;    // the index after this node's subtree
    uint32_t tokens_begin;   // tokens spelled exactly by the path to here: token_ids()[begin, end)
    uint32_t tokens_end;
  };

  // `spelling(id)` for ids 0 .. vocab-1; an empty spelling leaves the id out (added tokens,
  // unused ids: they are never part of constrained text).
  static TokenTrie build(uint32_t vocab, const std::function<std::string_view(uint32_t)>& spelling);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& token_ids() const { return token_ids_; }
  uint32_t vocab() const { return vocab_; }
  uint32_t max_depth() const { return max_depth_; }
  size_t token_count() const { return token_ids_.size(); }

 private:
  std::vector<Node> nodes_;
  std::vector<uint32_t> token_ids_;
  uint32_t vocab_ = 0;
  uint32_t max_depth_ = 0;
};

}  // namespace kipp::grammar
