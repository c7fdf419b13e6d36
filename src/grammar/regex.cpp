// The pattern is parsed into a small tree (code point sets, sequences, choices, repetitions) and
// the tree is written out as rules; the subset and its meanings are listed in regex.h.
#include "grammar/regex.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "util/utf8.h"

namespace kipp::grammar {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kUnbounded = GrammarBuilder::kUnbounded;

// --- Code point sets: sorted, merged, surrogates removed (no UTF-8 text holds one). ---

CodePointRanges normalized(CodePointRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  CodePointRanges merged;
  for (const auto& [first, last] : ranges) {
    if (first > last || first > kMaxCodePoint) continue;
    const uint32_t end = std::min(last, kMaxCodePoint);
    if (!merged.empty() && first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, end);
    else
      merged.push_back({first, end});
  }
  CodePointRanges scalar;
  for (const auto& [first, last] : merged) {
    if (first < 0xD800) scalar.push_back({first, std::min(last, uint32_t(0xD7FF))});
    if (last > 0xDFFF) scalar.push_back({std::max(first, uint32_t(0xE000)), last});
  }
  return scalar;
}

// Every code point outside `set` (a normalized set); the result is normalized too.
CodePointRanges complement(const CodePointRanges& set) {
  CodePointRanges outside;
  uint32_t next = 0;
  for (const auto& [first, last] : set) {
    if (first > next) outside.push_back({next, first - 1});
    next = last + 1;
  }
  if (next <= kMaxCodePoint) outside.push_back({next, kMaxCodePoint});
  return normalized(std::move(outside));
}

const CodePointRanges& digit_set() {
  static const CodePointRanges set = {{'0', '9'}};
  return set;
}
const CodePointRanges& word_set() {
  static const CodePointRanges set = normalized({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
  return set;
}
// ECMA-262 WhiteSpace (with every Space_Separator) and LineTerminator.
const CodePointRanges& space_set() {
  static const CodePointRanges set = normalized({{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680},
                                                 {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                                                 {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}});
  return set;
}
const CodePointRanges& dot_set() {
  static const CodePointRanges set = complement(normalized({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}}));
  return set;
}

// --- Unicode properties from utf8proc's data. ---

// The code points of each utf8proc general category (indexed by utf8proc_category_t).
const std::array<CodePointRanges, 30>& category_sets() {
  static const std::array<CodePointRanges, 30> sets = [] {
    std::array<CodePointRanges, 30> by_category;
    for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
      CodePointRanges& set = by_category[size_t(utf8proc_category(utf8proc_int32_t(cp)))];
      if (!set.empty() && set.back().second + 1 == cp)
        set.back().second = cp;
      else
        set.push_back({cp, cp});
    }
    for (CodePointRanges& set : by_category) set = normalized(std::move(set));
    return by_category;
  }();
  return sets;
}

constexpr uint32_t category_bit(utf8proc_category_t category) { return uint32_t(1) << category; }

// General_Category values as ECMA-262 names them (canonical names and aliases, case-sensitive).
struct CategoryName {
  std::string_view name;
  uint32_t categories;  // bits of utf8proc_category_t
};
constexpr uint32_t kLetters = category_bit(UTF8PROC_CATEGORY_LU) | category_bit(UTF8PROC_CATEGORY_LL) |
                              category_bit(UTF8PROC_CATEGORY_LT) | category_bit(UTF8PROC_CATEGORY_LM) |
                              category_bit(UTF8PROC_CATEGORY_LO);
constexpr uint32_t kCasedLetters =
    category_bit(UTF8PROC_CATEGORY_LU) | category_bit(UTF8PROC_CATEGORY_LL) | category_bit(UTF8PROC_CATEGORY_LT);
constexpr uint32_t kMarks =
    category_bit(UTF8PROC_CATEGORY_MN) | category_bit(UTF8PROC_CATEGORY_MC) | category_bit(UTF8PROC_CATEGORY_ME);
constexpr uint32_t kNumbers =
    category_bit(UTF8PROC_CATEGORY_ND) | category_bit(UTF8PROC_CATEGORY_NL) | category_bit(UTF8PROC_CATEGORY_NO);
constexpr uint32_t kPunctuation =
    category_bit(UTF8PROC_CATEGORY_PC) | category_bit(UTF8PROC_CATEGORY_PD) | category_bit(UTF8PROC_CATEGORY_PS) |
    category_bit(UTF8PROC_CATEGORY_PE) | category_bit(UTF8PROC_CATEGORY_PI) | category_bit(UTF8PROC_CATEGORY_PF) |
    category_bit(UTF8PROC_CATEGORY_PO);
constexpr uint32_t kSymbols = category_bit(UTF8PROC_CATEGORY_SM) | category_bit(UTF8PROC_CATEGORY_SC) |
                              category_bit(UTF8PROC_CATEGORY_SK) | category_bit(UTF8PROC_CATEGORY_SO);
constexpr uint32_t kSeparators =
    category_bit(UTF8PROC_CATEGORY_ZS) | category_bit(UTF8PROC_CATEGORY_ZL) | category_bit(UTF8PROC_CATEGORY_ZP);
constexpr uint32_t kOthers = category_bit(UTF8PROC_CATEGORY_CC) | category_bit(UTF8PROC_CATEGORY_CF) |
                             category_bit(UTF8PROC_CATEGORY_CS) | category_bit(UTF8PROC_CATEGORY_CO) |
                             category_bit(UTF8PROC_CATEGORY_CN);
constexpr CategoryName kCategoryNames[] = {
    {"C", kOthers},
    {"Other", kOthers},
    {"Cc", category_bit(UTF8PROC_CATEGORY_CC)},
    {"Control", category_bit(UTF8PROC_CATEGORY_CC)},
    {"cntrl", category_bit(UTF8PROC_CATEGORY_CC)},
    {"Cf", category_bit(UTF8PROC_CATEGORY_CF)},
    {"Format", category_bit(UTF8PROC_CATEGORY_CF)},
    {"Cn", category_bit(UTF8PROC_CATEGORY_CN)},
    {"Unassigned", category_bit(UTF8PROC_CATEGORY_CN)},
    {"Co", category_bit(UTF8PROC_CATEGORY_CO)},
    {"Private_Use", category_bit(UTF8PROC_CATEGORY_CO)},
    {"Cs", category_bit(UTF8PROC_CATEGORY_CS)},
    {"Surrogate", category_bit(UTF8PROC_CATEGORY_CS)},
    {"L", kLetters},
    {"Letter", kLetters},
    {"LC", kCasedLetters},
    {"Cased_Letter", kCasedLetters},
    {"Ll", category_bit(UTF8PROC_CATEGORY_LL)},
    {"Lowercase_Letter", category_bit(UTF8PROC_CATEGORY_LL)},
    {"Lm", category_bit(UTF8PROC_CATEGORY_LM)},
    {"Modifier_Letter", category_bit(UTF8PROC_CATEGORY_LM)},
    {"Lo", category_bit(UTF8PROC_CATEGORY_LO)},
    {"Other_Letter", category_bit(UTF8PROC_CATEGORY_LO)},
    {"Lt", category_bit(UTF8PROC_CATEGORY_LT)},
    {"Titlecase_Letter", category_bit(UTF8PROC_CATEGORY_LT)},
    {"Lu", category_bit(UTF8PROC_CATEGORY_LU)},
    {"Uppercase_Letter", category_bit(UTF8PROC_CATEGORY_LU)},
    {"M", kMarks},
    {"Mark", kMarks},
    {"Combining_Mark", kMarks},
    {"Mc", category_bit(UTF8PROC_CATEGORY_MC)},
    {"Spacing_Mark", category_bit(UTF8PROC_CATEGORY_MC)},
    {"Me", category_bit(UTF8PROC_CATEGORY_ME)},
    {"Enclosing_Mark", category_bit(UTF8PROC_CATEGORY_ME)},
    {"Mn", category_bit(UTF8PROC_CATEGORY_MN)},
    {"Nonspacing_Mark", category_bit(UTF8PROC_CATEGORY_MN)},
    {"N", kNumbers},
    {"Number", kNumbers},
    {"Nd", category_bit(UTF8PROC_CATEGORY_ND)},
    {"Decimal_Number", category_bit(UTF8PROC_CATEGORY_ND)},
    {"digit", category_bit(UTF8PROC_CATEGORY_ND)},
    {"Nl", category_bit(UTF8PROC_CATEGORY_NL)},
    {"Letter_Number", category_bit(UTF8PROC_CATEGORY_NL)},
    {"No", category_bit(UTF8PROC_CATEGORY_NO)},
    {"Other_Number", category_bit(UTF8PROC_CATEGORY_NO)},
    {"P", kPunctuation},
    {"Punctuation", kPunctuation},
    {"punct", kPunctuation},
    {"Pc", category_bit(UTF8PROC_CATEGORY_PC)},
    {"Connector_Punctuation", category_bit(UTF8PROC_CATEGORY_PC)},
    {"Pd", category_bit(UTF8PROC_CATEGORY_PD)},
    {"Dash_Punctuation", category_bit(UTF8PROC_CATEGORY_PD)},
    {"Pe", category_bit(UTF8PROC_CATEGORY_PE)},
    {"Close_Punctuation", category_bit(UTF8PROC_CATEGORY_PE)},
    {"Pf", category_bit(UTF8PROC_CATEGORY_PF)},
    {"Final_Punctuation", category_bit(UTF8PROC_CATEGORY_PF)},
    {"Pi", category_bit(UTF8PROC_CATEGORY_PI)},
    {"Initial_Punctuation", category_bit(UTF8PROC_CATEGORY_PI)},
    {"Po", category_bit(UTF8PROC_CATEGORY_PO)},
    {"Other_Punctuation", category_bit(UTF8PROC_CATEGORY_PO)},
    {"Ps", category_bit(UTF8PROC_CATEGORY_PS)},
    {"Open_Punctuation", category_bit(UTF8PROC_CATEGORY_PS)},
    {"S", kSymbols},
    {"Symbol", kSymbols},
    {"Sc", category_bit(UTF8PROC_CATEGORY_SC)},
    {"Currency_Symbol", category_bit(UTF8PROC_CATEGORY_SC)},
    {"Sk", category_bit(UTF8PROC_CATEGORY_SK)},
    {"Modifier_Symbol", category_bit(UTF8PROC_CATEGORY_SK)},
    {"Sm", category_bit(UTF8PROC_CATEGORY_SM)},
    {"Math_Symbol", category_bit(UTF8PROC_CATEGORY_SM)},
    {"So", category_bit(UTF8PROC_CATEGORY_SO)},
    {"Other_Symbol", category_bit(UTF8PROC_CATEGORY_SO)},
    {"Z", kSeparators},
    {"Separator", kSeparators},
    {"Zl", category_bit(UTF8PROC_CATEGORY_ZL)},
    {"Line_Separator", category_bit(UTF8PROC_CATEGORY_ZL)},
    {"Zp", category_bit(UTF8PROC_CATEGORY_ZP)},
    {"Paragraph_Separator", category_bit(UTF8PROC_CATEGORY_ZP)},
    {"Zs", category_bit(UTF8PROC_CATEGORY_ZS)},
    {"Space_Separator", category_bit(UTF8PROC_CATEGORY_ZS)},
};

std::optional<CodePointRanges> general_category(std::string_view name) {
  for (const CategoryName& entry : kCategoryNames) {
    if (entry.name != name) continue;
    CodePointRanges set;
    for (size_t category = 0; category < category_sets().size(); ++category)
      if (entry.categories & (uint32_t(1) << category))
        set.insert(set.end(), category_sets()[category].begin(), category_sets()[category].end());
    return normalized(std::move(set));
  }
  return std::nullopt;
}

// The value of \p{text}: a General_Category value, or one of the binary properties that need no
// data beyond the categories.
std::optional<CodePointRanges> property(std::string_view text) {
  if (const size_t equals = text.find('='); equals != std::string_view::npos) {
    const std::string_view name = text.substr(0, equals);
    if (name != "General_Category" && name != "gc") return std::nullopt;
    return general_category(text.substr(equals + 1));
  }
  if (text == "Any") return complement({});
  if (text == "ASCII") return CodePointRanges{{0, 0x7F}};
  if (text == "Assigned") return complement(category_sets()[UTF8PROC_CATEGORY_CN]);
  return general_category(text);
}

// --- The parsed pattern. ---

struct Node {
  enum class Kind : uint8_t { chars, sequence, choice, repeat };
  Kind kind = Kind::sequence;
  CodePointRanges set;      // chars: one code point of this (normalized) set
  std::vector<Node> parts;  // sequence, choice: the parts in order; repeat: the one repeated node
  uint32_t min = 0;         // repeat
  uint32_t max = 0;         // repeat; kUnbounded for no limit
};

Node chars(CodePointRanges set) { return {Node::Kind::chars, std::move(set), {}, 0, 0}; }
Node sequence(std::vector<Node> parts) { return {Node::Kind::sequence, {}, std::move(parts), 0, 0}; }
Node choice(std::vector<Node> parts) { return {Node::Kind::choice, {}, std::move(parts), 0, 0}; }
Node repeat(Node part, uint32_t min, uint32_t max) {
  std::vector<Node> parts;
  parts.push_back(std::move(part));
  return {Node::Kind::repeat, {}, std::move(parts), min, max};
}
Node nothing() { return chars({}); }

bool nullable(const Node& node) {
  switch (node.kind) {
    case Node::Kind::chars: return false;
    case Node::Kind::sequence: return std::all_of(node.parts.begin(), node.parts.end(), nullable);
    case Node::Kind::choice: return std::any_of(node.parts.begin(), node.parts.end(), nullable);
    case Node::Kind::repeat: return node.min == 0 || nullable(node.parts[0]);
  }
  return false;
}

bool matches_nothing(const Node& node) {
  switch (node.kind) {
    case Node::Kind::chars: return node.set.empty();
    case Node::Kind::sequence: return std::any_of(node.parts.begin(), node.parts.end(), matches_nothing);
    case Node::Kind::choice: return std::all_of(node.parts.begin(), node.parts.end(), matches_nothing);
    case Node::Kind::repeat: return node.min > 0 && matches_nothing(node.parts[0]);
  }
  return false;
}

size_t node_count(const Node& node) {
  size_t count = 1;
  for (const Node& part : node.parts) count += node_count(part);
  return count;
}

// Rewriting a nullable repetition copies the tails of sequences, which can grow with the square of
// the pattern ((a?b?c?...)*): the copies are counted and a pattern that needs too many is refused.
class RewriteBudget {
 public:
  Status spend(size_t nodes) {
    left_ = nodes > left_ ? 0 : left_ - nodes;
    if (left_ == 0)
      return limit_exceeded("pattern: rewriting its repetitions of optional parts takes more than ",
                            kMaxRewrittenNodes, " nodes: simplify the pattern");
    return {};
  }

 private:
  size_t left_ = kMaxRewrittenNodes;
};

// The node's language without the empty string: x* must repeat a part that consumes something,
// or its rule would call itself before reading a byte (left recursion).
Result<Node> without_empty(const Node& node, RewriteBudget& budget) {
  if (!nullable(node)) return node;
  switch (node.kind) {
    case Node::Kind::chars: return node;
    case Node::Kind::sequence: {
      // Every part is nullable: the first part that consumes something is one of them.
      std::vector<Node> options;
      for (size_t first = 0; first < node.parts.size(); ++first) {
        KIPP_ASSIGN(Node head, without_empty(node.parts[first], budget));
        if (matches_nothing(head)) continue;
        std::vector<Node> parts{std::move(head)};
        parts.insert(parts.end(), node.parts.begin() + long(first) + 1, node.parts.end());
        for (auto tail = parts.begin() + 1; tail != parts.end(); ++tail) KIPP_TRY(budget.spend(node_count(*tail)));
        options.push_back(sequence(std::move(parts)));
      }
      return options.empty() ? nothing() : choice(std::move(options));
    }
    case Node::Kind::choice: {
      std::vector<Node> options;
      for (const Node& part : node.parts) {
        KIPP_ASSIGN(Node option, without_empty(part, budget));
        if (!matches_nothing(option)) options.push_back(std::move(option));
      }
      return options.empty() ? nothing() : choice(std::move(options));
    }
    case Node::Kind::repeat: {
      // x{n,m} with x nullable is x'{0,m} (copies of the empty string make up any shortfall).
      KIPP_ASSIGN(Node part, without_empty(node.parts[0], budget));
      if (node.max == 0 || matches_nothing(part)) return nothing();
      return repeat(std::move(part), 1, node.max);
    }
  }
  return node;
}

// One top-level alternative and its anchors.
struct Alternative {
  bool anchored_start = false;
  bool anchored_end = false;
  Node body;
};

bool is_syntax_character(uint32_t c) {
  return c < 0x80 && std::string_view("^$\\.*+?()[]{}|").find(char(c)) != std::string_view::npos;
}

bool is_hex_digit(uint32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

uint32_t hex_value(uint32_t c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

bool is_ascii_letter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A character as an error message shows it.
std::string shown(uint32_t c) {
  if (c >= 0x21 && c < 0x7F) return std::string(1, char(c));
  char text[16];
  std::snprintf(text, sizeof text, "U+%04X", unsigned(c));
  return text;
}

// An escape or class member: a set, and the code point when it is a single character (only
// those can end a range).
struct ClassAtom {
  CodePointRanges set;
  std::optional<uint32_t> code_point;
};

ClassAtom single(uint32_t code_point) { return {normalized({{code_point, code_point}}), code_point}; }

struct Quantifier {
  uint32_t min;
  uint32_t max;
};

class Parser {
 public:
  explicit Parser(std::vector<uint32_t> text) : text_(std::move(text)) {}

  Result<std::vector<Alternative>> parse_pattern() {
    std::vector<Alternative> alternatives;
    while (true) {
      Alternative alternative;
      if (peek() == '^') {
        alternative.anchored_start = true;
        ++pos_;
      }
      KIPP_ASSIGN(alternative.body, parse_terms(&alternative.anchored_end));
      alternatives.push_back(std::move(alternative));
      if (at_end()) return alternatives;
      if (peek() == ')') return syntax_error("unmatched ')'", pos_);
      ++pos_;  // '|'
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  // 0 past the end: never one of the characters it is compared with where the end is possible.
  uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0; }
  bool has(size_t ahead) const { return pos_ + ahead < text_.size(); }

  static Error refused(std::string_view construct, size_t offset) {
    return fail("pattern: ", construct, " at offset ", offset, " is not supported");
  }
  static Error syntax_error(std::string_view problem, size_t offset) {
    return fail("pattern: ", problem, " at offset ", offset);
  }

  // Terms up to '|', ')' or the end. `anchored_end` is null inside groups, where $ is refused.
  Result<Node> parse_terms(bool* anchored_end) {
    std::vector<Node> parts;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const uint32_t c = peek();
      if (c == '$') {
        if (anchored_end && (!has(1) || peek(1) == '|')) {
          *anchored_end = true;
          ++pos_;
          break;
        }
        return refused("the anchor $ other than at the end of a top-level alternative", pos_);
      }
      if (c == '^') return refused("the anchor ^ other than at the start of a top-level alternative", pos_);
      KIPP_ASSIGN(Node atom, parse_atom());
      KIPP_ASSIGN(std::optional<Quantifier> quantifier, parse_quantifier());
      if (quantifier) {
        const size_t second = pos_;
        KIPP_ASSIGN(std::optional<Quantifier> again, parse_quantifier());
        if (again) return syntax_error("a quantifier of a quantifier", second);
        atom = repeat(std::move(atom), quantifier->min, quantifier->max);
      }
      parts.push_back(std::move(atom));
    }
    return parts.size() == 1 ? std::move(parts[0]) : sequence(std::move(parts));
  }

  // Alternatives up to the group's ')' (not consumed).
  Result<Node> parse_group_body() {
    std::vector<Node> options;
    while (true) {
      KIPP_ASSIGN(Node option, parse_terms(nullptr));
      options.push_back(std::move(option));
      if (peek() != '|') break;
      ++pos_;
    }
    return options.size() == 1 ? std::move(options[0]) : choice(std::move(options));
  }

  Result<Node> parse_atom() {
    const size_t start = pos_;
    const uint32_t c = peek();
    switch (c) {
      case '(': return parse_group();
      case '[': {
        KIPP_ASSIGN(CodePointRanges set, parse_class());
        return chars(std::move(set));
      }
      case '.': ++pos_; return chars(dot_set());
      case '\\': {
        KIPP_ASSIGN(ClassAtom escaped, parse_escape(false));
        return chars(std::move(escaped.set));
      }
      case '*':
      case '+':
      case '?': return syntax_error(std::string("nothing to repeat before '") + char(c) + "'", start);
      case '{':
        if (brace_quantifier(pos_)) return syntax_error("nothing to repeat before '{'", start);
        return refused("a lone '{' (write \\{ for the character)", start);
      case '}': return refused("a lone '}' (write \\} for the character)", start);
      case ']': return refused("a lone ']' (write \\] for the character)", start);
      default: ++pos_; return chars(single(c).set);
    }
  }

  Result<Node> parse_group() {
    const size_t start = pos_;
    if (group_depth_ == kMaxPatternGroupDepth)
      return limit_exceeded("pattern: groups nest deeper than the limit of ", kMaxPatternGroupDepth, " levels at offset ", start);
    ++pos_;  // '('
    if (peek() == '?') {
      if (peek(1) == ':') {
        pos_ += 2;
      } else if (peek(1) == '=' || peek(1) == '!') {
        return refused("the lookahead (?= / (?!", start);
      } else if (peek(1) == '<' && (peek(2) == '=' || peek(2) == '!')) {
        return refused("the lookbehind (?<= / (?<!", start);
      } else if (peek(1) == '<') {
        pos_ += 2;
        KIPP_TRY(parse_group_name(start));
      } else {
        return refused("the group modifier (?" + (has(1) ? shown(peek(1)) : std::string()), start);
      }
    }
    ++group_depth_;
    KIPP_ASSIGN(Node body, parse_group_body());
    --group_depth_;
    if (at_end()) return syntax_error("an unterminated group", start);
    ++pos_;  // ')'
    return body;
  }

  // The name of (?<name>...) up to and including '>': ASCII identifiers only, each name once.
  Status parse_group_name(size_t start) {
    std::string name;
    while (!at_end() && peek() != '>') {
      const uint32_t c = peek();
      const bool allowed = is_ascii_letter(c) || c == '_' || c == '$' || (!name.empty() && c >= '0' && c <= '9');
      if (!allowed) return refused("a group name other than an ASCII identifier", start);
      name += char(c);
      ++pos_;
    }
    if (at_end() || name.empty()) return syntax_error("an invalid group name", start);
    ++pos_;  // '>'
    if (!group_names_.insert(name).second) return refused("the group name '" + name + "' used twice", start);
    return {};
  }

  // Whether a {n}, {n,} or {n,m} quantifier starts at `at`.
  std::optional<std::pair<Quantifier, size_t>> brace_quantifier(size_t at) const {
    size_t i = at + 1;
    const auto number = [&](uint32_t& value) {
      const size_t begin = i;
      value = 0;
      for (; i < text_.size() && text_[i] >= '0' && text_[i] <= '9'; ++i)
        value = std::min<uint64_t>(uint64_t(value) * 10 + (text_[i] - '0'), UINT32_MAX - 1);
      return i > begin;
    };
    Quantifier quantifier{};
    if (!number(quantifier.min)) return std::nullopt;
    quantifier.max = quantifier.min;
    if (i < text_.size() && text_[i] == ',') {
      ++i;
      if (!number(quantifier.max)) quantifier.max = kUnbounded;
    }
    if (i >= text_.size() || text_[i] != '}') return std::nullopt;
    return std::pair{quantifier, i + 1};
  }

  Result<std::optional<Quantifier>> parse_quantifier() {
    const size_t start = pos_;
    Quantifier quantifier{};
    switch (peek()) {
      case '*': quantifier = {0, kUnbounded}; ++pos_; break;
      case '+': quantifier = {1, kUnbounded}; ++pos_; break;
      case '?': quantifier = {0, 1}; ++pos_; break;
      case '{': {
        const auto braces = brace_quantifier(pos_);
        if (!braces) return std::optional<Quantifier>();
        quantifier = braces->first;
        pos_ = braces->second;
        break;
      }
      default: return std::optional<Quantifier>();
    }
    if (peek() == '?') ++pos_;  // lazy: the same language
    if (quantifier.max != kUnbounded && quantifier.min > quantifier.max)
      return syntax_error("a quantifier with its numbers out of order", start);
    if (quantifier.min > kMaxRepeatCount || (quantifier.max != kUnbounded && quantifier.max > kMaxRepeatCount))
      return refused("a quantifier count above " + std::to_string(kMaxRepeatCount), start);
    return std::optional<Quantifier>(quantifier);
  }

  Result<CodePointRanges> parse_class() {
    const size_t start = pos_;
    ++pos_;  // '['
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodePointRanges set;
    while (true) {
      if (at_end()) return syntax_error("an unterminated character class", start);
      if (peek() == ']') break;
      KIPP_ASSIGN(ClassAtom first, parse_class_atom());
      if (peek() == '-' && has(1) && peek(1) != ']') {
        const size_t dash = pos_;
        ++pos_;
        KIPP_ASSIGN(ClassAtom last, parse_class_atom());
        if (!first.code_point || !last.code_point) return refused("a class escape as the end of a range", dash);
        if (*first.code_point > *last.code_point) return syntax_error("a character range out of order", dash);
        set.push_back({*first.code_point, *last.code_point});
      } else {
        set.insert(set.end(), first.set.begin(), first.set.end());
      }
    }
    ++pos_;  // ']'
    set = normalized(std::move(set));
    return negated ? complement(set) : set;
  }

  Result<ClassAtom> parse_class_atom() {
    if (peek() == '\\') return parse_escape(true);
    return single(text_[pos_++]);
  }

  Result<ClassAtom> parse_escape(bool in_class) {
    const size_t start = pos_;
    ++pos_;  // '\'
    if (at_end()) return syntax_error("a '\\' at the end of the pattern", start);
    const uint32_t c = text_[pos_++];
    switch (c) {
      case 'd': return ClassAtom{digit_set(), std::nullopt};
      case 'D': return ClassAtom{complement(digit_set()), std::nullopt};
      case 'w': return ClassAtom{word_set(), std::nullopt};
      case 'W': return ClassAtom{complement(word_set()), std::nullopt};
      case 's': return ClassAtom{space_set(), std::nullopt};
      case 'S': return ClassAtom{complement(space_set()), std::nullopt};
      case 'p':
      case 'P': return parse_property(start, c == 'P');
      case 'b':
        if (in_class) return single(0x08);
        return refused("the word boundary \\b", start);
      case 'B': return refused("the word boundary \\B", start);
      case 'n': return single(0x0A);
      case 'r': return single(0x0D);
      case 't': return single(0x09);
      case 'f': return single(0x0C);
      case 'v': return single(0x0B);
      case '0':
        if (peek() >= '0' && peek() <= '9') return refused("the octal escape \\0" + shown(peek()), start);
        return single(0);
      case 'k': return refused("the named backreference \\k", start);
      case 'c':
        if (is_ascii_letter(peek())) return single(text_[pos_++] % 32);
        return refused("\\c not followed by a letter", start);
      case 'x': {
        if (!has(1) || !is_hex_digit(peek()) || !is_hex_digit(peek(1)))
          return syntax_error("\\x not followed by two hex digits", start);
        const uint32_t value = hex_value(peek()) * 16 + hex_value(peek(1));
        pos_ += 2;
        return single(value);
      }
      case 'u': return parse_unicode_escape(start);
      case '-':
      case '/': return single(c);
      default:
        if (c >= '1' && c <= '9') return refused("the backreference \\" + shown(c), start);
        if (is_syntax_character(c)) return single(c);
        return refused("the escape \\" + shown(c), start);
    }
  }

  // Four hex digits at the position, if there are.
  std::optional<uint32_t> four_hex_digits(size_t at) const {
    if (at + 4 > text_.size()) return std::nullopt;
    uint32_t value = 0;
    for (size_t i = at; i < at + 4; ++i) {
      if (!is_hex_digit(text_[i])) return std::nullopt;
      value = value * 16 + hex_value(text_[i]);
    }
    return value;
  }

  // After "\u": HHHH (a surrogate pair written as two escapes is one code point), or {H...}.
  Result<ClassAtom> parse_unicode_escape(size_t start) {
    if (peek() == '{') {
      ++pos_;
      uint32_t value = 0;
      size_t digits = 0;
      for (; is_hex_digit(peek()); ++pos_, ++digits) {
        value = value * 16 + hex_value(peek());
        if (value > kMaxCodePoint) return syntax_error("\\u{...} above U+10FFFF", start);
      }
      if (digits == 0 || peek() != '}') return syntax_error("an invalid \\u{...} escape", start);
      ++pos_;
      return single(value);
    }
    const std::optional<uint32_t> value = four_hex_digits(pos_);
    if (!value) return syntax_error("\\u not followed by four hex digits or {...}", start);
    pos_ += 4;
    if (*value >= 0xD800 && *value <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
      const std::optional<uint32_t> low = four_hex_digits(pos_ + 2);
      if (low && *low >= 0xDC00 && *low <= 0xDFFF) {
        pos_ += 6;
        return single(0x10000 + ((*value - 0xD800) << 10) + (*low - 0xDC00));
      }
    }
    return single(*value);
  }

  // After "\p" or "\P": {name} or {name=value}.
  Result<ClassAtom> parse_property(size_t start, bool negated) {
    if (peek() != '{') return syntax_error("\\p not followed by {...}", start);
    std::string text;
    size_t end = pos_ + 1;
    for (; end < text_.size() && text_[end] != '}'; ++end) text += text_[end] < 0x80 ? char(text_[end]) : '?';
    if (end >= text_.size()) return syntax_error("an unterminated \\p{...}", start);
    const std::optional<CodePointRanges> set = property(text);
    if (!set) return refused("the property escape \\p{" + text + "}", start);
    pos_ = end + 1;
    return ClassAtom{negated ? complement(*set) : *set, std::nullopt};
  }

  std::vector<uint32_t> text_;
  size_t pos_ = 0;
  size_t group_depth_ = 0;  // groups open at pos_
  std::set<std::string> group_names_;
};

// --- Writing the tree out as rules. ---

class Emitter {
 public:
  Emitter(GrammarBuilder& builder, const CharRule& char_rule) : builder_(builder), char_rule_(char_rule) {}

  // One rule per distinct set: a set holding the last code point is passed as its complement,
  // negated, so that "anything but ..." stays as small as what it excludes.
  RuleId char_class(const CodePointRanges& set) {
    const auto found = classes_.find(set);
    if (found != classes_.end()) return found->second;
    const bool negated = !set.empty() && set.back().second == kMaxCodePoint;
    const RuleId rule = char_rule_(builder_, negated ? complement(set) : set, negated);
    classes_.emplace(set, rule);
    return rule;
  }

  Result<Sequence> emit(const Node& node) {
    switch (node.kind) {
      case Node::Kind::chars: return Sequence{GrammarBuilder::call(char_class(node.set))};
      case Node::Kind::sequence: {
        Sequence items;
        for (const Node& part : node.parts) {
          KIPP_ASSIGN(const Sequence more, emit(part));
          items.insert(items.end(), more.begin(), more.end());
        }
        return items;
      }
      case Node::Kind::choice:
      case Node::Kind::repeat: {
        // Nodes that become rules are written once per distinct subtree.
        const std::string key = subtree_key(node);
        const auto found = subtrees_.find(key);
        if (found != subtrees_.end()) return found->second;
        KIPP_ASSIGN(Sequence items, node.kind == Node::Kind::choice ? emit_choice(node.parts)
                                                                    : emit_repeat(node.parts[0], node.min, node.max));
        subtrees_.emplace(key, items);
        return items;
      }
    }
    return Sequence{};
  }

 private:
  static std::string subtree_key(const Node& node) {
    std::string key(1, char('0' + int(node.kind)));
    if (node.kind == Node::Kind::chars)
      for (const auto& [first, last] : node.set) key += std::to_string(first) + "-" + std::to_string(last) + ",";
    if (node.kind == Node::Kind::repeat) key += std::to_string(node.min) + "," + std::to_string(node.max);
    for (const Node& part : node.parts) key += "(" + subtree_key(part) + ")";
    return key;
  }

  Result<Sequence> emit_choice(const std::vector<Node>& options) {
    std::vector<Sequence> alternatives;
    for (const Node& option : options) {
      KIPP_ASSIGN(Sequence alternative, emit(option));
      alternatives.push_back(std::move(alternative));
    }
    return Sequence{GrammarBuilder::call(builder_.add("pattern-choice", std::move(alternatives)))};
  }

  Result<Sequence> emit_repeat(const Node& part, uint32_t min, uint32_t max) {
    if (max == 0) return Sequence{};
    if (min == 1 && max == 1) return emit(part);
    if (max == kUnbounded && nullable(part)) {
      KIPP_ASSIGN(const Node consuming, without_empty(part, rewrite_budget_));
      if (matches_nothing(consuming)) return Sequence{};
      KIPP_ASSIGN(const Item repeated, as_item(consuming));
      return Sequence{GrammarBuilder::call(builder_.repeat("pattern-repeat", repeated, 0, kUnbounded))};
    }
    KIPP_ASSIGN(const Item repeated, as_item(part));
    return Sequence{GrammarBuilder::call(builder_.repeat("pattern-repeat", repeated, min, max))};
  }

  // The node as one item: its only item, or a rule of its own.
  Result<Item> as_item(const Node& node) {
    KIPP_ASSIGN(Sequence items, emit(node));
    if (items.size() == 1) return items[0];
    return GrammarBuilder::call(builder_.add("pattern-group", {std::move(items)}));
  }

  GrammarBuilder& builder_;
  const CharRule& char_rule_;
  std::map<CodePointRanges, RuleId> classes_;
  std::map<std::string, Sequence> subtrees_;
  RewriteBudget rewrite_budget_;
};

Result<std::vector<uint32_t>> code_points(std::string_view text) {
  std::vector<uint32_t> points;
  for (size_t offset = 0; offset < text.size();) {
    const utf8::Step step = utf8::step(text.substr(offset));
    if (step.kind != utf8::StepKind::complete) return fail("pattern: invalid UTF-8 at byte offset ", offset);
    points.push_back(uint32_t(step.code_point));
    offset += step.length;
  }
  return points;
}

}  // namespace

CharRule utf8_char_rule() {
  return [](GrammarBuilder& builder, const CodePointRanges& ranges, bool negated) {
    return builder.utf8_class("char", ranges, negated);
  };
}

Result<RuleId> compile_pattern(GrammarBuilder& builder, std::string_view pattern, const CharRule& char_rule,
                               size_t max_code_points) {
  KIPP_TRY(builder.check_item_count());  // the patterns before this one may have filled it
  KIPP_ASSIGN(std::vector<uint32_t> points, code_points(pattern));
  if (points.size() > max_code_points)
    return limit_exceeded("pattern: ", points.size(), " code points, more than the limit of ", max_code_points);
  Parser parser(std::move(points));
  KIPP_ASSIGN(std::vector<Alternative> alternatives, parser.parse_pattern());
  Emitter emitter(builder, char_rule);
  // Unanchored ends take any text: the pattern is searched for, not matched whole.
  std::optional<Item> any_text;
  const auto any = [&] {
    if (!any_text)
      any_text = GrammarBuilder::call(
          builder.repeat("pattern-any", GrammarBuilder::call(emitter.char_class(complement({}))), 0, kUnbounded));
    return *any_text;
  };
  std::vector<Sequence> sequences;
  for (const Alternative& alternative : alternatives) {
    Sequence items;
    if (!alternative.anchored_start) items.push_back(any());
    KIPP_ASSIGN(const Sequence body, emitter.emit(alternative.body));
    items.insert(items.end(), body.begin(), body.end());
    if (!alternative.anchored_end) items.push_back(any());
    sequences.push_back(std::move(items));
  }
  return builder.add("pattern", std::move(sequences));
}

}  // namespace kipp::grammar
