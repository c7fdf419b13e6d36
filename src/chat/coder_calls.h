// Qwen3-Coder's tool calls: the XML form its chat template teaches, in place of the JSON object
// the other Qwen3 checkpoints write. Between the same <tool_call> and </tool_call> added tokens a
// call reads
//   \n<function=NAME>\n<parameter=ARG>\nVALUE\n</parameter>\n ... </function>\n
// VALUE is raw text: a string as it is, any other value as the template prints it (objects and
// arrays as JSON, numbers and booleans through Python's str()). Reading a value back needs the
// parameter's type from the tool's schema (read_coder_call, below).
//
// The template is Qwen3-Coder-30B-A3B-Instruct's chat_template.jinja at b2cff646 (6,211 bytes,
// SHA-256 5a38bfa0…); docs/MODELS.md says where that text was found and verified.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_messages.h"
#include "util/error.h"

namespace kipp {

// The template's tools section, appended after the system text: "\n\n# Tools", each tool as a
// <function> element (name, description, parameters with their names, types, descriptions and
// other keys, then the tool's other keys), and the instructions ending in </IMPORTANT>.
void append_coder_tools(std::string& out, const std::vector<nlohmann::ordered_json>& tools);

// One call of an assistant turn, as the template re-renders it: "\n<tool_call>\n<function=NAME>\n",
// a <parameter> block per argument in the arguments' order, "</function>\n</tool_call>". The
// arguments must be a JSON object (the template iterates its members).
Status append_coder_call(std::string& out, const ChatToolCall& call);

// A call's text between its tags, read into its name and arguments (json.dumps of the object, in
// the order written), or nullopt when it is not of the form above. One newline is taken from each
// end of a value, as the template puts them there. A value ends at its </parameter>, and also,
// when that is missing, where the next <parameter= or the </function> begins; a missing
// </function> at the end is tolerated. A value whose types are all JSON ones (no string) ends
// instead at the first newline and </parameter> when the text up to there reads as JSON, so that
// its strings may hold those tags. Each value is converted by its parameter's type in the
// offered tool's schema (`tools`; a function not offered reads as one without a schema):
//   - "null" or "None" is null where the types allow null;
//   - true/false (also True/False, as the template prints booleans) where boolean is allowed;
//   - a JSON integer, number, object or array where that type is allowed;
//   - otherwise a string where strings are allowed;
//   - a parameter whose schema names no type: the JSON value the text spells, else the text;
//   - a value that fits none of its types stays the text, for the caller's validation to refuse.
// Two blocks for one parameter make the call unreadable.
std::optional<ChatToolCall> read_coder_call(std::string_view body, const std::vector<ChatTool>& tools);

// The JSON types a parameter's schema allows, which decide how its value reads: its `type` (a name
// or a list of names), else those of the schema a local $ref leads to (in `root`, the tool's
// parameters), of its anyOf / oneOf / allOf branches, or of its enum or const values; empty when
// it names none.
std::set<std::string> parameter_types(const nlohmann::ordered_json& schema, const nlohmann::ordered_json& root);

}  // namespace kipp
