// OpenAI-style chat messages (a JSON array of {"role", "content"[, "reasoning_content"]}) read
// into ChatMessage values. What cannot be read is refused here with the message's index and
// field: a missing role, content that is not a string (content-part arrays), tool calls. Roles
// are checked by render_chat, which refuses tool messages and unknown roles.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat_template.h"
#include "util/error.h"

namespace kipp {

Result<std::vector<ChatMessage>> parse_chat_messages(const nlohmann::json& messages);

}  // namespace kipp
