#include "grammar/gbnf.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "util/utf8.h"

namespace kipp::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<uint32_t> hex_value(char c) {
  if (c >= '0' && c <= '9') return uint32_t(c - '0');
  if (c >= 'a' && c <= 'f') return uint32_t(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return uint32_t(c - 'A' + 10);
  return std::nullopt;
}

// A code point as a message shows it: printable characters quoted, the rest as U+XXXX.
std::string code_point_name(uint32_t code_point) {
  if (code_point < 0x20 || code_point == 0x7F || (code_point >= 0x80 && code_point < 0xA0) ||
      (code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) {
    char name[16];
    std::snprintf(name, sizeof name, "U+%04X", unsigned(code_point));
    return name;
  }
  std::string quoted = "'";
  utf8::append(char32_t(code_point), quoted);
  return quoted + "'";
}

// One pass over the text, llama.cpp's grammar parser's structure: rule, alternatives, sequence,
// each element followed by the spaces (and, where a rule may go on, newlines) after it.
class GbnfCompiler {
 public:
  explicit GbnfCompiler(std::string_view text) : text_(text) {
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')))
        line_starts_.push_back(i + 1);
  }

  Result<Grammar> compile(std::string_view root_rule) && {
    skip_space(true);
    for (bool first = true; !at_end(); first = false) KIPP_TRY(parse_rule(first));
    const std::pair<const std::string, NamedRule>* undefined = nullptr;  // the first one used
    for (const auto& named : rules_)
      if (!named.second.defined && (!undefined || named.second.first_use < undefined->second.first_use))
        undefined = &named;
    if (undefined)
      return fail(where(undefined->second.first_use), ": rule '", undefined->first, "' is used but never defined");
    const auto root = rules_.find(root_rule);
    if (root == rules_.end()) return fail("no rule named '", root_rule, "'");
    return std::move(builder_).finish(root->second.id);
  }

 private:
  struct NamedRule {
    RuleId id;
    size_t first_use;  // where the name first appears, defined or called
    bool defined = false;
    size_t defined_at = 0;
  };

  // Inside parentheses, where newlines are spaces.
  bool nested() const { return group_depth_ > 0; }
  bool at_end() const { return pos_ >= text_.size(); }
  bool at(char c) const { return !at_end() && text_[pos_] == c; }

  // "line:column", both from 1; columns count code points, as an editor shows them.
  std::string where(size_t offset) const {
    const auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    size_t column = 1;
    for (size_t i = *line; i < offset; ++i) column += (uint8_t(text_[i]) & 0xC0) != 0x80;
    return std::to_string(line - line_starts_.begin() + 1) + ":" + std::to_string(column);
  }

  // What stands at `offset`, for "found ..." in messages.
  std::string describe(size_t offset) const {
    if (offset >= text_.size()) return "the end of the grammar";
    if (text_[offset] == '\n' || text_[offset] == '\r') return "the end of the line";
    const utf8::Step step = utf8::step(text_.substr(offset));
    if (step.kind != utf8::StepKind::complete) return "bytes that are not UTF-8";
    return code_point_name(step.code_point);
  }

  // Names of the rules a rule's groups, classes and repetitions become: the position they come
  // from, so that a message naming one (left recursion) points into the text. '@' cannot appear
  // in a GBNF name, so these never take a name from the grammar.
  std::string generated_name(std::string_view rule, size_t offset) const {
    return std::string(rule) + "@" + where(offset);
  }

  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (!at_end() && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
      } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string_view parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  NamedRule& named_rule(std::string_view name, size_t offset) {
    auto found = rules_.find(name);
    if (found == rules_.end())
      found = rules_.emplace(std::string(name), NamedRule{builder_.declare(name), offset}).first;
    return found->second;
  }

  // name ::= alternatives, ended by a newline or the end of the text.
  Status parse_rule(bool first) {
    const size_t start = pos_;
    const std::string_view name = parse_name();
    if (name.empty()) {
      if (first) return fail(where(start), ": expected a rule name, found ", describe(start));
      return fail(where(start), ": expected a rule name, found ", describe(start),
                  " (a rule goes on to the next line only after '::=' or '|', or inside parentheses)");
    }
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=")
      return fail(where(pos_), ": expected '::=' after the rule name '", name, "', found ", describe(pos_));
    pos_ += 3;
    NamedRule& rule = named_rule(name, start);
    if (rule.defined)
      return fail(where(start), ": rule '", name, "' is defined twice (first at ", where(rule.defined_at), ")");
    rule.defined = true;
    rule.defined_at = start;
    const RuleId id = rule.id;
    skip_space(true);
    KIPP_ASSIGN(std::vector<Sequence> alternatives, parse_alternatives(name));
    if (at('\r')) {
      ++pos_;
      if (at('\n')) ++pos_;
    } else if (at('\n')) {
      ++pos_;
    } else if (!at_end()) {
      return fail(where(pos_), ": expected the end of the line after rule '", name, "', found ", describe(pos_));
    }
    builder_.set_alternatives(id, std::move(alternatives));
    skip_space(true);
    return {};
  }

  Result<std::vector<Sequence>> parse_alternatives(std::string_view rule) {
    std::vector<Sequence> alternatives;
    KIPP_ASSIGN(Sequence first, parse_sequence(rule));
    alternatives.push_back(std::move(first));
    while (at('|')) {
      ++pos_;
      skip_space(true);
      KIPP_ASSIGN(Sequence next, parse_sequence(rule));
      alternatives.push_back(std::move(next));
    }
    return alternatives;
  }

  Result<Sequence> parse_sequence(std::string_view rule) {
    Sequence sequence;
    std::optional<size_t> last_element;  // where the items of the element a postfix applies to start
    while (!at_end()) {
      const size_t start = pos_;
      const char c = text_[pos_];
      if (c == '"') {
        KIPP_ASSIGN(Sequence literal, parse_literal());
        last_element = sequence.size();
        sequence.insert(sequence.end(), literal.begin(), literal.end());
      } else if (c == '[') {
        KIPP_ASSIGN(Item character_class, parse_class(rule));
        last_element = sequence.size();
        sequence.push_back(character_class);
      } else if (c == '.') {
        ++pos_;
        last_element = sequence.size();
        sequence.push_back(GrammarBuilder::call(any_code_point()));
      } else if (is_name_char(c)) {
        const std::string_view name = parse_name();
        last_element = sequence.size();
        sequence.push_back(GrammarBuilder::call(named_rule(name, start).id));
      } else if (c == '(') {
        if (group_depth_ == kMaxGroupDepth)
          return fail(where(start), ": groups nest deeper than ", kMaxGroupDepth, " levels");
        ++pos_;
        skip_space(true);
        ++group_depth_;
        KIPP_ASSIGN(std::vector<Sequence> alternatives, parse_alternatives(rule));
        --group_depth_;
        if (!at(')'))
          return fail(where(pos_), ": expected ')' to close the group opened at ", where(start), ", found ",
                      describe(pos_));
        ++pos_;
        last_element = sequence.size();
        // A group of one alternative is only its sequence; a choice needs a rule of its own.
        if (alternatives.size() == 1) sequence.insert(sequence.end(), alternatives[0].begin(), alternatives[0].end());
        else
          sequence.push_back(GrammarBuilder::call(builder_.add(generated_name(rule, start), std::move(alternatives))));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!last_element) return fail(where(start), ": '", c, "' has nothing before it to repeat");
        uint32_t min = c == '+' ? 1 : 0;
        uint32_t max = c == '?' ? 1 : GrammarBuilder::kUnbounded;
        if (c == '{') {
          KIPP_ASSIGN(auto counts, parse_counts());
          std::tie(min, max) = counts;
        } else {
          ++pos_;
        }
        KIPP_TRY(repeat_last_element(sequence, *last_element, min, max, rule, start));
      } else if (c == '<' || c == '!') {
        return fail(where(start),
                    ": token references ('<...>', '!<...>') are not supported: kipp's grammars "
                    "constrain text, not token ids");
      } else {
        break;
      }
      skip_space(nested());
    }
    return sequence;
  }

  // One character of a literal or class: an escape or a UTF-8 code point.
  Result<uint32_t> parse_char() {
    const size_t start = pos_;
    if (!at('\\')) {
      const utf8::Step step = utf8::step(text_.substr(pos_));
      if (step.kind != utf8::StepKind::complete) return fail(where(start), ": the grammar is not valid UTF-8 here");
      pos_ += step.length;
      return uint32_t(step.code_point);
    }
    ++pos_;
    if (at_end()) return fail(where(start), ": expected an escaped character after '\\', found the end of the grammar");
    const char escape = text_[pos_];
    ++pos_;
    switch (escape) {
      case 'x': return parse_hex(start, 2);
      case 'u': return parse_hex(start, 4);
      case 'U': return parse_hex(start, 8);
      case 'n': return uint32_t('\n');
      case 'r': return uint32_t('\r');
      case 't': return uint32_t('\t');
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-': return uint32_t(uint8_t(escape));
      default:
        return fail(where(start), ": unknown escape '\\' followed by ", describe(start + 1),
                    " (GBNF has \\n \\r \\t \\\\ \\\" \\[ \\] \\- \\xHH \\uHHHH \\UHHHHHHHH)");
    }
  }

  // `digits` hex digits after an escape that starts at `start`.
  Result<uint32_t> parse_hex(size_t start, int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const std::optional<uint32_t> digit = at_end() ? std::nullopt : hex_value(text_[pos_]);
      if (!digit)
        return fail(where(start), ": expected ", digits, " hex digits after '", text_.substr(start, 2), "', found ",
                    describe(pos_));
      value = value << 4 | *digit;
      ++pos_;
    }
    if (value > 0x10FFFF)
      return fail(where(start), ": ", text_.substr(start, pos_ - start), " is above U+10FFFF, the last code point");
    return value;
  }

  // "text": its code points as UTF-8 bytes.
  Result<Sequence> parse_literal() {
    const size_t open = pos_++;
    std::string bytes;
    while (!at('"')) {
      if (at_end()) return fail(where(open), ": expected '\"' to close the string literal that starts here");
      const size_t start = pos_;
      KIPP_ASSIGN(const uint32_t code_point, parse_char());
      if (code_point >= 0xD800 && code_point <= 0xDFFF)
        return fail(where(start), ": ", code_point_name(code_point),
                    " is a surrogate, which UTF-8 text cannot contain");
      utf8::append(char32_t(code_point), bytes);
    }
    ++pos_;
    return builder_.literal(bytes);
  }

  // [chars and ranges], or [^...] for every other code point. As in llama.cpp, a ']' right
  // after '[' closes the class (an empty class matches nothing), and '-' before ']' is itself.
  Result<Item> parse_class(std::string_view rule) {
    const size_t open = pos_++;
    const bool negated = at('^');
    if (negated) ++pos_;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive
    while (!at(']')) {
      if (at_end()) return fail(where(open), ": expected ']' to close the character class that starts here");
      const size_t start = pos_;
      KIPP_ASSIGN(const uint32_t first, parse_char());
      uint32_t last = first;
      if (at('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        KIPP_ASSIGN(last, parse_char());
        if (last < first)
          return fail(where(start), ": the range ", code_point_name(first), "-", code_point_name(last),
                      " ends before it starts");
      }
      ranges.push_back({first, last});
    }
    ++pos_;
    // Classes of ASCII characters are one byte each: a byte set, no rule needed.
    if (!negated && std::all_of(ranges.begin(), ranges.end(), [](const auto& r) { return r.second < 0x80; })) {
      ByteSet set;
      for (const auto& [first, last] : ranges) set.add_range(uint8_t(first), uint8_t(last));
      return builder_.bytes(set);
    }
    return GrammarBuilder::call(builder_.utf8_class(generated_name(rule, open), std::move(ranges), negated));
  }

  RuleId any_code_point() {
    if (!any_code_point_) any_code_point_ = builder_.utf8_class(".", {}, true);
    return *any_code_point_;
  }

  // A decimal count, if digits stand here.
  Result<std::optional<uint32_t>> parse_count() {
    const size_t start = pos_;
    uint64_t value = 0;
    while (!at_end() && is_digit(text_[pos_])) {
      value = std::min<uint64_t>(value * 10 + uint64_t(text_[pos_] - '0'), uint64_t(kMaxGbnfRepetition) + 1);
      ++pos_;
    }
    if (pos_ == start) return std::optional<uint32_t>();
    if (value > kMaxGbnfRepetition)
      return fail(where(start), ": the repetition count ", text_.substr(start, pos_ - start), " is above the limit of ",
                  kMaxGbnfRepetition);
    return std::optional<uint32_t>(uint32_t(value));
  }

  // {m}, {m,}, {m,n} or {,n}, from the '{'.
  Result<std::pair<uint32_t, uint32_t>> parse_counts() {
    const size_t open = pos_++;
    skip_space(nested());
    KIPP_ASSIGN(const std::optional<uint32_t> min, parse_count());
    skip_space(nested());
    std::optional<uint32_t> max = min;
    if (at(',')) {
      ++pos_;
      skip_space(nested());
      KIPP_ASSIGN(max, parse_count());
      skip_space(nested());
    } else if (!min) {
      return fail(where(pos_), ": expected a count or ',' in the repetition opened at ", where(open), ", found ",
                  describe(pos_));
    }
    if (!at('}'))
      return fail(where(pos_), ": expected '}' to close the repetition opened at ", where(open), ", found ",
                  describe(pos_));
    ++pos_;
    if (min && max && *min > *max)
      return fail(where(open), ": the repetition ", text_.substr(open, pos_ - open),
                  " has its minimum above its maximum");
    return std::pair(min.value_or(0), max.value_or(GrammarBuilder::kUnbounded));
  }

  // Replaces the element that starts at `element` in `sequence` by its repetition.
  Status repeat_last_element(Sequence& sequence, size_t element, uint32_t min, uint32_t max, std::string_view rule,
                             size_t start) {
    // Each optional copy costs a rule of a few items: refuse before building more than the
    // grammar may hold (check() would refuse it afterwards, having built it).
    const uint64_t optional_copies = max == GrammarBuilder::kUnbounded ? 1 : max - min;
    repetition_items_ += min + 4 * optional_copies;
    if (repetition_items_ > kMaxGrammarItems)
      return fail(where(start), ": the repetitions add up to more than the limit of ", kMaxGrammarItems,
                  " grammar items");
    Sequence repeated(sequence.begin() + ptrdiff_t(element), sequence.end());
    sequence.resize(element);
    const std::string name = generated_name(rule, start);
    const Item item = repeated.size() == 1
                          ? repeated[0]
                          : GrammarBuilder::call(builder_.add(name + "-element", {std::move(repeated)}));
    sequence.push_back(GrammarBuilder::call(builder_.repeat(name, item, min, max)));
    return {};
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_{0};
  GrammarBuilder builder_;
  std::map<std::string, NamedRule, std::less<>> rules_;
  std::optional<RuleId> any_code_point_;
  uint64_t repetition_items_ = 0;
  // Groups are parsed by recursion: their depth is bounded so that no text can exhaust the stack.
  static constexpr size_t kMaxGroupDepth = 256;
  size_t group_depth_ = 0;
};

}  // namespace

Result<Grammar> compile_gbnf(std::string_view text, std::string_view root_rule) {
  return GbnfCompiler(text).compile(root_rule);
}

}  // namespace kipp::grammar
