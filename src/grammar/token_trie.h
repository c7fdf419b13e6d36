// The vocabulary as a byte trie in breadth-first order, so that the tokens a grammar state allows
// are found by visiting only the prefixes the grammar can read. The children of a node sit next
// to each other (and their bytes in one small array), so refusing a whole subtree costs one byte
// read from memory that is already in cache: this matters because the walk runs between forward
// passes, after the weights have pushed the trie out of every cache level.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace kipp::grammar {

class TokenTrie {
 public:
  using NodeId = uint32_t;
  static constexpr NodeId kRoot = 0;  // the empty prefix

  // `spelling(id)` for ids 0 .. vocab-1; an empty spelling leaves the id out (added tokens,
  // unused ids: they are never part of constrained text).
  static TokenTrie build(uint32_t vocab, const std::function<std::string_view(uint32_t)>& spelling);

  size_t node_count() const { return bytes_.size(); }
  // The byte from a node's parent to it (unused for the root).
  uint8_t byte(NodeId node) const { return bytes_[node]; }
  // The children of `node` are the ids [first_child(node), first_child(node + 1)).
  NodeId first_child(NodeId node) const { return first_child_[node]; }
  NodeId children_end(NodeId node) const { return first_child_[node + 1]; }
  // The tokens spelled exactly by the path to `node`.
  std::span<const uint32_t> tokens(NodeId node) const {
    return std::span(token_ids_).subspan(first_token_[node], first_token_[node + 1] - first_token_[node]);
  }
  uint32_t vocab() const { return vocab_; }
  size_t token_count() const { return token_ids_.size(); }

 private:
  std::vector<uint8_t> bytes_;         // per node
  std::vector<NodeId> first_child_;    // per node, plus one past the end
  std::vector<uint32_t> first_token_;  // per node, plus one past the end: into token_ids_
  std::vector<uint32_t> token_ids_;    // grouped by node, in node order
  uint32_t vocab_ = 0;
};

}  // namespace kipp::grammar
