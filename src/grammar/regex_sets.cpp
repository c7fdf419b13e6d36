#include "grammar/regex_sets.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace kipp::grammar::pattern {
namespace {

// --- Unicode properties from utf8proc's data. ---

// The code points of each utf8proc general category (indexed by utf8proc_category_t).
const std::array<CodePointRanges, 30>& category_sets() {
  static const std::array<CodePointRanges, 30> sets = [] {
    std::array<CodePointRanges, 30> by_category;
    for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
      CodePointRanges& set = by_category[size_t(utf8proc_category(utf8proc_int32_t(cp)))];
      if (!set.empty() && set.back().second + 1 == cp) set.back().second = cp;
      else set.push_back({cp, cp});
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
constexpr uint32_t kPunctuation = category_bit(UTF8PROC_CATEGORY_PC) | category_bit(UTF8PROC_CATEGORY_PD) |
                                  category_bit(UTF8PROC_CATEGORY_PS) | category_bit(UTF8PROC_CATEGORY_PE) |
                                  category_bit(UTF8PROC_CATEGORY_PI) | category_bit(UTF8PROC_CATEGORY_PF) |
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

}  // namespace

CodePointRanges normalized(CodePointRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  CodePointRanges merged;
  for (const auto& [first, last] : ranges) {
    if (first > last || first > kMaxCodePoint) continue;
    const uint32_t end = std::min(last, kMaxCodePoint);
    if (!merged.empty() && first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, end);
    else merged.push_back({first, end});
  }
  CodePointRanges scalar;
  for (const auto& [first, last] : merged) {
    if (first < 0xD800) scalar.push_back({first, std::min(last, uint32_t(0xD7FF))});
    if (last > 0xDFFF) scalar.push_back({std::max(first, uint32_t(0xE000)), last});
  }
  return scalar;
}

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
const CodePointRanges& space_set() {
  static const CodePointRanges set = normalized({{0x09, 0x0D},
                                                 {0x20, 0x20},
                                                 {0xA0, 0xA0},
                                                 {0x1680, 0x1680},
                                                 {0x2000, 0x200A},
                                                 {0x2028, 0x2029},
                                                 {0x202F, 0x202F},
                                                 {0x205F, 0x205F},
                                                 {0x3000, 0x3000},
                                                 {0xFEFF, 0xFEFF}});
  return set;
}
const CodePointRanges& dot_set() {
  static const CodePointRanges set = complement(normalized({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}}));
  return set;
}

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

}  // namespace kipp::grammar::pattern
