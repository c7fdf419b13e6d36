// Each alternative of the split regex in the regex's order, with the backtracking each one
// implies worked out by hand (see the comments); tests/tokenizer proves it equal to PCRE2.
#include "tokenizer/pretokenizer.h"

#include "tokenizer/char_table.h"
#include "util/utf8.h"

namespace kipp {
namespace {

struct Char {
  char32_t code_point = 0;
  uint32_t length = 0;  // 0 at the end of the text
  CharClass char_class = CharClass::other;
};

class Cursor {
 public:
  explicit Cursor(std::string_view text)
      : bytes_(reinterpret_cast<const unsigned char*>(text.data())), size_(text.size()), table_(CharTable::get()) {}

  size_t size() const { return size_; }
  unsigned char byte(size_t pos) const { return bytes_[pos]; }

  Char at(size_t pos) const {
    if (pos >= size_) return {};
    Char c;
    c.code_point = utf8::decode_valid(bytes_ + pos, c.length);
    c.char_class = table_.char_class(c.code_point);
    return c;
  }

  // The end of the run of characters of one class starting at `pos`.
  size_t run_end(size_t pos, CharClass char_class) const {
    while (pos < size_) {
      const Char c = at(pos);
      if (c.char_class != char_class) break;
      pos += c.length;
    }
    return pos;
  }

 private:
  const unsigned char* bytes_;
  size_t size_;
  const CharTable& table_;
};

bool is_newline(char32_t code_point) { return code_point == '\r' || code_point == '\n'; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d) after the apostrophe at `pos`: the match length, or 0. Under
// Unicode case folding 's' also matches U+017F LATIN SMALL LETTER LONG S.
size_t contraction_length(const Cursor& cursor, size_t pos) {
  auto lower = [&](size_t at) -> char32_t {
    const Char c = cursor.at(at);
    if (c.code_point == 0x17F) return 's';
    return c.code_point >= 'A' && c.code_point <= 'Z' ? c.code_point + 32 : c.code_point;
  };
  const size_t first = pos + 1;
  if (first >= cursor.size()) return 0;
  const char32_t a = lower(first);
  const size_t a_length = cursor.at(first).length;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 1 + a_length;
  const size_t second = first + a_length;
  if (second >= cursor.size()) return 0;
  const char32_t b = lower(second);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 1 + a_length + 1;
  return 0;
}

}  // namespace

void pretokenize(std::string_view text, std::vector<std::string_view>& pieces) {
  const Cursor cursor(text);
  size_t pos = 0;
  auto emit = [&](size_t end) {
    pieces.push_back(text.substr(pos, end - pos));
    pos = end;
  };
  while (pos < text.size()) {
    const Char first = cursor.at(pos);
    // 1. Contractions.
    if (first.code_point == '\'') {
      if (const size_t length = contraction_length(cursor, pos)) {
        emit(pos + length);
        continue;
      }
    }
    // 2. [^\r\n\p{L}\p{N}]?\p{L}+ : with the optional prefix when a letter follows it, else letters alone.
    if (first.char_class == CharClass::letter) {
      emit(cursor.run_end(pos, CharClass::letter));
      continue;
    }
    if (first.char_class != CharClass::number && !is_newline(first.code_point)) {
      const size_t next = pos + first.length;
      if (cursor.at(next).char_class == CharClass::letter) {
        emit(cursor.run_end(next, CharClass::letter));
        continue;
      }
    }
    // 3. \p{N} : one character.
    if (first.char_class == CharClass::number) {
      emit(pos + first.length);
      continue;
    }
    // 4. ' ?[^\s\p{L}\p{N}]+[\r\n]*' : the space is taken only when an "other" character follows.
    size_t others = pos;
    if (first.code_point == ' ' && cursor.at(pos + 1).char_class == CharClass::other) others = pos + 1;
    if (cursor.at(others).char_class == CharClass::other) {
      size_t end = cursor.run_end(others, CharClass::other);
      while (end < text.size() && (cursor.byte(end) == '\r' || cursor.byte(end) == '\n')) ++end;
      emit(end);
      continue;
    }
    // The first character is whitespace; the remaining alternatives all start with its run.
    const size_t run_end = cursor.run_end(pos, CharClass::whitespace);
    // 5. \s*[\r\n]+ : \s* backs off to the run's last newline, which [\r\n]+ then takes alone.
    size_t last_newline = run_end;
    for (size_t at = pos; at < run_end; ++at)
      if (cursor.byte(at) == '\r' || cursor.byte(at) == '\n') last_newline = at;
    if (last_newline != run_end) {
      emit(last_newline + 1);
      continue;
    }
    // 6. \s+(?!\S) : the whole run at the end of the text, else all of it but its last character.
    if (run_end == text.size()) {
      emit(run_end);
      continue;
    }
    size_t last_start = run_end - 1;
    while ((cursor.byte(last_start) & 0xC0) == 0x80) --last_start;
    if (last_start > pos) {
      emit(last_start);
      continue;
    }
    // 7. \s+ : a single whitespace character before a non-space.
    emit(run_end);
  }
}

}  // namespace kipp
