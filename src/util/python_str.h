// Python's str() of a value as json.loads would have produced it, and Python's str.strip(): what
// a chat template's `| string`, `~` and `| trim` print under transformers (Jinja calls str() on
// the Python objects the request's JSON became). Strings print as they are, true and false as
// True and False, null as None, integers in decimal, floats in repr() ("1.0", "1e-05"); lists and
// dicts in repr(), with single-quoted strings ("['string', 'null']").
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kipp {

std::string python_str(const nlohmann::ordered_json& value);

// str.strip() with no argument: removes the characters str.isspace() holds true for (ASCII
// whitespace, \x1c-\x1f, and the Unicode spaces and line separators) from both ends. `text` is
// valid UTF-8.
std::string_view python_strip(std::string_view text);

}  // namespace kipp
