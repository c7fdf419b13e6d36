// Building the tokenizer from artifact data, and the encode/decode pipelines over the parts in
// this folder.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "gguf/gguf_format.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"
#include "util/utf8.h"
#include "tokenizer/vocab_index.h"

namespace kipp {
namespace {

// Appends the bytes a byte-level token text stands for.
Status append_token_text_bytes(std::string_view text, size_t id, std::string& bytes) {
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Step step = utf8::step(text.substr(pos));
    if (step.kind != utf8::StepKind::complete) return fail("tokenizer: token ", id, " is not valid UTF-8");
    const auto byte = byte_level::byte_of_char(step.code_point);
    if (!byte)
      return fail("tokenizer: token ", id, " \"", text, "\" has character U+", std::hex, uint32_t(step.code_point),
                  ", which is not in the byte-level alphabet");
    bytes += char(*byte);
    pos += step.length;
  }
  return {};
}

// "left right" -> the two pieces; both empty when the text is not two pieces and one space.
std::pair<std::string_view, std::string_view> merge_pieces(std::string_view merge) {
  const size_t space = merge.find(' ');
  if (space == std::string_view::npos || merge.find(' ', space + 1) != std::string_view::npos) return {};
  return {merge.substr(0, space), merge.substr(space + 1)};
}

// Each merge's ids (left, right, result), checked against the vocabulary. The lookups are
// cache-miss bound, so each merge's loads start a few merges ahead, one level of indirection
// per distance (see VocabIndex::prefetch_slot).
Result<std::vector<std::array<TokenId, 3>>> resolve_merges(const TokenizerData& data, const VocabIndex& vocab) {
  std::vector<std::array<TokenId, 3>> resolved;
  resolved.reserve(data.merges.size());
  constexpr size_t kSlotAhead = 24, kViewAhead = 16, kTextAhead = 8;
  const size_t count = data.merges.size();
  std::string joined;
  for (size_t rank = 0; rank < count; ++rank) {
    if (rank + kSlotAhead < count) {
      const auto [left, right] = merge_pieces(data.merges[rank + kSlotAhead]);
      vocab.prefetch_slot(left);
      vocab.prefetch_slot(right);
    }
    if (rank + kViewAhead < count) {
      const auto [left, right] = merge_pieces(data.merges[rank + kViewAhead]);
      vocab.prefetch_view(left);
      vocab.prefetch_view(right);
    }
    if (rank + kTextAhead < count) {
      const auto [left, right] = merge_pieces(data.merges[rank + kTextAhead]);
      vocab.prefetch_text(left);
      vocab.prefetch_text(right);
    }
    const std::string_view merge = data.merges[rank];
    const auto [left, right] = merge_pieces(merge);
    if (left.empty())
      return fail("tokenizer: merge ", rank, " \"", merge, "\" is not two pieces separated by one space");
    joined.assign(left).append(right);
    // Vocabularies trained by BPE list each merge's result at id 256 + rank: check there first.
    const size_t usual_id = 256 + rank;
    const bool usual = usual_id < data.tokens.size() && data.tokens[usual_id] == joined &&
                       data.token_types[usual_id] == int32_t(gguf::TokenType::normal);
    const auto merged_id = usual ? std::optional<TokenId>(TokenId(usual_id)) : vocab.find(joined);
    const auto left_id = vocab.find(left), right_id = vocab.find(right);
    if (!left_id || !right_id || !merged_id)
      return fail("tokenizer: merge ", rank, " \"", merge, "\": \"",
                  !left_id    ? left
                  : !right_id ? right
                              : joined,
                  "\" is not in the vocabulary");
    resolved.push_back({*left_id, *right_id, *merged_id});
  }
  return resolved;
}

}  // namespace

Status Tokenizer::load_tokens(const TokenizerData& data, VocabIndex& vocab) {
  token_offsets_.reserve(data.tokens.size() + 1);
  size_t text_bytes = 0;
  for (const std::string_view text : data.tokens) text_bytes += text.size();
  token_bytes_.reserve(text_bytes);
  normal_.assign(data.tokens.size(), false);
  constexpr size_t kInsertAhead = 16;
  for (size_t id = 0; id < data.tokens.size(); ++id) {
    if (id + kInsertAhead < data.tokens.size()) vocab.prefetch_slot(data.tokens[id + kInsertAhead]);
    const std::string_view text = data.tokens[id];
    token_offsets_.push_back(uint32_t(token_bytes_.size()));
    switch (gguf::TokenType(data.token_types[id])) {
      case gguf::TokenType::normal:
        normal_[id] = true;
        KIPP_TRY(append_token_text_bytes(text, id, token_bytes_));
        if (!vocab.insert(TokenId(id))) return fail("tokenizer: token ", id, " \"", text, "\" appears twice");
        break;
      case gguf::TokenType::control:
      case gguf::TokenType::user_defined:
        KIPP_TRY(utf8::validate(text));
        token_bytes_ += text;
        added_.add(text, TokenId(id));
        break;
      case gguf::TokenType::unused: break;
      default:
        return fail("tokenizer: token ", id, " has type ", data.token_types[id],
                    "; expected 1 (normal), 3 (control), 4 (user-defined) or 5 (unused)");
    }
  }
  token_offsets_.push_back(uint32_t(token_bytes_.size()));
  return {};
}

Status Tokenizer::load_byte_tokens(const VocabIndex& vocab) {
  std::string stand_in;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    stand_in.clear();
    utf8::append(byte_level::char_of_byte()[byte], stand_in);
    const auto id = vocab.find(stand_in);
    if (!id) return fail("tokenizer: no token for byte 0x", std::hex, byte, " (\"", stand_in, "\")");
    byte_tokens_[byte] = *id;
  }
  return {};
}

// Resolves every merge first, then inserts them, each slot's load started a few merges ahead.
Status Tokenizer::load_merges(const TokenizerData& data, const VocabIndex& vocab) {
  KIPP_ASSIGN(const auto resolved, resolve_merges(data, vocab));
  merges_ = MergeTable(resolved.size());
  constexpr size_t kInsertAhead = 16;
  for (size_t rank = 0; rank < resolved.size(); ++rank) {
    if (rank + kInsertAhead < resolved.size())
      merges_.prefetch(resolved[rank + kInsertAhead][0], resolved[rank + kInsertAhead][1]);
    const auto [left_id, right_id, merged_id] = resolved[rank];
    if (!merges_.insert(left_id, right_id, Merge{uint32_t(rank), merged_id}))
      return fail("tokenizer: merge ", rank, " \"", data.merges[rank], "\" repeats an earlier merge");
  }
  return {};
}

Result<Tokenizer> Tokenizer::create(const TokenizerData& data) {
  if (data.tokens.empty()) return fail("tokenizer: the vocabulary is empty");
  if (data.token_types.size() != data.tokens.size())
    return fail("tokenizer: ", data.token_types.size(), " token types for ", data.tokens.size(), " tokens");
  Tokenizer tokenizer;
  VocabIndex vocab(data.tokens);
  KIPP_TRY(tokenizer.load_tokens(data, vocab));
  KIPP_TRY(tokenizer.load_byte_tokens(vocab));
  KIPP_TRY(tokenizer.load_merges(data, vocab));
  return tokenizer;
}

Status Tokenizer::check_id(TokenId id) const {
  if (id >= vocab_size()) return fail("token id ", id, " is outside the vocabulary (0..", vocab_size() - 1, ")");
  return {};
}

void Tokenizer::encode_segment(std::string_view segment, EncodeWorkspace& workspace, std::vector<TokenId>& ids) const {
  if (segment.empty()) return;
  const std::string_view normalized = workspace.nfc.normalize(segment);
  workspace.pieces.clear();
  pretokenize(normalized, workspace.pieces);
  for (const std::string_view piece : workspace.pieces) {
    if (const auto cached = workspace.cache.find(piece)) {
      ids.insert(ids.end(), cached->begin(), cached->end());
      continue;
    }
    const size_t first = ids.size();
    workspace.bpe.encode(piece, byte_tokens_, merges_, ids);
    workspace.cache.insert(piece, std::span<const TokenId>(ids).subspan(first));
  }
}

Status Tokenizer::encode_append(std::string_view text, EncodeWorkspace& workspace, std::vector<TokenId>& ids) const {
  KIPP_TRY(utf8::validate(text));
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedTokenMatch match = added_.find(text, pos);
    encode_segment(text.substr(pos, match.offset - pos), workspace, ids);
    if (match.length) ids.push_back(match.id);
    pos = match.offset + match.length;
  }
  return {};
}

Result<std::vector<TokenId>> Tokenizer::encode(std::string_view text, EncodeWorkspace& workspace) const {
  std::vector<TokenId> ids;
  KIPP_TRY(encode_append(text, workspace, ids));
  return ids;
}

Result<std::vector<TokenId>> Tokenizer::encode(std::string_view text) const {
  EncodeWorkspace workspace;
  return encode(text, workspace);
}

Result<std::string> Tokenizer::decode(std::span<const TokenId> ids) const {
  std::string bytes;
  for (const TokenId id : ids) {
    KIPP_TRY(check_id(id));
    bytes.append(token_bytes(id));
  }
  std::string text;
  text.reserve(bytes.size());
  utf8::append_lossy(bytes, text);
  return text;
}

}  // namespace kipp
