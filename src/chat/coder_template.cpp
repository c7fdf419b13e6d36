#include "chat/coder_template.h"

#include "chat/coder_calls.h"
#include "util/python_str.h"

namespace kipp {

Result<std::string> render_coder_chat(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  std::string out;
  const bool system_first = messages[0].role == "system";
  const bool has_tools = !options.tools.empty();
  if (system_first) out += "<|im_start|>system\n" + messages[0].content;
  else if (has_tools)
    out += "<|im_start|>system\nYou are Qwen, a helpful AI assistant that can interact with a computer to solve tasks.";
  if (has_tools) append_coder_tools(out, options.tools);
  if (system_first || has_tools) out += "<|im_end|>\n";
  const size_t first = system_first ? 1 : 0;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      out += "<|im_start|>assistant";
      const std::string_view content = python_strip(m.content);
      if (!content.empty()) out += "\n" + std::string(content) + "\n";
      for (size_t c = 0; c < m.tool_calls.size(); ++c) {
        const Status call = append_coder_call(out, m.tool_calls[c]);
        if (!call.ok()) return fail("messages[", i, "].tool_calls[", c, "]: ", call.error().message);
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i > first && messages[i - 1].role != "tool") out += "<|im_start|>user\n";
      out += "<tool_response>\n" + m.content + "\n</tool_response>\n";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    } else {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace kipp
