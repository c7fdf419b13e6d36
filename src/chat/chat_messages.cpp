#include "chat/chat_messages.h"

#include <set>
#include <string>

#include "util/python_json.h"

namespace kipp {
namespace {

using Json = nlohmann::ordered_json;

// A message's content as the template sees it: a string, text parts joined, or "" for null.
Result<std::string> read_content(const Json& m, const std::string& where, const std::string& role) {
  const auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (role == "assistant") return std::string();  // a turn that only calls tools
    return fail(where, ": content is missing");
  }
  if (content->is_string()) return content->get<std::string>();
  if (!content->is_array()) return fail(where, ".content: must be a string or an array of content parts");
  std::string joined;
  for (size_t j = 0; j < content->size(); ++j) {
    const Json& part = (*content)[j];
    const std::string at = where + ".content[" + std::to_string(j) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      return fail(at, ": a content part must be an object with a string type");
    const std::string type = part["type"].get<std::string>();
    if (type != "text")
      return fail(at, ": content parts of type '", type,
                  "' are not supported (only text: these checkpoints read text)");
    if (!part.contains("text") || !part["text"].is_string()) return fail(at, ".text: must be a string");
    if (j > 0) joined += '\n';
    joined += part["text"].get<std::string>();
  }
  return joined;
}

Result<std::vector<ChatToolCall>> read_tool_calls(const Json& calls, const std::string& where) {
  if (!calls.is_array()) return fail(where, ": must be an array");
  std::vector<ChatToolCall> out;
  for (size_t j = 0; j < calls.size(); ++j) {
    const std::string at = where + "[" + std::to_string(j) + "]";
    const Json& call = calls[j];
    if (!call.is_object()) return fail(at, ": must be an object");
    if (call.contains("type") && call["type"] != "function")
      return fail(at, ".type: only \"function\" calls are supported");
    // The template takes `function` when present, else the call itself (a flat {name, arguments}).
    const bool nested = call.contains("function") && !call["function"].is_null();
    const Json& function = nested ? call["function"] : call;
    const std::string prefix = nested ? at + ".function" : at;
    if (!function.is_object()) return fail(prefix, ": must be an object");
    if (!function.contains("name") || !function["name"].is_string()) return fail(prefix, ".name: must be a string");
    if (!function.contains("arguments")) return fail(prefix, ".arguments: is missing");
    const Json& arguments = function["arguments"];
    out.push_back({function["name"].get<std::string>(),
                   arguments.is_string() ? arguments.get<std::string>() : python_json_dumps(arguments)});
  }
  return out;
}

}  // namespace

Result<std::vector<ChatMessage>> parse_chat_messages(const Json& messages) {
  if (!messages.is_array()) return fail("messages: expected an array of {\"role\", \"content\"} objects");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return fail(where, ": expected an object with role and content");
    ChatMessage message;
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return fail(where, ": role must be a string");
    message.role = role->get<std::string>();
    if (message.role == "developer") message.role = "system";
    KIPP_ASSIGN(message.content, read_content(m, where, message.role));
    for (const char* field : {"reasoning_content", "reasoning"}) {
      const auto reasoning = m.find(field);
      if (reasoning == m.end() || reasoning->is_null() || message.reasoning_content) continue;
      if (!reasoning->is_string()) return fail(where, ".", field, ": must be a string");
      message.reasoning_content = reasoning->get<std::string>();
    }
    if (const auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      KIPP_ASSIGN(message.tool_calls, read_tool_calls(*calls, where + ".tool_calls"));
    }
    out.push_back(std::move(message));
  }
  return out;
}

Result<std::vector<ChatTool>> parse_chat_tools(const Json& tools) {
  if (!tools.is_array()) return fail("tools: must be an array");
  std::vector<ChatTool> out;
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const Json& tool = tools[i];
    if (!tool.is_object()) return fail(where, ": must be an object");
    if (!tool.contains("type") || tool["type"] != "function")
      return fail(where, ".type: must be \"function\" (the only kind of tool these checkpoints call)");
    if (!tool.contains("function") || !tool["function"].is_object()) return fail(where, ".function: must be an object");
    const Json& function = tool["function"];
    if (!function.contains("name") || !function["name"].is_string() || function["name"].get<std::string>().empty())
      return fail(where, ".function.name: must be a non-empty string");
    ChatTool parsed;
    parsed.name = function["name"].get<std::string>();
    if (!names.insert(parsed.name).second) return fail(where, ".function.name: '", parsed.name, "' is offered twice");
    parsed.parameters = Json::object();
    if (function.contains("parameters") && !function["parameters"].is_null()) {
      if (!function["parameters"].is_object()) return fail(where, ".function.parameters: must be a JSON Schema object");
      parsed.parameters = function["parameters"];
    }
    if (function.contains("strict") && !function["strict"].is_null()) {
      if (!function["strict"].is_boolean()) return fail(where, ".function.strict: must be true or false");
      parsed.strict = function["strict"].get<bool>();
    }
    parsed.declaration = tool;
    out.push_back(std::move(parsed));
  }
  return out;
}

}  // namespace kipp
