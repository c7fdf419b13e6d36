// The one grammar form every constraint compiles to: a context-free grammar over bytes.
//
// GBNF files and JSON Schemas are both compiled into this form, and the matcher
// (grammar/matcher.h) runs only on it. Terminals are sets of bytes, so text is matched exactly as
// the tokens spell it: a character class over code points becomes alternatives of UTF-8 byte
// sequences (utf8_class below), and a token may end in the middle of a character.
//
// A rule is a list of alternatives; an alternative is a sequence of items: a byte set, a call of
// another rule, or a permutation (the members of a JSON object, each at most once, in any order,
// which a context-free grammar could only write out as every ordering). Rules must not be left
// recursive (a rule reaching itself before consuming a byte): check() refuses them, as llama.cpp
// does, because a matcher that expands calls eagerly would never finish.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "util/error.h"

namespace kipp::grammar {

using RuleId = uint32_t;

class ByteSet {
 public:
  ByteSet() = default;
  static ByteSet of(uint8_t byte) { return range(byte, byte); }
  static ByteSet range(uint8_t first, uint8_t last);

  void add(uint8_t byte) { words_[byte >> 6] |= uint64_t(1) << (byte & 63); }
  void add_range(uint8_t first, uint8_t last);
  void add_all(const ByteSet& other);
  bool has(uint8_t byte) const { return (words_[byte >> 6] >> (byte & 63)) & 1; }
  bool empty() const { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
  struct Hash {
    size_t operator()(const ByteSet& set) const {
      return size_t(set.words_[0] ^ (set.words_[1] * 31) ^ (set.words_[2] * 961) ^ (set.words_[3] * 29791));
    }
  };

 private:
  std::array<uint64_t, 4> words_{};
};

enum class ItemKind : uint8_t {
  bytes,        // one byte from byte_sets[index]
  rule,         // rule `index`, then on
  permutation,  // permutations[index]
};

struct Item {
  ItemKind kind;
  uint32_t index;
  bool operator==(const Item&) const = default;
};

using Sequence = std::vector<Item>;

struct Rule {
  std::string name;                    // for messages; unique within a grammar
  std::vector<Sequence> alternatives;  // at least one; an empty sequence matches nothing (epsilon)
};

// Members joined by `separator`, each named member at most once and every required one present,
// in any order, plus any number of `additional` members where one is allowed; between
// min_members and max_members members in all. A member rule matches one whole member (for JSON:
// the key, the colon and the value); the rule for additional members must itself exclude the
// named keys. At most 64 named members, so a set of seen members fits one word.
struct Permutation {
  struct Member {
    RuleId rule;
    bool required;
  };
  std::vector<Member> members;
  std::optional<RuleId> additional;
  RuleId separator;
  uint32_t min_members = 0;
  uint32_t max_members = kUnbounded;

  static constexpr uint32_t kUnbounded = UINT32_MAX;
  static constexpr size_t kMaxMembers = 64;
  // Counting members costs matcher states; more than this many is refused rather than tracked.
  static constexpr uint32_t kMaxCounted = 1000;
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<ByteSet> byte_sets;
  std::vector<Permutation> permutations;
  RuleId root = 0;

  // A stable digest of the grammar's structure (rule names excluded), for caches keyed by grammar.
  std::string digest() const;
  // The number of items over every rule: the size a limit applies to.
  size_t item_count() const;
};

// Builds a Grammar: rules are declared first (so they can call each other, recursion included)
// and given their alternatives later; identical byte sets are stored once.
class GrammarBuilder {
 public:
  // A new rule named `name` (made unique with a numeric suffix if taken), with no alternatives yet.
  RuleId declare(std::string_view name);
  void set_alternatives(RuleId rule, std::vector<Sequence> alternatives);
  // declare + set_alternatives.
  RuleId add(std::string_view name, std::vector<Sequence> alternatives);

  Item bytes(const ByteSet& set);
  static Item call(RuleId rule) { return {ItemKind::rule, rule}; }
  Item permutation(Permutation permutation);

  // The bytes of `text`, one item each.
  Sequence literal(std::string_view text);
  // A rule for code points in [first, last] pairs (sorted or not, overlapping or not), as UTF-8;
  // `negated` takes every valid code point (U+0000..U+10FFFF, surrogates excluded) outside them.
  RuleId utf8_class(std::string_view name, std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated);
  // `item` repeated between min and max times (max = kUnbounded for no limit), as rules of its own:
  // x{2,4} is x x (x (x)?)?, x* is R ::= x R | (nothing). Tail calls keep the matcher's stack flat.
  RuleId repeat(std::string_view name, Item item, uint32_t min, uint32_t max);
  static constexpr uint32_t kUnbounded = UINT32_MAX;

  // Copies every rule of a finished grammar into this one, names prefixed by `prefix`: the rule
  // its root became, to call from rules of this grammar (a compiled JSON Schema inside a larger
  // grammar).
  RuleId splice(std::string_view prefix, const Grammar& grammar);

  const std::string& name_of(RuleId rule) const { return grammar_.rules[rule].name; }
  // The items of every rule so far: compilers check it against kMaxGrammarItems as they go, so
  // that one request's grammar stops growing at the limit instead of only failing at finish().
  size_t item_count() const { return item_count_; }
  Status check_item_count() const;

  // The grammar with `root`, after check().
  Result<Grammar> finish(RuleId root) &&;

 private:
  Grammar grammar_;
  std::vector<bool> defined_;
  std::unordered_map<ByteSet, uint32_t, ByteSet::Hash> byte_set_ids_;  // into grammar_.byte_sets
  size_t item_count_ = 0;
  // The names taken, and per requested name the last suffix given, so that declaring many rules
  // of one name (repeat's chains, a compiler's helper rules) stays linear.
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, uint32_t> last_suffix_;
};

// Code point ranges ([first, last] pairs) sorted and merged, clipped to U+10FFFF, surrogates
// removed; `negated` takes their complement over the scalar values instead.
std::vector<std::pair<uint32_t, uint32_t>> normalize_code_points(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                                 bool negated);

// The least set of rules closed under "some alternative has every item holding", where a call
// holds when its rule is in the set and bytes and permutations hold by `test`: the rules that can
// match the empty text, or some text. Linear in the grammar's size: each alternative counts its
// items that do not hold yet (passes to a fixed point would be quadratic over a chain of rules).
struct RuleSetTest {
  std::function<bool(const ByteSet&)> bytes;
  // Given the set so far; asked again whenever a rule of the permutation joins the set.
  std::function<bool(const Permutation&, const std::vector<bool>& in_set)> permutation;
};
std::vector<bool> least_rule_set(const Grammar& grammar, const RuleSetTest& test);

// The rules that can match some text; a permutation can when its required members and enough
// others (and the separator, for two or more) can.
std::vector<bool> productive_rules(const Grammar& grammar);
bool permutation_productive(const Permutation& permutation, const std::vector<bool>& productive);

// Refuses a grammar the matcher cannot run: a rule without alternatives, an index out of range,
// a root that no text completes, left recursion (naming the rules of the cycle), a permutation
// with too many members or counts.
Status check(const Grammar& grammar);

// Lengths the compilers keep within, so that a request cannot make the engine build a huge grammar.
inline constexpr size_t kMaxGrammarItems = 4'000'000;

}  // namespace kipp::grammar
