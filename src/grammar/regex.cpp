// The pattern is parsed into a small tree (regex_tree.h) over code point sets (regex_sets.h), and
// the tree is written out as rules; the subset and its meanings are listed in regex.h.
#include "grammar/regex.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "grammar/regex_sets.h"
#include "grammar/regex_tree.h"
#include "util/utf8.h"

namespace kipp::grammar {
namespace {

using namespace pattern;  // the tree and the sets are this file's own vocabulary

constexpr uint32_t kUnbounded = GrammarBuilder::kUnbounded;

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
      return limit_exceeded("pattern: groups nest deeper than the limit of ", kMaxPatternGroupDepth,
                            " levels at offset ", start);
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
      case '*':
        quantifier = {0, kUnbounded};
        ++pos_;
        break;
      case '+':
        quantifier = {1, kUnbounded};
        ++pos_;
        break;
      case '?':
        quantifier = {0, 1};
        ++pos_;
        break;
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
