// The Qwen2 byte-level BPE tokenizer, built from an artifact's tokenizer data and owning copies
// of everything it needs. Immutable after construction and safe to share between threads; the
// mutable per-thread parts (word cache, scratch) live in an EncodeWorkspace the caller holds.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_file.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/merge_table.h"
#include "tokenizer/nfc.h"
#include "tokenizer/token_id.h"
#include "tokenizer/vocab_index.h"
#include "tokenizer/word_cache.h"
#include "util/error.h"

namespace kipp {

// Everything one thread reuses from one encode call to the next.
struct EncodeWorkspace {
  WordCache cache;
  NfcNormalizer nfc;
  BpeEncoder bpe;
  std::vector<std::string_view> pieces;
};

class Tokenizer {
 public:
  // Checks the data (byte-level token texts, every merge's pieces and result in the vocabulary,
  // no merge twice) and builds the lookup tables.
  static Result<Tokenizer> create(const TokenizerData& data);

  // The ids of `text`: added tokens matched in the raw text, NFC, the split regex, byte-level
  // BPE. Text that is not valid UTF-8 is an error naming the offset of the first bad byte.
  Result<std::vector<TokenId>> encode(std::string_view text, EncodeWorkspace& workspace) const;
  Result<std::vector<TokenId>> encode(std::string_view text) const;
  // As encode, appending to `ids`.
  Status encode_append(std::string_view text, EncodeWorkspace& workspace, std::vector<TokenId>& ids) const;

  // The text of `ids`: their bytes joined, with bytes that are not UTF-8 shown as U+FFFD. An id
  // outside the vocabulary is an error; unused ids ([PAD...]) contribute nothing.
  Result<std::string> decode(std::span<const TokenId> ids) const;

  // Ok when `id` is inside the vocabulary.
  Status check_id(TokenId id) const;
  // The bytes token `id` stands for; `id` must pass check_id.
  std::string_view token_bytes(TokenId id) const {
    return std::string_view(token_bytes_).substr(token_offsets_[id], token_offsets_[id + 1] - token_offsets_[id]);
  }
  size_t vocab_size() const { return token_offsets_.size() - 1; }
  // True for the byte-level BPE tokens; false for added tokens (<|im_end|>, <think>, ...) and
  // unused ids. Constrained text is spelled with the former only.
  bool is_normal(TokenId id) const { return id < normal_.size() && normal_[id]; }
  size_t merge_count() const { return merges_.size(); }
  size_t added_token_count() const { return added_.size(); }

 private:
  Tokenizer() = default;
  Status load_tokens(const TokenizerData& data, VocabIndex& vocab);
  Status load_byte_tokens(const VocabIndex& vocab);
  Status load_merges(const TokenizerData& data, const VocabIndex& vocab);
  void encode_segment(std::string_view segment, EncodeWorkspace& workspace, std::vector<TokenId>& ids) const;

  std::string token_bytes_;              // every token's bytes, back to back
  std::vector<uint32_t> token_offsets_;  // token id -> start in token_bytes_; one extra at the end
  std::vector<bool> normal_;             // token id -> a byte-level BPE token
  std::array<TokenId, 256> byte_tokens_{};
  MergeTable merges_;
  AddedTokenMatcher added_;
};

}  // namespace kipp
