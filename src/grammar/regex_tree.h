// The parsed pattern as a tree (code point sets, sequences, choices, repetitions), and the one
// rewrite writing it out as rules needs: a repeated part without the empty string. Private to
// the pattern compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "grammar/regex.h"
#include "util/error.h"

namespace kipp::grammar::pattern {

struct Node {
  enum class Kind : uint8_t { chars, sequence, choice, repeat };
  Kind kind = Kind::sequence;
  CodePointRanges set;      // chars: one code point of this (normalized) set
  std::vector<Node> parts;  // sequence, choice: the parts in order; repeat: the one repeated node
  uint32_t min = 0;         // repeat
  uint32_t max = 0;         // repeat; GrammarBuilder::kUnbounded for no limit
};

Node chars(CodePointRanges set);
Node sequence(std::vector<Node> parts);
Node choice(std::vector<Node> parts);
Node repeat(Node part, uint32_t min, uint32_t max);

bool nullable(const Node& node);         // it matches the empty string
bool matches_nothing(const Node& node);  // it matches no string at all

// Rewriting a nullable repetition copies the tails of sequences, which can grow with the square of
// the pattern ((a?b?c?...)*): the copies are counted and a pattern that needs too many is refused.
class RewriteBudget {
 public:
  Status spend(size_t nodes) {
    left_ = nodes > left_ ? 0 : left_ - nodes;
    if (left_ == 0)
      return limit_exceeded("pattern: rewriting its repetitions of optional parts takes more than ", kMaxRewrittenNodes,
                            " nodes: simplify the pattern");
    return {};
  }

 private:
  size_t left_ = kMaxRewrittenNodes;
};

// The node's language without the empty string: x* must repeat a part that consumes something,
// or its rule would call itself before reading a byte (left recursion).
Result<Node> without_empty(const Node& node, RewriteBudget& budget);

}  // namespace kipp::grammar::pattern
