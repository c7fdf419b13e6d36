// Byte-level BPE on one pre-tokenized piece: start from one token per byte, then apply merges
// lowest rank first (ties: leftmost), as the reference does. A heap of candidate pairs makes a
// piece of n bytes cost O(n log n), so one 1 MiB word is as cheap per byte as a short one.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "tokenizer/merge_table.h"
#include "tokenizer/token_id.h"

namespace kipp {

class BpeEncoder {
 public:
  // Appends the ids of `piece`. `byte_tokens[b]` is the id of the token for byte b.
  void encode(std::string_view piece, const std::array<TokenId, 256>& byte_tokens, const MergeTable& merges,
              std::vector<TokenId>& out);

 private:
  struct Symbol {
    TokenId id;
    int32_t prev;  // index of the previous live symbol, -1 at the start
    int32_t next;  // index of the next live symbol, -1 at the end
    bool merged_away;
  };
  struct Candidate {
    uint32_t rank;
    int32_t left;  // index of the pair's left symbol
    TokenId merged;
  };

  void push_candidate(int32_t left, const MergeTable& merges);

  std::vector<Symbol> symbols_;
  std::vector<Candidate> heap_;
};

}  // namespace kipp
