// OpenAI-style chat messages (a JSON array of {"role", "content"[, "reasoning_content"]}) read
// into ChatMessage values. What the renderer cannot honour is refused here with the message's
// index and field: non-string content (parts arrays), tool calls, tool messages, unknown roles.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat_template.h"
#include "util/error.h"

namespace kipp {

Result<std::vector<ChatMessage>> parse_chat_messages(const nlohmann::json& messages);

}  // namespace kipp
