// python_json_dumps against what CPython 3.11 prints for the same values (json.dumps with
// ensure_ascii=False, and repr of floats): the cases where Python's spelling differs from
// nlohmann's. The chat golden test (tests/chat/golden_jinja2.py) checks whole prompts against
// Python itself.
#include "util/python_json.h"

#include <gtest/gtest.h>

namespace kipp {
namespace {

TEST(PythonJson, FloatsAsPythonReprWritesThem) {
  const std::pair<double, const char*> cases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0, "1.0"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {1234567890123456.0, "1234567890123456.0"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {1.5e-7, "1.5e-07"},
      {123.456, "123.456"},
      {1e22, "1e+22"},
      {-2.5, "-2.5"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {0.1 + 0.2, "0.30000000000000004"},
  };
  for (const auto& [value, expected] : cases) EXPECT_EQ(python_float_repr(value), expected) << value;
}

TEST(PythonJson, DumpsWithPythonSeparatorsEscapesAndKeyOrder) {
  const auto value = nlohmann::ordered_json::parse(
      R"({"z": 1, "a": [1.0, 2, -3, true, null], "s": "caf\u00e9 \"q\" \\ \n\t\u0001\u007f \u2028", "e": {}, "l": []})");
  EXPECT_EQ(
      python_json_dumps(value),
      "{\"z\": 1, \"a\": [1.0, 2, -3, true, null], \"s\": \"caf\xC3\xA9 \\\"q\\\" \\\\ \\n\\t\\u0001\x7f \xE2\x80\xA8\", "
      "\"e\": {}, \"l\": []}");
}

}  // namespace
}  // namespace kipp
