// Constraints ready to run, by grammar: the vocabulary trie is built once per tokenizer, and the
// token sets of a grammar once per distinct grammar (by its digest), so a schema sent with every
// request has one matcher and its token sets are reused across requests. Bounded in count and in
// bytes. Not thread-safe: the server's scheduler thread owns its cache.
#pragma once

#include <list>
#include <memory>
#include <string>
#include <utility>

#include "grammar/grammar.h"
#include "grammar/token_mask.h"
#include "grammar/token_trie.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

class ConstraintCache {
 public:
  // The trie is built on first use: a server that is never sent a grammar never pays for it.
  explicit ConstraintCache(const Tokenizer& tokenizer, size_t max_bytes = kMaxBytes)
      : tokenizer_(tokenizer), max_bytes_(max_bytes) {}

  // The token sets of the automaton's grammar: those of an equal grammar already cached, or new
  // ones over this automaton (built by the caller, wherever building it may take its time).
  std::shared_ptr<grammar::TokenMasks> masks_for(std::shared_ptr<grammar::Automaton> automaton);

  size_t size() const { return entries_.size(); }
  // Bytes the cached grammars hold now (they grow as they are used).
  size_t memory_bytes() const;
  // The least recently used goes first, past either bound. The bytes are checked whenever a grammar
  // is asked for; one in use by a request stays alive with it, and is bounded by its automaton's
  // own limits.
  static constexpr size_t kMaxGrammars = 32;
  static constexpr size_t kMaxBytes = size_t(1) << 30;

 private:
  const Tokenizer& tokenizer_;
  size_t max_bytes_;
  std::shared_ptr<const grammar::TokenTrie> trie_;
  std::list<std::pair<std::string, std::shared_ptr<grammar::TokenMasks>>> entries_;  // most recent first
};

}  // namespace kipp
