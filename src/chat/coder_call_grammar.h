// A forced call (tool_choice "required" or a named function) on Qwen3-Coder: the grammar of the
// call's text between its tags in the XML form of coder_calls.h, which read_coder_call reads back
// into arguments that the function's parameters accept:
//   "\n<function=" NAME ">\n" ( "<parameter=" ARG ">\n" VALUE "\n</parameter>\n" )* "</function>\n"
// one alternative per function offered (or the one named). Parameters come in the order the schema
// lists them, each required one present and each optional one at most once; a schema without
// `properties` (and without additionalProperties false) takes any parameters with raw values.
// VALUE follows the parameter's types (parameter_types):
//   - where strings are allowed, or no type is named, raw text that holds none of the tags a value
//     ends at (</parameter>, <parameter=, </function>), with its minLength and maxLength (up to
//     1000 characters); a string enum or const is its list of texts. Other keywords (pattern,
//     format, longer lengths, and those of the other types) cannot be enforced on raw text:
//     refused when a function asks for strict enforcement, else listed as unenforced;
//   - otherwise the parameter's JSON Schema compiled as for structured output (its $defs and
//     definitions from the parameters' root), in `form`: integers, numbers, booleans, null,
//     objects and arrays as JSON; a boolean or null parameter also as True, False or None, the
//     way the template prints them in earlier calls. A number beyond the double range (1e400),
//     which JSON Schema allows, reads back as text (nlohmann cannot hold it).
// A name that the XML form cannot hold (with '<', '>' or a newline) is refused.
#pragma once

#include <string>
#include <vector>

#include "chat/chat_messages.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "util/error.h"

namespace kipp {

struct CoderForcedCall {
  grammar::Grammar grammar;
  std::vector<grammar::Unenforced> unenforced;  // keywords left out, as JSON pointers into the tools' parameters
};

Result<CoderForcedCall> coder_forced_call(const std::vector<ChatTool>& tools, const std::string& only,
                                          grammar::JsonForm form);

}  // namespace kipp
