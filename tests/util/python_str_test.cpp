// Python's str() and str.strip() as chat templates print them (the figures are Python 3's own
// output for the same values).
#include "util/python_str.h"

#include <gtest/gtest.h>

namespace kipp {
namespace {

using Json = nlohmann::ordered_json;

TEST(PythonStr, ScalarsPrintAsPythonPrintsThem) {
  EXPECT_EQ(python_str(Json("as is \n")), "as is \n");
  EXPECT_EQ(python_str(Json(true)), "True");
  EXPECT_EQ(python_str(Json(nullptr)), "None");
  EXPECT_EQ(python_str(Json(-12)), "-12");
  EXPECT_EQ(python_str(Json::parse("18446744073709551615")), "18446744073709551615");
  EXPECT_EQ(python_str(Json(2.0)), "2.0");
  EXPECT_EQ(python_str(Json(1e-05)), "1e-05");
  EXPECT_EQ(python_str(Json(1e16)), "1e+16");
}

TEST(PythonStr, ContainersPrintTheirRepr) {
  EXPECT_EQ(python_str(Json::parse(R"(["string", "null"])")), "['string', 'null']");
  EXPECT_EQ(python_str(Json::parse(R"({"a": [true, null, 1.5], "it's": "say \"hi\""})")),
            R"({'a': [True, None, 1.5], "it's": 'say "hi"'})");
  EXPECT_EQ(python_str(Json::parse(R"(["both ' and \"", "tab\there", "back\\slash", "\u00a0nbsp", "ü"])")),
            R"(['both \' and "', 'tab\there', 'back\\slash', '\xa0nbsp', 'ü'])");
}

TEST(PythonStr, StripRemovesWhatIsspaceHolds) {
  EXPECT_EQ(python_strip(" \t\n\x0b\x0c\r\x1c\x1f text \n"), "text");
  EXPECT_EQ(python_strip("\xC2\xA0\xE3\x80\x80wide\xE2\x80\xA8"), "wide");  // U+00A0, U+3000, U+2028
  EXPECT_EQ(python_strip("\xE2\x80\x8Bzero width\xE2\x80\x8B"),
            "\xE2\x80\x8Bzero width\xE2\x80\x8B");  // U+200B is not space
  EXPECT_EQ(python_strip("   "), "");
  EXPECT_EQ(python_strip(""), "");
}

}  // namespace
}  // namespace kipp
