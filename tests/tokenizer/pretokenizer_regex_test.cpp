// Proof that the hand-written pre-tokenizer is the split regex: PCRE2 (UTF + UCP) runs the
// pattern from tokenizer.json with \p{L}, \p{N} and \s spelled out as the code point sets Kipp's
// CharTable holds, over a large seeded random corpus and the real text in this repository, and
// every piece must agree. (That the sets equal the reference's is the golden test's sweep.)
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/char_table.h"
#include "tokenizer/pretokenizer.h"
#include "util/utf8.h"

namespace kipp {
namespace {

// "\x{41}-\x{5a}\x{61}-\x{7a}..." for every code point of one class (surrogates excluded).
std::string class_ranges(CharClass wanted) {
  const CharTable& table = CharTable::get();
  std::string out;
  char buffer[40];
  for (char32_t first = 0; first < CharTable::kCodePoints;) {
    if ((first >= 0xD800 && first <= 0xDFFF) || table.char_class(first) != wanted) {
      ++first;
      continue;
    }
    char32_t last = first;
    while (last + 1 < CharTable::kCodePoints && !(last + 1 >= 0xD800 && last + 1 <= 0xDFFF) &&
           table.char_class(last + 1) == wanted)
      ++last;
    std::snprintf(buffer, sizeof buffer, "\\x{%x}-\\x{%x}", unsigned(first), unsigned(last));
    out += buffer;
    first = last + 1;
  }
  return out;
}

class SplitRegex {
 public:
  SplitRegex() {
    const std::string L = class_ranges(CharClass::letter), N = class_ranges(CharClass::number),
                      S = class_ranges(CharClass::whitespace);
    // The tokenizer.json pattern with \p{L} -> [L], \p{N} -> [N], \s -> [S], \S -> [^S].
    const std::string pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n" + L + N + "]?[" + L + "]+|[" + N + "]| ?[^" +
                                S + L + N + "]+[\\r\\n]*|[" + S + "]*[\\r\\n]+|[" + S + "]+(?![^" + S + "])|[" + S +
                                "]+";
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &error,
                          &error_offset, nullptr);
    if (code_) {
      pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
      match_ = pcre2_match_data_create_from_pattern(code_, nullptr);
    } else {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      compile_error_ = reinterpret_cast<const char*>(message);
    }
  }
  ~SplitRegex() {
    pcre2_match_data_free(match_);
    pcre2_code_free(code_);
  }
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  const std::string& compile_error() const { return compile_error_; }

  // Matches and the unmatched gaps between them, as the reference's "Isolated" split keeps both.
  std::vector<std::string_view> split(std::string_view text) {
    std::vector<std::string_view> pieces;
    size_t pos = 0;
    while (pos < text.size()) {
      const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos, PCRE2_NO_UTF_CHECK,
                                 match_, nullptr);
      if (rc < 0) break;
      const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match_);
      if (span[0] > pos) pieces.push_back(text.substr(pos, span[0] - pos));
      pieces.push_back(text.substr(span[0], span[1] - span[0]));
      pos = span[1];
    }
    if (pos < text.size()) pieces.push_back(text.substr(pos));
    return pieces;
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_match_data* match_ = nullptr;
  std::string compile_error_;
};

std::string escaped(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    char buffer[8];
    if (c >= 0x20 && c < 0x7F && c != '\\') out += char(c);
    else {
      std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
      out += buffer;
    }
  }
  return out;
}

// Compares both splits; returns false (after reporting) at the first difference.
bool same_split(SplitRegex& regex, std::string_view text) {
  const std::vector<std::string_view> expected = regex.split(text);
  std::vector<std::string_view> got;
  pretokenize(text, got);
  if (expected == got) return true;
  size_t at = 0;
  while (at < expected.size() && at < got.size() && expected[at] == got[at]) ++at;
  ADD_FAILURE() << "text \"" << escaped(text.substr(0, 300)) << "\": piece " << at << " is \""
                << (at < got.size() ? escaped(got[at]) : "(none)") << "\", PCRE2 says \""
                << (at < expected.size() ? escaped(expected[at]) : "(none)") << "\"";
  return false;
}

// Characters chosen to sit on every boundary of the pattern.
std::vector<char32_t> interesting_alphabet() {
  std::vector<char32_t> chars = {
      'a',    'Z',     's',    'S',      't',    'T',    'r',     'R',     'e',     'E',     'v',     'V',
      'm',    'M',     'l',    'L',      'd',    'D',    'k',     0x17F,   0x212A,  '\'',    0x2019,  '0',
      '9',    0x663,   0x96A,  0x2460,   0xBD,   ' ',    ' ',     ' ',     '\t',    '\n',    '\r',    0x0B,
      0x0C,   0x85,    0xA0,   0x1680,   0x2000, 0x200B, 0x2028,  0x2029,  0x202F,  0x3000,  0xFEFF,  0x180E,
      '!',    '.',     ',',    '-',      '_',    '"',    '(',     '<',     '|',     '>',     0x301,   0x316,
      0x4E2D, 0x3042,  0xAC00, 0x627,    0x5D0,  0x915,  0x94D,   0xE01,   0x436,   0x3B1,   0x1F600, 0x200D,
      0xFE0F, 0x1F1E9, 0xE000, 0x10FFFD, 0x378,  0x1C89, 0x2EBF0, 0x10D40, 0x1E5F1, 0x16D40,
  };
  return chars;
}

TEST(PretokenizerRegex, PatternCompiles) {
  SplitRegex regex;
  EXPECT_EQ(regex.compile_error(), "");
}

TEST(PretokenizerRegex, EqualsPcre2OnRandomText) {
  SplitRegex regex;
  ASSERT_EQ(regex.compile_error(), "");
  std::mt19937 random(20240611);
  const std::vector<char32_t> alphabet = interesting_alphabet();
  int failures = 0;
  for (int trial = 0; trial < 200000 && failures < 5; ++trial) {
    std::string text;
    const int length = 1 + int(random() % 24);
    for (int i = 0; i < length; ++i) {
      const uint32_t roll = random() % 16;
      char32_t c = 0;
      if (roll == 0) {
        do c = random() % 0x110000;
        while (c >= 0xD800 && c <= 0xDFFF);  // anywhere in the code space
      } else if (roll == 1) {
        c = 0x80 + random() % 0x2F80;  // the busy part of the BMP
      } else {
        c = alphabet[random() % alphabet.size()];
      }
      utf8::append(c, text);
    }
    if (!same_split(regex, text)) ++failures;
  }
  EXPECT_EQ(failures, 0);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

TEST(PretokenizerRegex, EqualsPcre2OnRealText) {
  SplitRegex regex;
  ASSERT_EQ(regex.compile_error(), "");
  // This repository's sources and docs, and the real tokenizer files (byte-level vocabulary,
  // chat template): prose, code, and many scripts.
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"src", "docs", "tests"})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(KIPP_SOURCE_DIR) + "/" + dir))
      if (entry.is_regular_file() && entry.file_size() < (4 << 20)) files.push_back(entry.path());
  files.push_back(std::string(KIPP_TOKENIZER_DIR) + "/tokenizer.json");
  files.push_back(std::string(KIPP_TOKENIZER_DIR) + "/tokenizer_config.json");
  size_t bytes = 0;
  for (const auto& path : files) {
    const std::string text = read_file(path);
    if (!utf8::validate(text).ok()) continue;
    bytes += text.size();
    EXPECT_TRUE(same_split(regex, text)) << path;
  }
  std::printf("compared %zu files, %zu bytes\n", files.size(), bytes);
  EXPECT_GT(bytes, size_t(10) << 20);
}

}  // namespace
}  // namespace kipp
