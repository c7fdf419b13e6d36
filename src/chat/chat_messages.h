// OpenAI-style chat requests read into what the chat template renders: the `messages` array and
// the `tools` array. Objects are read as ordered_json because the template prints tool schemas
// and call arguments with the client's key order, as a Python server would.
//
// Messages: role system, developer (the OpenAI SDKs' system role for newer models: read as
// system), user, assistant or tool. Content is a string, an array of text parts (joined with
// "\n", as vLLM does: the published template itself would print nothing for a non-string
// content), or null for an assistant turn. Image, audio and file parts are refused, naming the
// part. Assistant turns may carry reasoning_content (or `reasoning`) and tool_calls. What cannot
// be read is refused with the message's index and field.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "util/error.h"

namespace kipp {

Result<std::vector<ChatMessage>> parse_chat_messages(const nlohmann::ordered_json& messages);

// One function the client offers.
struct ChatTool {
  std::string name;
  nlohmann::ordered_json parameters;   // its JSON Schema; an empty object when not given
  bool strict = false;                 // function.strict: a forced call enforces the schema exactly or is refused
  nlohmann::ordered_json declaration;  // the tool object as sent, which the template prints
};

// `tools`: an array of {"type": "function", "function": {"name", "description"?, "parameters"?,
// "strict"?}}; names must be unique.
Result<std::vector<ChatTool>> parse_chat_tools(const nlohmann::ordered_json& tools);

}  // namespace kipp
