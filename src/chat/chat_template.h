// Native Qwen3 ChatML rendering: the prompt the checkpoint's chat_template (Jinja, in
// tokenizer_config.json) produces for a conversation, written out in C++ so that no template
// engine runs at serving time. For each chat variant it is byte-identical to the pinned
// checkpoints' published template (the fact sheet's §7) as Python's Jinja renders it with
// transformers' filters; tests/chat compares it with Python's jinja2 and with @huggingface/jinja.
// What it does, per variant:
//   - tools, when there are any, open the prompt with a system turn: the first system message,
//     then the `# Tools` block with one JSON line per tool inside <tools></tools>;
//   - otherwise a first system message opens the prompt; later system and user messages are plain
//     turns;
//   - assistant turns: thinking is parsed out of `<think>…</think>` in the content (or taken from
//     reasoning_content). Only assistant turns after the last user query keep it, rendered as
//     `<think>\n…\n</think>\n\n` (the last turn always gets the block, even empty); earlier turns
//     show their answer alone. Instruct-2507 never thinks: assistant turns are shown as given.
//     Their tool calls follow as `<tool_call>` blocks;
//   - tool messages become <tool_response> blocks, consecutive ones merged into one user turn (a
//     user turn that is only such a block is not a "query" for the thinking rule above);
//   - the generation prompt `<|im_start|>assistant\n`, plus an empty think block for the hybrid
//     checkpoints with enable_thinking false, or an opened `<think>\n` for thinking-2507.
// Qwen3-Coder's template differs wherever tools appear, and it never thinks (coder_template.h).
// Base checkpoints have no template and are refused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "registry/registry.h"
#include "util/error.h"

namespace kipp {

// A call in an assistant turn of the history, as the template prints it.
struct ChatToolCall {
  std::string name;
  std::string arguments;  // as given when a string, else the object as Python's json.dumps writes it
};

struct ChatMessage {
  std::string role;  // system, user, assistant or tool
  std::string content;
  std::optional<std::string> reasoning_content;  // assistant only: thinking given apart
  std::vector<ChatToolCall> tool_calls;          // assistant only
};

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = true;  // hybrid instruct checkpoints only
  // The request's tools as sent, each {"type": "function", "function": {...}}. Empty: no tools block.
  std::vector<nlohmann::ordered_json> tools;
};

Result<std::string> render_chat(Variant variant, const std::vector<ChatMessage>& messages, const ChatOptions& options);

}  // namespace kipp
