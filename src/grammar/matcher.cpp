#include "grammar/matcher.h"

#include <algorithm>
#include <bit>

namespace kipp::grammar {
namespace {

// Parse stacks one state's closure may visit: nested repetitions of what can match nothing
// (((a?){1000}){1000}) or rules that call themselves twice make a closure of millions, and filling
// it takes seconds before kMaxNodes says no.
constexpr uint64_t kMaxClosureSteps = 500'000;

// Where a permutation node stands: before its first member, after a member (a separator or the
// end may follow), or after a separator (a member must follow).
enum PermutationPhase : uint32_t { kPermStart = 0, kPermAfterMember = 1, kPermAfterSeparator = 2 };

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

size_t Automaton::NodeHash::operator()(const Node& n) const {
  uint64_t h = mix(n.position, n.parent);
  h = mix(h, n.seen);
  h = mix(h, (uint64_t(n.count) << 2) | n.phase);
  return size_t(h);
}

size_t Automaton::TopsHash::operator()(const std::pair<std::vector<uint32_t>, bool>& key) const {
  uint64_t h = key.second;
  for (uint32_t id : key.first) h = mix(h, id);
  return size_t(h);
}

Automaton::Automaton(Grammar grammar) : grammar_(std::move(grammar)) {}

Result<std::shared_ptr<Automaton>> Automaton::create(Grammar grammar) {
  KIPP_TRY(check(grammar));
  std::shared_ptr<Automaton> automaton(new Automaton(std::move(grammar)));
  automaton->flatten();  // check() refused a root that cannot be completed
  // State 0 is the dead state: no tops, not accepting, every byte leads back to it.
  KIPP_ASSIGN(const StateId dead, automaton->make_state({}, false));
  (void)dead;
  automaton->states_[kDeadState].next->fill(int32_t(kDeadState));
  std::vector<uint32_t> work, tops;
  for (uint32_t start : automaton->rule_starts_[automaton->grammar_.root]) {
    KIPP_ASSIGN(const uint32_t node, automaton->intern({start, kBottom, 0, 0, 0}));
    work.push_back(node);
  }
  bool accepting = false;
  KIPP_TRY(automaton->closure(work, tops, accepting));
  KIPP_ASSIGN(automaton->start_, automaton->make_state(std::move(tops), accepting));
  return automaton;
}

// An alternative that uses another kind (an empty byte set, a rule that never ends, a permutation
// whose required member never ends) is left out of the flat form, so the matcher never walks into
// text that cannot be completed.
void Automaton::find_productive() { productive_ = productive_rules(grammar_); }

bool Automaton::productive(const Item& item) const {
  switch (item.kind) {
    case ItemKind::bytes: return !grammar_.byte_sets[item.index].empty();
    case ItemKind::rule: return productive_[item.index];
    case ItemKind::permutation: return permutation_productive(grammar_.permutations[item.index], productive_);
  }
  return false;
}

void Automaton::flatten() {
  find_productive();
  rule_starts_.resize(grammar_.rules.size());
  for (size_t r = 0; r < grammar_.rules.size(); ++r)
    for (const Sequence& alternative : grammar_.rules[r].alternatives) {
      if (!std::all_of(alternative.begin(), alternative.end(), [&](const Item& i) { return productive(i); })) continue;
      rule_starts_[r].push_back(uint32_t(items_.size()));
      for (const Item& item : alternative) {
        const FlatItem::Kind kind = item.kind == ItemKind::bytes  ? FlatItem::bytes
                                    : item.kind == ItemKind::rule ? FlatItem::rule
                                                                  : FlatItem::permutation;
        items_.push_back({kind, item.index});
      }
      items_.push_back({FlatItem::end, uint32_t(r)});
    }
}

Result<uint32_t> Automaton::intern(const Node& node) {
  const auto found = node_ids_.find(node);
  if (found != node_ids_.end()) return found->second;
  if (nodes_.size() >= kMaxNodes)
    return limit_exceeded("the grammar needs more than ", kMaxNodes,
                          " parse stacks (nesting too deep for how ambiguous it is)");
  const uint32_t id = uint32_t(nodes_.size());
  nodes_.push_back(node);
  visit_stamp_.push_back(0);
  node_ids_.emplace(node, id);
  return id;
}

Result<uint32_t> Automaton::continuation(uint32_t position, uint32_t parent) {
  if (items_[position + 1].kind == FlatItem::end) return parent;  // the tail call
  return intern({position + 1, parent, 0, 0, 0});
}

Status Automaton::closure(std::vector<uint32_t>& work, std::vector<uint32_t>& tops, bool& accepting) {
  ++stamp_;
  const uint64_t steps_before = steps_;
  while (!work.empty()) {
    const uint32_t id = work.back();
    work.pop_back();
    if (id == kBottom) {
      accepting = true;
      continue;
    }
    if (visit_stamp_[id] == stamp_) continue;
    visit_stamp_[id] = stamp_;
    if (++steps_ - steps_before > kMaxClosureSteps)
      return limit_exceeded(
          "one matcher state needs more than the limit of ", kMaxClosureSteps,
          " parse stacks (the grammar nests repetitions of what can match nothing, or is too ambiguous)");
    const Node node = nodes_[id];  // a copy: interning below may move the nodes
    const FlatItem item = items_[node.position];
    switch (item.kind) {
      case FlatItem::bytes: tops.push_back(id); break;
      case FlatItem::end: work.push_back(node.parent); break;
      case FlatItem::rule: {
        KIPP_ASSIGN(const uint32_t back, continuation(node.position, node.parent));
        for (uint32_t start : rule_starts_[item.index]) {
          KIPP_ASSIGN(const uint32_t callee, intern({start, back, 0, 0, 0}));
          work.push_back(callee);
        }
        break;
      }
      case FlatItem::permutation: KIPP_TRY(expand_permutation(node, work)); break;
    }
  }
  return {};
}

Status Automaton::expand_permutation(const Node& node, std::vector<uint32_t>& work) {
  const Permutation& p = grammar_.permutations[items_[node.position].index];
  uint64_t required = 0, optional = 0;  // the productive members of each kind
  for (size_t i = 0; i < p.members.size(); ++i) {
    if (!productive_[p.members[i].rule]) continue;
    (p.members[i].required ? required : optional) |= uint64_t(1) << i;
  }
  const bool additional = p.additional && productive_[*p.additional];
  const bool counted = p.min_members > 0 || p.max_members != Permutation::kUnbounded;
  const uint32_t count_cap = p.max_members != Permutation::kUnbounded ? p.max_members : p.min_members;
  // Whether the members can still be completed from (seen, count): the required ones left must
  // fit under max_members, and min_members must be reachable with what is left to offer. A member
  // that would make completion impossible is never offered, so no walk ends in a dead end.
  const auto can_complete = [&](uint64_t seen, uint32_t count) {
    const uint32_t required_left = uint32_t(std::popcount(required & ~seen));
    if (p.max_members != Permutation::kUnbounded && uint64_t(count) + required_left > p.max_members) return false;
    const uint64_t reached = uint64_t(count) + required_left;
    if (reached >= p.min_members || additional) return true;
    return reached + uint64_t(std::popcount(optional & ~seen)) >= p.min_members;
  };
  const bool room = !counted || node.count < p.max_members;
  const bool complete = (node.seen & required) == required && (!counted || node.count >= p.min_members);
  const uint32_t next_count = counted ? std::min(node.count + 1, count_cap) : 0;
  // The members that may come next (after a separator, or first).
  std::vector<std::pair<RuleId, uint64_t>> next;  // rule, seen after it
  if (room) {
    for (size_t i = 0; i < p.members.size(); ++i) {
      const uint64_t bit = uint64_t(1) << i;
      if (node.seen & bit || !((required | optional) & bit)) continue;
      if (can_complete(node.seen | bit, next_count)) next.push_back({p.members[i].rule, node.seen | bit});
    }
    if (additional && can_complete(node.seen, next_count)) next.push_back({*p.additional, node.seen});
  }

  const auto push = [&](RuleId rule, uint64_t seen, uint32_t count, uint32_t phase) -> Status {
    KIPP_ASSIGN(const uint32_t back, intern({node.position, node.parent, seen, count, phase}));
    for (uint32_t start : rule_starts_[rule]) {
      KIPP_ASSIGN(const uint32_t alternative, intern({start, back, 0, 0, 0}));
      work.push_back(alternative);
    }
    return {};
  };
  if (node.phase != kPermAfterSeparator && complete) {
    KIPP_ASSIGN(const uint32_t after, continuation(node.position, node.parent));
    work.push_back(after);
  }
  if (next.empty()) return {};
  if (node.phase == kPermAfterMember) {
    if (productive_[p.separator]) KIPP_TRY(push(p.separator, node.seen, node.count, kPermAfterSeparator));
    return {};
  }
  for (const auto& [rule, seen] : next) KIPP_TRY(push(rule, seen, next_count, kPermAfterMember));
  return {};
}

Result<StateId> Automaton::make_state(std::vector<uint32_t> tops, bool accepting) {
  std::sort(tops.begin(), tops.end());
  tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
  if (tops.empty() && !accepting && !states_.empty()) return kDeadState;
  std::pair<std::vector<uint32_t>, bool> key(std::move(tops), accepting);
  const auto found = state_ids_.find(key);
  if (found != state_ids_.end()) return found->second;
  if (states_.size() >= kMaxStates)
    return limit_exceeded("the grammar needs more than ", kMaxStates, " matcher states");
  const StateId id = StateId(states_.size());
  StateData data;
  data.tops = key.first;
  data.accepting = accepting;
  data.next = std::make_unique<std::array<int32_t, 256>>();
  // Bytes no top can read lead to the dead state: known at once, so a walk over the vocabulary
  // computes transitions only for the bytes that survive.
  ByteSet readable;
  for (uint32_t top : data.tops) readable.add_all(grammar_.byte_sets[items_[nodes_[top].position].index]);
  for (unsigned byte = 0; byte < 256; ++byte)
    (*data.next)[byte] = readable.has(uint8_t(byte)) ? -1 : int32_t(kDeadState);
  stored_tops_ += 2 * data.tops.size();
  states_.push_back(std::move(data));
  state_ids_.emplace(std::move(key), id);
  return id;
}

Result<StateId> Automaton::compute_next(StateId state, uint8_t byte) {
  std::vector<uint32_t>& work = work_;
  std::vector<uint32_t>& tops = tops_;
  work.clear();
  tops.clear();
  for (uint32_t top : states_[state].tops) {
    const Node node = nodes_[top];
    if (!grammar_.byte_sets[items_[node.position].index].has(byte)) continue;
    KIPP_ASSIGN(const uint32_t after, continuation(node.position, node.parent));
    work.push_back(after);
  }
  bool accepting = false;
  KIPP_TRY(closure(work, tops, accepting));
  KIPP_ASSIGN(const StateId next_state, make_state(tops, accepting));
  (*states_[state].next)[byte] = int32_t(next_state);
  return next_state;
}

bool Automaton::accepts(StateId state) const { return states_[state].accepting; }

bool Automaton::continues(StateId state) const { return !states_[state].tops.empty(); }

size_t Automaton::state_count() const { return states_.size(); }

size_t Automaton::memory_bytes() const {
  constexpr size_t kHashEntry = 32;  // an unordered_map node's pointers and hash, roughly
  const size_t per_state = sizeof(StateData) + sizeof(std::array<int32_t, 256>) +
                           sizeof(std::pair<std::vector<uint32_t>, bool>) + sizeof(StateId) + kHashEntry;
  const size_t per_node = sizeof(Node) * 2 + sizeof(uint32_t) * 2 + kHashEntry;
  return states_.size() * per_state + stored_tops_ * sizeof(uint32_t) + nodes_.size() * per_node +
         items_.size() * sizeof(FlatItem);
}

Result<TextCheck> check_text(Automaton& automaton, std::string_view text) {
  TextCheck result;
  StateId state = automaton.start();
  for (size_t i = 0; i < text.size(); ++i) {
    KIPP_ASSIGN(const StateId next, automaton.next(state, uint8_t(text[i])));
    if (next == kDeadState) return result;
    state = next;
    result.valid_bytes = i + 1;
  }
  result.prefix = true;
  result.complete = automaton.accepts(state);
  return result;
}

}  // namespace kipp::grammar
