#include "chat/chat_template.h"

#include <string_view>

#include "chat/coder_template.h"
#include "util/python_json.h"

namespace kipp {
namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kToolsPreamble =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsInstructions =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

// Python's str.lstrip('\n'), rstrip('\n') and strip('\n'), which the template uses.
std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}
std::string_view strip_newlines(std::string_view s) { return rstrip_newlines(lstrip_newlines(s)); }

bool is_tool_response(std::string_view content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

// The template's index of the last real user query: the last user message that is not a tool
// response wrapped as one, or the last message when there is none.
size_t last_query_index(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;)
    if (messages[i].role == "user" && !is_tool_response(messages[i].content)) return i;
  return messages.size() - 1;
}

// An assistant turn's answer and thinking, as the template splits them.
struct AssistantTurn {
  std::string_view content, reasoning;
};

AssistantTurn split_thinking(const ChatMessage& m) {
  if (m.reasoning_content) return {m.content, *m.reasoning_content};
  const size_t last_close = m.content.rfind(kThinkClose);
  if (last_close == std::string::npos) return {m.content, {}};
  const std::string_view all = m.content;
  // content.split('</think>')[-1].lstrip('\n')
  const std::string_view answer = lstrip_newlines(all.substr(last_close + kThinkClose.size()));
  // content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
  std::string_view before = rstrip_newlines(all.substr(0, all.find(kThinkClose)));
  const size_t last_open = before.rfind(kThinkOpen);
  if (last_open != std::string_view::npos) before = before.substr(last_open + kThinkOpen.size());
  return {answer, lstrip_newlines(before)};
}

Status check_messages(const std::vector<ChatMessage>& messages) {
  if (messages.empty()) return fail("messages: the conversation is empty");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      return fail("messages[", i, "]: role '", m.role, "' is not supported (system, user, assistant or tool)");
    if (m.reasoning_content && m.role != "assistant")
      return fail("messages[", i, "]: reasoning_content is only for assistant messages");
    if (!m.tool_calls.empty() && m.role != "assistant")
      return fail("messages[", i, "]: tool_calls are only for assistant messages");
  }
  return {};
}

}  // namespace

Result<std::string> render_chat(Variant variant, const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  if (variant == Variant::base)
    return fail("this is a base checkpoint: it has no chat template (continue raw text with `kipp generate`)");
  KIPP_TRY(check_messages(messages));
  if (variant == Variant::coder) return render_coder_chat(messages, options);
  const bool keeps_thinking = variant != Variant::instruct_2507;
  std::string out;
  if (!options.tools.empty()) {
    out += "<|im_start|>system\n";
    if (messages[0].role == "system") out += messages[0].content + "\n\n";
    out += kToolsPreamble;
    for (const nlohmann::ordered_json& tool : options.tools) out += "\n" + python_json_dumps(tool);
    out += kToolsInstructions;
  } else if (messages[0].role == "system") {
    out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  }
  const size_t last_query = last_query_index(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      out += "<|im_start|>assistant\n";
      // The answer as the template holds it after taking the thinking out: its emptiness decides
      // whether the first tool call starts on a new line.
      std::string_view answer = m.content;
      if (!keeps_thinking) {
        out += m.content;
      } else {
        const AssistantTurn turn = split_thinking(m);
        answer = turn.content;
        const bool last = i + 1 == messages.size();
        if (i > last_query && (last || !turn.reasoning.empty())) {
          out += "<think>\n";
          out += strip_newlines(turn.reasoning);
          out += "\n</think>\n\n";
          out += lstrip_newlines(turn.content);
        } else {
          out += turn.content;
        }
      }
      for (size_t c = 0; c < m.tool_calls.size(); ++c) {
        if (c > 0 || !answer.empty()) out += "\n";
        out += "<tool_call>\n{\"name\": \"" + m.tool_calls[c].name + "\", \"arguments\": " + m.tool_calls[c].arguments +
               "}\n</tool_call>";
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (variant == Variant::instruct && !options.enable_thinking) out += "<think>\n\n</think>\n\n";
    if (variant == Variant::thinking_2507) out += "<think>\n";
  }
  return out;
}

}  // namespace kipp
