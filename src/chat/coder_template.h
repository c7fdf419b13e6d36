// Qwen3-Coder's chat template, natively (chat_template.cpp calls it for the coder variant). It
// differs from the other Qwen3 templates in every place tools touch, and it never thinks:
//   - with tools, the system turn holds the first system message (or, without one, "You are Qwen,
//     a helpful AI assistant that can interact with a computer to solve tasks."), then the tools
//     in XML and the call instructions (coder_calls.h);
//   - an assistant turn with calls prints its content stripped, between newlines, when any is
//     left, then each call in XML; other turns print as given;
//   - tool results are <tool_response> blocks, each ending in a newline, consecutive ones in one
//     user turn; a tool message right after the leading system message opens no user turn (the
//     template checks only for a previous message);
//   - the generation prompt is <|im_start|>assistant\n.
#pragma once

#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "util/error.h"

namespace kipp {

Result<std::string> render_coder_chat(const std::vector<ChatMessage>& messages, const ChatOptions& options);

}  // namespace kipp
