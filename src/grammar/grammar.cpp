#include "grammar/grammar.h"

#include <algorithm>

#include "util/sha256.h"
#include "util/utf8.h"

namespace kipp::grammar {

ByteSet ByteSet::range(uint8_t first, uint8_t last) {
  ByteSet set;
  set.add_range(first, last);
  return set;
}

void ByteSet::add_range(uint8_t first, uint8_t last) {
  for (unsigned byte = first; byte <= last; ++byte) add(uint8_t(byte));
}

void ByteSet::add_all(const ByteSet& other) {
  for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
}

std::string Grammar::digest() const {
  std::string text = "root " + std::to_string(root) + "\n";
  for (const ByteSet& set : byte_sets) {
    for (unsigned byte = 0; byte < 256; ++byte) text += set.has(uint8_t(byte)) ? '1' : '0';
    text += '\n';
  }
  for (const Rule& rule : rules) {
    text += "rule";
    for (const Sequence& alternative : rule.alternatives) {
      text += " |";
      for (const Item& item : alternative)
        text += " " + std::to_string(int(item.kind)) + ":" + std::to_string(item.index);
    }
    text += '\n';
  }
  for (const Permutation& p : permutations) {
    text += "perm " + std::to_string(p.separator) + " " + std::to_string(p.min_members) + " " +
            std::to_string(p.max_members) + " " + (p.additional ? std::to_string(*p.additional) : "-");
    for (const Permutation::Member& m : p.members) text += " " + std::to_string(m.rule) + (m.required ? "!" : "?");
    text += '\n';
  }
  return sha256_hex(text);
}

size_t Grammar::item_count() const {
  size_t count = 0;
  for (const Rule& rule : rules)
    for (const Sequence& alternative : rule.alternatives) count += alternative.size() + 1;
  return count;
}

RuleId GrammarBuilder::declare(std::string_view name) {
  std::string unique(name);
  if (names_.contains(unique)) {
    uint32_t& suffix = last_suffix_[unique];
    do unique = std::string(name) + "-" + std::to_string(++suffix);
    while (names_.contains(unique));
  }
  names_.insert(unique);
  grammar_.rules.push_back({std::move(unique), {}});
  defined_.push_back(false);
  return RuleId(grammar_.rules.size() - 1);
}

void GrammarBuilder::set_alternatives(RuleId rule, std::vector<Sequence> alternatives) {
  for (const Sequence& sequence : grammar_.rules[rule].alternatives) item_count_ -= sequence.size();
  for (const Sequence& sequence : alternatives) item_count_ += sequence.size();
  grammar_.rules[rule].alternatives = std::move(alternatives);
  defined_[rule] = true;
}

RuleId GrammarBuilder::add(std::string_view name, std::vector<Sequence> alternatives) {
  const RuleId rule = declare(name);
  set_alternatives(rule, std::move(alternatives));
  return rule;
}

Status GrammarBuilder::check_item_count() const {
  if (item_count_ > kMaxGrammarItems)
    return limit_exceeded("the grammar has ", item_count_, " items, more than the limit of ", kMaxGrammarItems);
  return {};
}

Item GrammarBuilder::bytes(const ByteSet& set) {
  const auto [found, added] = byte_set_ids_.try_emplace(set, uint32_t(grammar_.byte_sets.size()));
  if (added) grammar_.byte_sets.push_back(set);
  return {ItemKind::bytes, found->second};
}

Item GrammarBuilder::permutation(Permutation permutation) {
  grammar_.permutations.push_back(std::move(permutation));
  return {ItemKind::permutation, uint32_t(grammar_.permutations.size() - 1)};
}

Sequence GrammarBuilder::literal(std::string_view text) {
  Sequence sequence;
  for (char c : text) sequence.push_back(bytes(ByteSet::of(uint8_t(c))));
  return sequence;
}

namespace {

using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;

// [low, high] (code points whose UTF-8 forms have the same length) as byte-range sequences: the
// range is split until, at every byte position, the bytes of the sequence form one range.
void same_length_sequences(uint32_t low, uint32_t high, std::vector<ByteRanges>& out) {
  for (uint32_t i = 1; i < 4; ++i) {
    const uint32_t tail = (uint32_t(1) << (6 * i)) - 1;  // the code point bits of the last i bytes
    if ((low & ~tail) == (high & ~tail)) continue;
    if ((low & tail) != 0) {
      same_length_sequences(low, low | tail, out);
      same_length_sequences((low | tail) + 1, high, out);
      return;
    }
    if ((high & tail) != tail) {
      same_length_sequences(low, (high & ~tail) - 1, out);
      same_length_sequences(high & ~tail, high, out);
      return;
    }
  }
  std::string first, last;
  utf8::append(low, first);
  utf8::append(high, last);
  ByteRanges ranges;
  for (size_t i = 0; i < first.size(); ++i) ranges.push_back({uint8_t(first[i]), uint8_t(last[i])});
  out.push_back(std::move(ranges));
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> normalize_code_points(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                                 bool negated) {
  constexpr uint32_t kMax = 0x10FFFF;
  for (auto& [first, last] : ranges) {
    if (first > last) std::swap(first, last);
    last = std::min(last, kMax);
  }
  std::erase_if(ranges, [](const auto& r) { return r.first > kMax; });
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else merged.push_back(r);
  }
  if (negated) {
    std::vector<std::pair<uint32_t, uint32_t>> complement;
    uint32_t next = 0;
    for (const auto& r : merged) {
      if (r.first > next) complement.push_back({next, r.first - 1});
      next = r.second + 1;
    }
    if (next <= kMax) complement.push_back({next, kMax});
    merged = std::move(complement);
  }
  std::vector<std::pair<uint32_t, uint32_t>> scalar;  // without U+D800..U+DFFF
  for (const auto& r : merged) {
    if (r.second < 0xD800 || r.first > 0xDFFF) {
      scalar.push_back(r);
      continue;
    }
    if (r.first < 0xD800) scalar.push_back({r.first, 0xD7FF});
    if (r.second > 0xDFFF) scalar.push_back({0xE000, r.second});
  }
  return scalar;
}

RuleId GrammarBuilder::utf8_class(std::string_view name, std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                  bool negated) {
  std::vector<ByteRanges> sequences;
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (const auto& [first, last] : normalize_code_points(std::move(ranges), negated)) {
    uint32_t start = first;
    for (uint32_t end : kLengthEnds) {
      if (start > last) break;
      if (start > end) continue;
      const uint32_t stop = std::min(last, end);
      same_length_sequences(start, stop, sequences);
      start = stop + 1;
    }
  }
  // Sequences that differ only in their last byte range share one item with both ranges.
  std::vector<Sequence> alternatives;
  std::vector<ByteRanges> prefixes;
  std::vector<ByteSet> last_sets;
  for (const ByteRanges& ranges_of : sequences) {
    ByteRanges prefix(ranges_of.begin(), ranges_of.end() - 1);
    auto found = std::find(prefixes.begin(), prefixes.end(), prefix);
    if (found == prefixes.end()) {
      prefixes.push_back(prefix);
      last_sets.emplace_back();
      found = prefixes.end() - 1;
    }
    last_sets[found - prefixes.begin()].add_range(ranges_of.back().first, ranges_of.back().second);
  }
  for (size_t i = 0; i < prefixes.size(); ++i) {
    Sequence sequence;
    for (const auto& [low, high] : prefixes[i]) sequence.push_back(bytes(ByteSet::range(low, high)));
    sequence.push_back(bytes(last_sets[i]));
    alternatives.push_back(std::move(sequence));
  }
  // An empty class matches nothing: one alternative that no byte can start.
  if (alternatives.empty()) alternatives.push_back({bytes(ByteSet())});
  return add(name, std::move(alternatives));
}

RuleId GrammarBuilder::repeat(std::string_view name, Item item, uint32_t min, uint32_t max) {
  const std::string base(name);
  Sequence sequence(min, item);
  if (max == kUnbounded) {
    const RuleId star = declare(base + "-star");
    set_alternatives(star, {{item, call(star)}, {}});
    sequence.push_back(call(star));
  } else if (max > min) {
    // optional_k matches 0..k copies: item optional_(k-1) | nothing.
    RuleId optional = add(base + "-opt", {{item}, {}});
    for (uint32_t k = 2; k <= max - min; ++k) optional = add(base + "-opt", {{item, call(optional)}, {}});
    sequence.push_back(call(optional));
  }
  return add(base, {std::move(sequence)});
}

RuleId GrammarBuilder::splice(std::string_view prefix, const Grammar& grammar) {
  std::vector<RuleId> rules;
  rules.reserve(grammar.rules.size());
  for (const Rule& rule : grammar.rules) rules.push_back(declare(std::string(prefix) + rule.name));
  const auto copy = [&](const Item& item) -> Item {
    switch (item.kind) {
      case ItemKind::bytes: return bytes(grammar.byte_sets[item.index]);
      case ItemKind::rule: return call(rules[item.index]);
      case ItemKind::permutation: {
        Permutation permutation = grammar.permutations[item.index];
        for (Permutation::Member& member : permutation.members) member.rule = rules[member.rule];
        if (permutation.additional) permutation.additional = rules[*permutation.additional];
        permutation.separator = rules[permutation.separator];
        return this->permutation(std::move(permutation));
      }
    }
    return item;
  };
  for (size_t r = 0; r < grammar.rules.size(); ++r) {
    std::vector<Sequence> alternatives;
    for (const Sequence& sequence : grammar.rules[r].alternatives) {
      Sequence copied;
      copied.reserve(sequence.size());
      for (const Item& item : sequence) copied.push_back(copy(item));
      alternatives.push_back(std::move(copied));
    }
    set_alternatives(rules[r], std::move(alternatives));
  }
  return rules[grammar.root];
}

Result<Grammar> GrammarBuilder::finish(RuleId root) && {
  for (size_t i = 0; i < defined_.size(); ++i)
    if (!defined_[i]) return fail("rule '", grammar_.rules[i].name, "' is used but never defined");
  grammar_.root = root;
  KIPP_TRY(check(grammar_));
  return std::move(grammar_);
}

std::vector<bool> least_rule_set(const Grammar& g, const RuleSetTest& test) {
  std::vector<bool> in(g.rules.size(), false);
  // Per alternative, its rule and how many of its items do not hold yet; an alternative waits on
  // each rule it calls (once per call) and on the rules of each permutation that does not hold.
  struct Alternative {
    RuleId rule;
    size_t pending;
  };
  struct PermutationUse {
    uint32_t alternative;
    uint32_t permutation;
    bool holds;
  };
  std::vector<Alternative> alternatives;
  std::vector<PermutationUse> uses;
  std::vector<std::vector<uint32_t>> calls_waiting(g.rules.size());  // rule -> alternatives
  std::vector<std::vector<uint32_t>> uses_waiting(g.rules.size());   // rule -> permutation uses
  std::vector<RuleId> joined;
  const auto join = [&](RuleId rule) {
    if (in[rule]) return;
    in[rule] = true;
    joined.push_back(rule);
  };
  for (size_t r = 0; r < g.rules.size(); ++r)
    for (const Sequence& sequence : g.rules[r].alternatives) {
      const uint32_t id = uint32_t(alternatives.size());
      size_t pending = 0;
      for (const Item& item : sequence) {
        if (item.kind == ItemKind::bytes) {
          pending += !test.bytes(g.byte_sets[item.index]);  // never holds later
        } else if (item.kind == ItemKind::rule) {
          ++pending;
          calls_waiting[item.index].push_back(id);
        } else if (!test.permutation(g.permutations[item.index], in)) {
          ++pending;
          const Permutation& p = g.permutations[item.index];
          const uint32_t use = uint32_t(uses.size());
          uses.push_back({id, item.index, false});
          for (const Permutation::Member& m : p.members) uses_waiting[m.rule].push_back(use);
          if (p.additional) uses_waiting[*p.additional].push_back(use);
          uses_waiting[p.separator].push_back(use);
        }
      }
      alternatives.push_back({RuleId(r), pending});
      if (pending == 0) join(RuleId(r));
    }
  while (!joined.empty()) {
    const RuleId rule = joined.back();
    joined.pop_back();
    for (uint32_t id : calls_waiting[rule])
      if (--alternatives[id].pending == 0) join(alternatives[id].rule);
    for (uint32_t use_id : uses_waiting[rule]) {
      PermutationUse& use = uses[use_id];
      if (use.holds || !test.permutation(g.permutations[use.permutation], in)) continue;
      use.holds = true;
      if (--alternatives[use.alternative].pending == 0) join(alternatives[use.alternative].rule);
    }
  }
  return in;
}

bool permutation_productive(const Permutation& p, const std::vector<bool>& productive) {
  for (const Permutation::Member& m : p.members)
    if (m.required && !productive[m.rule]) return false;
  if (p.min_members == 0) return true;
  // Enough members must be able to end; the separator too when there are two or more.
  uint32_t able = 0;
  for (const Permutation::Member& m : p.members) able += productive[m.rule];
  const bool additional = p.additional && productive[*p.additional];
  return (additional || able >= p.min_members) && (p.min_members <= 1 || productive[p.separator]);
}

std::vector<bool> productive_rules(const Grammar& grammar) {
  return least_rule_set(grammar, {.bytes = [](const ByteSet& set) { return !set.empty(); },
                                  .permutation = permutation_productive});
}

namespace {

// A permutation is nullable when it may have no member at all.
bool permutation_nullable(const Permutation& p) {
  return p.min_members == 0 &&
         std::none_of(p.members.begin(), p.members.end(), [](const auto& m) { return m.required; });
}

Status check_call(const Grammar& g, RuleId rule, const std::string& where) {
  if (rule >= g.rules.size()) return fail(where, " calls rule ", rule, ", which does not exist");
  return {};
}

// Refuses a rule without alternatives, and an item naming a byte set, rule or permutation that does
// not exist.
Status check_items(const Grammar& g) {
  for (const Rule& rule : g.rules) {
    if (rule.alternatives.empty()) return fail("rule '", rule.name, "' has no alternatives");
    for (const Sequence& alternative : rule.alternatives)
      for (const Item& item : alternative) {
        if (item.kind == ItemKind::bytes && item.index >= g.byte_sets.size())
          return fail("rule '", rule.name, "' uses byte set ", item.index, ", which does not exist");
        if (item.kind == ItemKind::rule) KIPP_TRY(check_call(g, item.index, "rule '" + rule.name + "'"));
        if (item.kind == ItemKind::permutation && item.index >= g.permutations.size())
          return fail("rule '", rule.name, "' uses permutation ", item.index, ", which does not exist");
      }
  }
  return {};
}

// Refuses a permutation with more members or counts than the matcher tracks, or calling a rule
// that does not exist.
Status check_permutations(const Grammar& g) {
  for (const Permutation& p : g.permutations) {
    if (p.members.size() > Permutation::kMaxMembers)
      return fail("an object with ", p.members.size(), " named members: at most ", Permutation::kMaxMembers,
                  " can be tracked");
    if (p.min_members > p.max_members)
      return fail("a permutation needs ", p.min_members, " members but allows only ", p.max_members);
    if (p.min_members > Permutation::kMaxCounted ||
        (p.max_members != Permutation::kUnbounded && p.max_members > Permutation::kMaxCounted))
      return fail("member counts above ", Permutation::kMaxCounted, " are not tracked");
    KIPP_TRY(check_call(g, p.separator, "a permutation"));
    for (const Permutation::Member& m : p.members) KIPP_TRY(check_call(g, m.rule, "a permutation"));
    if (p.additional) KIPP_TRY(check_call(g, *p.additional, "a permutation"));
  }
  return {};
}

// Refuses a permutation member that can match the empty text.
Status check_members_not_nullable(const Grammar& g, const std::vector<bool>& nullable) {
  for (const Permutation& p : g.permutations) {
    for (const Permutation::Member& m : p.members)
      if (nullable[m.rule]) return fail("permutation member '", g.rules[m.rule].name, "' can match nothing");
    if (p.additional && nullable[*p.additional])
      return fail("permutation member '", g.rules[*p.additional].name, "' can match nothing");
  }
  return {};
}

// Left calls: rule -> the rules it may call before consuming a byte.
std::vector<std::vector<RuleId>> left_calls_of(const Grammar& g, const std::vector<bool>& nullable) {
  const auto item_nullable = [&](const Item& item) {
    switch (item.kind) {
      case ItemKind::bytes: return false;
      case ItemKind::rule: return bool(nullable[item.index]);
      case ItemKind::permutation: return permutation_nullable(g.permutations[item.index]);
    }
    return false;
  };
  std::vector<std::vector<RuleId>> left_calls(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r)
    for (const Sequence& alternative : g.rules[r].alternatives)
      for (const Item& item : alternative) {
        if (item.kind == ItemKind::rule) left_calls[r].push_back(item.index);
        if (item.kind == ItemKind::permutation) {
          const Permutation& p = g.permutations[item.index];
          for (const Permutation::Member& m : p.members) left_calls[r].push_back(m.rule);
          if (p.additional) left_calls[r].push_back(*p.additional);
        }
        if (!item_nullable(item)) break;
      }
  return left_calls;
}

// A cycle in left calls is left recursion: depth-first search with colours, its path kept on a
// stack of its own (a chain of many rules must not exhaust the thread's).
Status check_left_recursion(const Grammar& g, const std::vector<std::vector<RuleId>>& left_calls) {
  std::vector<uint8_t> colour(g.rules.size(), 0);  // 0 new, 1 on the path, 2 done
  struct Step {
    RuleId rule;
    size_t next;  // the index in left_calls[rule] to follow next
  };
  std::vector<Step> path;
  for (size_t start = 0; start < g.rules.size(); ++start) {
    if (colour[start] != 0) continue;
    colour[start] = 1;
    path.push_back({RuleId(start), 0});
    while (!path.empty()) {
      Step& step = path.back();
      if (step.next == left_calls[step.rule].size()) {
        colour[step.rule] = 2;
        path.pop_back();
        continue;
      }
      const RuleId next = left_calls[step.rule][step.next++];
      if (colour[next] == 1) {
        std::string cycle;
        auto on_path = std::find_if(path.begin(), path.end(), [&](const Step& s) { return s.rule == next; });
        for (; on_path != path.end(); ++on_path) cycle += g.rules[on_path->rule].name + " -> ";
        cycle += g.rules[next].name;
        return fail("the grammar is left recursive (", cycle, " before any character): rewrite it with repetition");
      }
      if (colour[next] == 0) {
        colour[next] = 1;
        path.push_back({next, 0});
      }
    }
  }
  return {};
}

}  // namespace

Status check(const Grammar& g) {
  if (g.root >= g.rules.size()) return fail("the root rule ", g.root, " does not exist");
  if (g.item_count() > kMaxGrammarItems)
    return fail("the grammar has ", g.item_count(), " items, more than the limit of ", kMaxGrammarItems);
  KIPP_TRY(check_items(g));
  KIPP_TRY(check_permutations(g));
  const std::vector<bool> nullable = least_rule_set(
      g, {.bytes = [](const ByteSet&) { return false; },
          .permutation = [](const Permutation& p, const std::vector<bool>&) { return permutation_nullable(p); }});
  KIPP_TRY(check_members_not_nullable(g, nullable));
  // Found here, before any work: a constraint that no text completes would only fail at its end.
  if (!productive_rules(g)[g.root])
    return fail("the grammar matches no text at all (rule '", g.rules[g.root].name, "' can never be completed)");
  return check_left_recursion(g, left_calls_of(g, nullable));
}

}  // namespace kipp::grammar
