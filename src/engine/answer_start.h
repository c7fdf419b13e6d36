// How a chat answer opens, from how the checkpoint's template ends the prompt. One value for
// everything that follows the answer's layout: the constraint (where the grammar starts), the
// thinking budget (what it counts) and the server's split of reasoning from content.
#pragma once

#include "registry/registry.h"

namespace kipp {

enum class AnswerStart {
  at_once,      // no thinking: instruct-2507, base checkpoints, thinking off, a raw completion
  after_think,  // thinking-2507: the prompt opened <think>, the answer starts inside it
  maybe_think,  // a hybrid checkpoint thinking: the answer opens with <think> itself, or not at all
};

// A chat answer's start for the checkpoint's variant, with thinking on or off where it can be.
AnswerStart chat_answer_start(Variant variant, bool enable_thinking);

}  // namespace kipp
