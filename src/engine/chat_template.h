// Native Qwen3 ChatML rendering: the prompt the checkpoint's chat_template (Jinja, in
// tokenizer_config.json) produces for a conversation, written out in C++ so that no template
// engine runs at serving time. For each chat variant it is byte-identical to the pinned
// checkpoints' published template (the fact sheet's §7) as Python's Jinja renders it; tests/chat
// compares it with @huggingface/jinja wherever that library's strip agrees with Python's. What it
// does, per variant:
//   - a first system message opens the prompt; later system and user messages are plain turns;
//   - assistant turns: thinking is parsed out of `<think>…</think>` in the content (or taken from
//     reasoning_content). Only assistant turns after the last user message keep it, rendered as
//     `<think>\n…\n</think>\n\n` (the last turn always gets the block, even empty); earlier turns
//     show their answer alone. Instruct-2507 never thinks: assistant turns are shown as given.
//   - the generation prompt `<|im_start|>assistant\n`, plus an empty think block for the hybrid
//     checkpoints with enable_thinking false, or an opened `<think>\n` for thinking-2507.
// Tools, tool calls and tool messages are not supported and are refused, as are base checkpoints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "registry/registry.h"
#include "util/error.h"

namespace kipp {

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
  std::optional<std::string> reasoning_content;  // assistant only: thinking given apart
};

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = true;  // hybrid instruct checkpoints only
};

Result<std::string> render_chat(Variant variant, const std::vector<ChatMessage>& messages, const ChatOptions& options);

}  // namespace kipp
