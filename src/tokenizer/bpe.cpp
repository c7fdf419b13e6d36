// The merge loop. A popped candidate is stale when its pair has changed since it was queued; as
// in the reference, it is skipped unless the pair now there still merges into the same token.
#include "tokenizer/bpe.h"

#include <algorithm>

namespace kipp {
namespace {

// std::push_heap keeps the largest first; "larger" here means lower rank, then further left.
bool comes_later(const auto& a, const auto& b) { return a.rank != b.rank ? a.rank > b.rank : a.left > b.left; }

}  // namespace

void BpeEncoder::push_candidate(int32_t left, const MergeTable& merges) {
  const int32_t right = symbols_[size_t(left)].next;
  if (right < 0) return;
  const Merge* merge = merges.find(symbols_[size_t(left)].id, symbols_[size_t(right)].id);
  if (!merge) return;
  heap_.push_back({merge->rank, left, merge->merged});
  std::push_heap(heap_.begin(), heap_.end(), [](const Candidate& a, const Candidate& b) { return comes_later(a, b); });
}

void BpeEncoder::encode(std::string_view piece, const std::array<TokenId, 256>& byte_tokens, const MergeTable& merges,
                        std::vector<TokenId>& out) {
  if (piece.size() == 1) {
    out.push_back(byte_tokens[uint8_t(piece[0])]);
    return;
  }
  const auto later = [](const Candidate& a, const Candidate& b) { return comes_later(a, b); };
  const int32_t count = int32_t(piece.size());
  symbols_.clear();
  for (int32_t i = 0; i < count; ++i)
    symbols_.push_back({byte_tokens[uint8_t(piece[size_t(i)])], i - 1, i + 1 < count ? i + 1 : -1, false});
  heap_.clear();
  for (int32_t i = 0; i + 1 < count; ++i) {
    if (const Merge* merge = merges.find(symbols_[size_t(i)].id, symbols_[size_t(i + 1)].id))
      heap_.push_back({merge->rank, i, merge->merged});
  }
  std::make_heap(heap_.begin(), heap_.end(), later);

  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Candidate top = heap_.back();
    heap_.pop_back();
    Symbol& left = symbols_[size_t(top.left)];
    if (left.merged_away || left.next < 0) continue;
    Symbol& right = symbols_[size_t(left.next)];
    const Merge* now = merges.find(left.id, right.id);
    if (!now || now->merged != top.merged) continue;
    left.id = top.merged;
    left.next = right.next;
    right.merged_away = true;
    if (left.next >= 0) symbols_[size_t(left.next)].prev = top.left;
    if (left.prev >= 0) push_candidate(left.prev, merges);
    push_candidate(top.left, merges);
  }
  for (int32_t i = 0; i >= 0; i = symbols_[size_t(i)].next) out.push_back(symbols_[size_t(i)].id);
}

}  // namespace kipp
