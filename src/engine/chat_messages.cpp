#include "engine/chat_messages.h"

#include <string>

namespace kipp {

Result<std::vector<ChatMessage>> parse_chat_messages(const nlohmann::json& messages) {
  if (!messages.is_array()) return fail("messages: expected an array of {\"role\", \"content\"} objects");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return fail(where, ": expected an object with role and content");
    ChatMessage message;
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return fail(where, ": role must be a string");
    message.role = role->get<std::string>();
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) return fail(where, ": tool_calls are not supported");
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) return fail(where, ": content is missing");
    if (!content->is_string())
      return fail(where, ": content must be a string (arrays of content parts are not supported)");
    message.content = content->get<std::string>();
    if (const auto reasoning = m.find("reasoning_content"); reasoning != m.end() && !reasoning->is_null()) {
      if (!reasoning->is_string()) return fail(where, ": reasoning_content must be a string");
      message.reasoning_content = reasoning->get<std::string>();
    }
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace kipp
