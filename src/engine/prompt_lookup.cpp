#include "engine/prompt_lookup.h"

#include <algorithm>

namespace kipp {

std::vector<uint32_t> lookup_draft(std::span<const uint32_t> sequence, uint32_t limit) {
  const size_t size = sequence.size();
  for (size_t n = 3; n >= 1; --n) {
    if (size < n + 1) continue;
    const std::span<const uint32_t> key = sequence.subspan(size - n);
    // Occurrences starting at `start`, latest first, that end before the key itself.
    for (size_t start = size - n; start-- > 0;) {
      if (!std::equal(key.begin(), key.end(), sequence.begin() + start)) continue;
      const size_t from = start + n, count = std::min<size_t>(limit, size - from);
      if (count == 0) continue;
      return {sequence.begin() + from, sequence.begin() + from + count};
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
  acceptance_ = 0.7 * acceptance_ + 0.3 * double(accepted) / drafted;
  if (acceptance_ >= 0.25) {
    pause_ = 8;
    return;
  }
  // Drafts keep failing: stop for a while, then probe with the acceptance given another chance.
  paused_ = pause_;
  pause_ = std::min(pause_ * 2, 256u);
  acceptance_ = 0.5;
}

}  // namespace kipp
