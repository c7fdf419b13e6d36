#include "engine/prompt_lookup.h"

#include <algorithm>

namespace kipp {

std::vector<uint32_t> lookup_draft(std::span<const uint32_t> sequence, uint32_t limit) {
  const size_t size = sequence.size();
  for (size_t n = 3; n >= 1; --n) {
    if (size < n + 1) continue;
    const std::span<const uint32_t> key = sequence.subspan(size - n);
    // Earlier occurrences (they may overlap the key), the latest first.
    for (size_t start = size - n; start-- > 0;) {
      if (!std::equal(key.begin(), key.end(), sequence.begin() + start)) continue;
      // What followed the match, copied forward; where the copy runs into the end of the
      // sequence it goes on from its own start (the text is periodic there), as an LZ77 copy
      // does, so a run of repeats still gives a full draft. A single matching token is weak
      // evidence: fewer tokens are drafted on it.
      const size_t from = start + n, count = n == 1 ? std::min<size_t>(limit, kSingleTokenDraft) : limit;
      std::vector<uint32_t> draft;
      for (size_t i = 0; i < count; ++i) draft.push_back(from + i < size ? sequence[from + i] : draft[from + i - size]);
      return draft;
    }
  }
  return {};
}

bool SpeculationGate::should_draft() {
  if (paused_ == 0) return true;
  --paused_;
  return false;
}

void SpeculationGate::record(uint32_t drafted, uint32_t accepted) {
  if (drafted == 0) return;
  acceptance_ = 0.5 * acceptance_ + 0.5 * double(accepted) / drafted;
  if (acceptance_ >= 0.3) {
    pause_ = 8;
    return;
  }
  // Drafts keep failing: stop for a while, then probe; one more failed probe pauses again, twice
  // as long.
  paused_ = pause_;
  pause_ = std::min(pause_ * 2, 256u);
  acceptance_ = 0.3;
}

}  // namespace kipp
