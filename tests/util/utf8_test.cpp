// util/utf8 against the Unicode Standard itself: Table 3-7 (the well-formed byte sequences) for
// stepping and validation, every scalar value for encoding and decoding, and Table 3-8 (the
// U+FFFD substitution of maximal subparts) for the lossy conversion.
#include "util/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace kipp {
namespace {

uint32_t encoded_length(char32_t code_point) {
  return code_point < 0x80 ? 1 : code_point < 0x800 ? 2 : code_point < 0x10000 ? 3 : 4;
}

bool is_surrogate(char32_t code_point) { return code_point >= 0xD800 && code_point <= 0xDFFF; }

TEST(Utf8, EveryScalarValueEncodesAndDecodesToItself) {
  for (char32_t code_point = 0; code_point <= 0x10FFFF; ++code_point) {
    if (is_surrogate(code_point)) continue;
    std::string bytes;
    utf8::append(code_point, bytes);
    ASSERT_EQ(bytes.size(), encoded_length(code_point)) << std::hex << uint32_t(code_point);
    const utf8::Step one = utf8::step(bytes);
    ASSERT_EQ(one.kind, utf8::StepKind::complete) << std::hex << uint32_t(code_point);
    ASSERT_EQ(one.length, bytes.size());
    ASSERT_EQ(one.code_point, code_point);
    ASSERT_TRUE(utf8::validate(bytes).ok());
    ASSERT_EQ(utf8::code_points(bytes), std::vector<char32_t>{code_point});
  }
}

TEST(Utf8, SequencesOutsideTable3_7AreInvalid) {
  struct Case {
    std::string bytes;
    uint32_t ill_formed_length;  // the maximal subpart the step reports
  };
  const Case cases[] = {
      {"\x80", 1},      // a continuation byte with no lead
      {"\xC0\xAF", 1},  // C0 and C1 only begin overlong forms
      {"\xC1\xBF", 1},
      {"\xE0\x80\xAF", 1},      // overlong three-byte form: after E0 the second byte is A0..BF
      {"\xED\xA0\x80", 1},      // U+D800, a surrogate: after ED the second byte is 80..9F
      {"\xF0\x8F\xBF\xBF", 1},  // overlong four-byte form
      {"\xF4\x90\x80\x80", 1},  // above U+10FFFF
      {"\xF5\x80\x80\x80", 1},  // F5..FF never begin a character
      {"\xFF", 1},
      {"\xE2\x28\xA1", 1},      // a lead byte followed by ASCII: the lead alone is the subpart
      {"\xF0\x9F\x98\x28", 3},  // three good bytes, then ASCII where a continuation belongs
  };
  for (const Case& c : cases) {
    const utf8::Step one = utf8::step(c.bytes);
    EXPECT_EQ(one.kind, utf8::StepKind::invalid) << testing::PrintToString(c.bytes);
    EXPECT_EQ(one.length, c.ill_formed_length) << testing::PrintToString(c.bytes);
    EXPECT_FALSE(utf8::validate(c.bytes).ok());
  }
}

TEST(Utf8, ATruncatedCharacterIsIncompleteAndValidationNamesItsOffset) {
  const utf8::Step one = utf8::step("\xE2\x82");  // the first two bytes of U+20AC
  EXPECT_EQ(one.kind, utf8::StepKind::incomplete);
  EXPECT_EQ(one.length, 2u);

  const Status tail = utf8::validate("price: 5 \xE2\x82");
  ASSERT_FALSE(tail.ok());
  EXPECT_NE(tail.error().message.find("offset 9"), std::string::npos) << tail.error().message;

  // The fast path skips eight ASCII bytes at a time; the bad byte's offset is still exact.
  const Status middle = utf8::validate("0123456789abcdef\xFFtail");
  ASSERT_FALSE(middle.ok());
  EXPECT_NE(middle.error().message.find("offset 16"), std::string::npos) << middle.error().message;
}

TEST(Utf8, LossyConversionReplacesEachMaximalSubpartAsTable3_8Does) {
  // The Standard's own example (section 3.9, Table 3-8): a, three replacements, b, one, c, two, d.
  const std::string bytes = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string replacement = "\xEF\xBF\xBD";
  std::string out;
  utf8::append_lossy(bytes, out);
  EXPECT_EQ(out,
            "a" + replacement + replacement + replacement + "b" + replacement + "c" + replacement + replacement + "d");

  std::string valid;
  utf8::append_lossy("na\xC3\xAFve \xF0\x9F\x98\x80", valid);  // well-formed text passes unchanged
  EXPECT_EQ(valid, "na\xC3\xAFve \xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace kipp
