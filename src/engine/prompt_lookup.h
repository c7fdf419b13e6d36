// Speculative drafts by prompt lookup: the last n tokens (n = 3, then 2, then 1) are looked for
// earlier in the sequence, most recent match first, and the tokens that followed that match are
// the draft. Free to compute, and right often on text that copies from its context (code edits,
// quotes, summaries, structured output). A gate stops drafting while drafts keep being rejected
// and probes again later, so text with no repetition costs next to nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kipp {

inline constexpr uint32_t kMaxDraftTokens = 8;
inline constexpr uint32_t kSingleTokenDraft = 3;  // most tokens drafted on a 1-token match

// `limit` tokens that followed the most recent earlier occurrence of the sequence's last n
// tokens, for the largest n in 3..1 that has one (continued periodically past the sequence's
// end); empty when none does.
std::vector<uint32_t> lookup_draft(std::span<const uint32_t> sequence, uint32_t limit = kMaxDraftTokens);

class SpeculationGate {
 public:
  bool should_draft();
  // After a verification: how many draft tokens were offered and how many were accepted.
  void record(uint32_t drafted, uint32_t accepted);

 private:
  double acceptance_ = 0.6;  // running share of draft tokens accepted
  uint32_t paused_ = 0;      // steps left without drafting
  uint32_t pause_ = 8;       // the next pause, doubled while probes keep failing (up to 256)
};

}  // namespace kipp
