// Splits the streamed answer of a thinking checkpoint into its reasoning (between <think> and
// </think>) and its content (after </think>), the way the OpenAI-compatible servers return them
// (`reasoning_content` and `content`). Text arrives in pieces; what could still be part of a tag
// is held back, so the pieces of each part joined equal the split of the whole answer. The
// newlines the chat template puts around the reasoning are not part of either.
#pragma once

#include <string>
#include <string_view>

#include "engine/answer_start.h"

namespace kipp {

class ReasoningSplitter {
 public:
  // at_once: everything is content; after_think: it starts as reasoning; maybe_think: it is
  // reasoning only when it opens with <think>.
  explicit ReasoningSplitter(AnswerStart start);

  // Appends what became final to `reasoning` and `content`.
  void push(std::string_view text, std::string& reasoning, std::string& content);
  // At the end of the answer: appends what was held back.
  void finish(std::string& reasoning, std::string& content);

 private:
  enum class State { opening, reasoning, content };
  void drain(std::string& reasoning, std::string& content);

  State state_;
  bool at_part_start_ = true;  // drop the template's newlines at the start of a part
  std::string held_;
};

}  // namespace kipp
