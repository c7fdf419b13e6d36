// The tokens a grammar allows next: for a matcher state, every token whose whole spelling the
// grammar can read from there. Found by one walk over the vocabulary trie (a refused byte skips
// every token under it) and cached per state, so a state seen before costs a lookup: in a flat
// schema the states repeat from the second object on, and in every schema inside long strings.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_trie.h"
#include "util/error.h"

namespace kipp::grammar {

// A set of token ids, one bit each.
class TokenSet {
 public:
  explicit TokenSet(uint32_t vocab) : words_((vocab + 63) / 64, 0) {}
  void add(uint32_t id) {
    uint64_t& word = words_[id >> 6];
    const uint64_t bit = uint64_t(1) << (id & 63);
    count_ += (word & bit) == 0;
    word |= bit;
  }
  bool has(uint32_t id) const { return id < words_.size() * 64 && ((words_[id >> 6] >> (id & 63)) & 1); }
  size_t count() const { return count_; }
  std::span<const uint64_t> words() const { return words_; }

 private:
  std::vector<uint64_t> words_;
  size_t count_ = 0;
};

// One grammar over one vocabulary: the automaton, the trie and the cache of token sets by state.
// Not thread-safe, as the automaton is not.
class TokenMasks {
 public:
  TokenMasks(std::shared_ptr<Automaton> automaton, std::shared_ptr<const TokenTrie> trie,
             uint64_t max_steps_per_set = kMaxStepsPerSet);

  // The tokens allowed after `state` (the end of the text is not a token: see accepts()). Shared,
  // so that a set stays valid when the cache starts over.
  Result<std::shared_ptr<const TokenSet>> allowed(StateId state);
  // The state after the token's bytes; kDeadState when the grammar refuses them.
  Result<StateId> after(StateId state, std::string_view bytes);

  Automaton& automaton() { return *automaton_; }
  // The automaton's bytes and the cached sets', for ConstraintCache's budget.
  size_t memory_bytes() const;
  const TokenTrie& trie() const { return *trie_; }
  uint64_t walks() const { return walks_; }

  // Each cached set holds vocab bits (19 KiB for Qwen3); past this many the cache starts over.
  static constexpr size_t kMaxCachedSets = 2048;
  // Parse stacks the automaton may visit to find one token set: a grammar so ambiguous that one
  // token costs more is refused with an error naming this (over_limit), not matched for minutes.
  // A step costs 80-300 ns (more as the automaton grows), so this is up to ~0.3 s of one core.
  // Random walks through every test and JSONSchemaBench schema over the Qwen3 vocabulary
  // (grammar.random_walks) need at most ~93,000 steps for a token.
  static constexpr uint64_t kMaxStepsPerSet = 1'000'000;

 private:
  Result<TokenSet> walk(StateId state);

  std::shared_ptr<Automaton> automaton_;
  std::shared_ptr<const TokenTrie> trie_;
  uint64_t max_steps_per_set_;
  std::unordered_map<StateId, std::shared_ptr<const TokenSet>> cache_;
  std::vector<std::pair<TokenTrie::NodeId, StateId>> pending_;  // walk's scratch, kept to save allocations
  uint64_t walks_ = 0;
};

}  // namespace kipp::grammar
