// Splits the streamed answer of a thinking checkpoint into its reasoning (the think block) and its
// content (the answer proper), the way the OpenAI-compatible servers return them
// (`reasoning_content` and `content`). Where each part begins is the decoder's to say: its
// AnswerLayout follows the <think> and </think> tokens and reports PartStarts with the text, so the
// same characters spelled by ordinary tokens stay text. A call's starts are not the splitter's: where
// no extractor took the calls out, their tags are content. Text arrives in pieces, and a part's start
// may come before its text; the pieces of each part joined equal the split of the whole answer. The
// tags' text and the newlines the chat template puts around the reasoning are part of neither.
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <string_view>

#include "engine/answer_layout.h"

namespace kipp {

class ReasoningSplitter {
 public:
  // `text` continues the answer (content until a part start says otherwise); `starts` are the part
  // starts reported since the last push, their offsets counted from the answer's first byte (the
  // text handed on by a ToolCallExtractor and its starts, where calls are looked for).
  // Appends what became final to `reasoning` and `content`.
  void push(std::string_view text, std::span<const PartStart> starts, std::string& reasoning, std::string& content);
  // At the end of the answer: appends what was held back.
  void finish(std::string& reasoning, std::string& content);

 private:
  void drain(std::string& reasoning, std::string& content);
  void release(std::string_view text, std::string& reasoning, std::string& content);

  std::deque<PartStart> starts_;  // still ahead of the text
  std::string held_;              // text not yet looked at
  size_t held_offset_ = 0;        // where held_ starts in the answer
  bool thought_ = false;          // the text now is reasoning
  bool at_part_start_ = false;    // drop the template's newlines at the start of a part
  std::string newlines_;          // newlines at the reasoning's end so far: the template's, if </think> follows
};

}  // namespace kipp
