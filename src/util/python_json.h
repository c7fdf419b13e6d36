// JSON text exactly as Python's json.dumps(value, ensure_ascii=False) writes it, which is what the
// checkpoints' chat templates print through transformers' `tojson` filter (tools, and tool-call
// arguments given as objects). It differs from nlohmann's dump in the ways a prompt can see:
// ", " and ": " separators, floats in Python's repr (1.0, 1e-05, 1e+16), non-ASCII kept as is,
// control characters as \u00XX. Objects keep the order they were read in (ordered_json), as a
// Python dict keeps the client's key order.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kipp {

std::string python_json_dumps(const nlohmann::ordered_json& value);

// A list or dict as Python spells it in both json.dumps and repr(): "[a, b]" and "{k: v, ...}",
// each item and key appended by the caller (the two differ only in how scalars and keys print).
// `value` is an array or an object.
void append_python_container(std::string& out, const nlohmann::ordered_json& value,
                             const std::function<void(std::string&, const nlohmann::ordered_json&)>& item,
                             const std::function<void(std::string&, const std::string&)>& key);

// A string's contents (without the quotes) as json.dumps(ensure_ascii=False) writes them, which
// is also the compact form the JSON Schema grammars accept: \" \\ and the short escapes, other
// control characters as \u00xx, everything else raw.
std::string escape_json_string(std::string_view utf8);

// Python's repr() of a float: the shortest digits that read back to the same double, fixed
// notation for exponents -4 to 15 (always with a fraction: "3.0"), scientific otherwise, with a
// signed exponent of at least two digits ("1e-05", "1.5e+20").
std::string python_float_repr(double value);

}  // namespace kipp
