// Runs a Grammar over bytes: which bytes may come next, and whether the text so far is a whole
// sentence.
//
// A parse position is a stack: the item being matched and, below it, the places to return to when
// each called rule ends. Stacks are stored as interned nodes (item position, permutation state,
// the node below), so stacks that share a bottom share its nodes. A matcher state is the sorted
// set of stack tops that can read a byte next (plus "the root has ended"); states are interned
// too, and each state's transitions are filled in lazily, 256 slots a state. Walking the same
// grammar again therefore costs one table lookup a byte: the automaton is a DFA over parse states
// built on demand, and it is shared by every request with the same grammar.
//
// Calls are expanded when a state is entered, and a call that is the last item of its
// alternative returns straight to its caller's caller, so repetition written as right recursion
// keeps stacks flat. The number of nodes and states is bounded (kMaxNodes, kMaxStates); a grammar
// that needs more (deep nesting in a highly ambiguous grammar) fails with an error, never silently.
//
// An Automaton is not thread-safe: it grows as it is used. The server's scheduler thread is the
// only one that advances constraints; the CLI and tests are single-threaded.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "util/error.h"

namespace kipp::grammar {

using StateId = uint32_t;
inline constexpr StateId kDeadState = 0;  // no stack survives: the text is not a prefix

class Automaton {
 public:
  static Result<std::shared_ptr<Automaton>> create(Grammar grammar);

  const Grammar& grammar() const { return grammar_; }
  StateId start() const { return start_; }
  // The state after `byte` (kDeadState when the byte cannot come next).
  Result<StateId> next(StateId state, uint8_t byte) {
    const int32_t known = (*states_[state].next)[byte];
    if (known >= 0) return StateId(known);
    return compute_next(state, byte);
  }
  // next() without the error path, for all 256 bytes: the state, or -1 when it has not been
  // computed yet. The row stays where it is as the automaton grows; next() fills it in.
  const int32_t* known_transitions(StateId state) const { return states_[state].next->data(); }
  // True when the text that led to `state` is a whole sentence.
  bool accepts(StateId state) const;
  // True when some byte can follow.
  bool continues(StateId state) const;
  size_t state_count() const;
  // Parse stacks visited while computing states so far: the work that is bounded per state
  // (closure) and per token set (TokenMasks).
  uint64_t steps() const { return steps_; }
  // The bytes it holds now (states, their transitions and tops, parse stacks), for caches that
  // keep automata within a byte budget. An estimate of the containers' overheads included.
  size_t memory_bytes() const;

  static constexpr size_t kMaxNodes = 4'000'000;
  static constexpr size_t kMaxStates = 200'000;  // 1 KiB of transitions each

 private:
  explicit Automaton(Grammar grammar);
  struct Node {
    uint32_t position;  // into items_
    uint32_t parent;    // node id; kBottom for the root's caller
    uint64_t seen;      // permutation nodes: the named members matched so far
    uint32_t count;     // permutation nodes: members matched so far (saturating)
    uint32_t phase;     // permutation nodes: kPermStart, kPermAfterMember, kPermAfterSeparator
    bool operator==(const Node&) const = default;
  };
  struct NodeHash {
    size_t operator()(const Node& n) const;
  };
  struct StateData {
    std::vector<uint32_t> tops;  // sorted node ids whose item is a byte set
    bool accepting = false;
    std::unique_ptr<std::array<int32_t, 256>> next;  // -1 not computed yet
  };
  struct TopsHash {
    size_t operator()(const std::pair<std::vector<uint32_t>, bool>& key) const;
  };

  void find_productive();
  bool productive(const Item& item) const;
  void flatten();
  Status closure(std::vector<uint32_t>& work, std::vector<uint32_t>& tops, bool& accepting);
  Status expand_permutation(const Node& node, std::vector<uint32_t>& work);
  Result<StateId> compute_next(StateId state, uint8_t byte);
  Result<uint32_t> intern(const Node& node);
  // The node to return to after the item at `position` is done (its caller's when it ends the
  // alternative: the tail call).
  Result<uint32_t> continuation(uint32_t position, uint32_t parent);
  Result<StateId> make_state(std::vector<uint32_t> tops, bool accepting);

  Grammar grammar_;
  // Every alternative's items back to back, each alternative ended by an `end` marker.
  struct FlatItem {
    enum Kind : uint8_t { bytes, rule, permutation, end } kind;
    uint32_t index;
  };
  std::vector<FlatItem> items_;
  std::vector<std::vector<uint32_t>> rule_starts_;  // rule -> positions of its productive alternatives
  std::vector<bool> productive_;                    // rule -> can match some text

  std::vector<Node> nodes_;
  std::unordered_map<Node, uint32_t, NodeHash> node_ids_;
  std::vector<uint32_t> visit_stamp_;  // node -> the closure that last visited it
  std::vector<uint32_t> work_, tops_;  // compute_next's scratch, kept to save allocations
  uint32_t stamp_ = 0;
  std::vector<StateData> states_;
  std::unordered_map<std::pair<std::vector<uint32_t>, bool>, StateId, TopsHash> state_ids_;
  StateId start_ = kDeadState;
  uint64_t steps_ = 0;
  size_t stored_tops_ = 0;  // over states_, each stored twice (its data and its key)
  static constexpr uint32_t kBottom = UINT32_MAX;
};

// Whether `text` is a whole sentence of the grammar, or else how far it is a prefix of one.
struct TextCheck {
  bool complete = false;   // the whole text is a sentence
  bool prefix = false;     // the whole text is a prefix of some sentence (true when complete)
  size_t valid_bytes = 0;  // the longest prefix of the text that is a prefix of a sentence
};
Result<TextCheck> check_text(Automaton& automaton, std::string_view text);

}  // namespace kipp::grammar
