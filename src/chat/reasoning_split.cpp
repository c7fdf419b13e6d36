#include "chat/reasoning_split.h"

#include <algorithm>

namespace kipp {

void ReasoningSplitter::push(std::string_view text, std::span<const PartStart> starts, std::string& reasoning,
                             std::string& content) {
  for (const PartStart& start : starts)  // a call's tags, where no extractor took the call out, are text
    if (start.part == PartStart::Part::thought || start.part == PartStart::Part::answer) starts_.push_back(start);
  held_ += text;
  drain(reasoning, content);
}

void ReasoningSplitter::drain(std::string& reasoning, std::string& content) {
  while (!held_.empty() || (!starts_.empty() && starts_.front().offset == held_offset_)) {
    if (!starts_.empty() && starts_.front().offset == held_offset_) {
      const PartStart start = starts_.front();
      if (held_.size() < start.tag_bytes) return;  // the tag's text is still held back upstream
      starts_.pop_front();
      held_.erase(0, start.tag_bytes);
      held_offset_ += start.tag_bytes;
      thought_ = start.part == PartStart::Part::thought;
      at_part_start_ = true;
      newlines_.clear();
      continue;
    }
    const size_t until = starts_.empty() ? held_.size() : std::min(held_.size(), starts_.front().offset - held_offset_);
    release(std::string_view(held_).substr(0, until), reasoning, content);
    held_.erase(0, until);
    held_offset_ += until;
  }
}

void ReasoningSplitter::release(std::string_view text, std::string& reasoning, std::string& content) {
  if (at_part_start_) {
    const size_t text_start = text.find_first_not_of('\n');
    if (text_start == std::string_view::npos) return;
    text.remove_prefix(text_start);
    at_part_start_ = false;
  }
  if (!thought_) {
    content += text;
    return;
  }
  // Hold back the newlines at the end: the template's before </think>, should it follow.
  const size_t end = text.find_last_not_of('\n');
  if (end != std::string_view::npos) {
    reasoning += newlines_;
    newlines_.clear();
    reasoning += text.substr(0, end + 1);
  }
  newlines_ += text.substr(end == std::string_view::npos ? 0 : end + 1);
}

void ReasoningSplitter::finish(std::string& reasoning, std::string& content) {
  starts_.clear();  // starts the text never reached (a stop string cut it before them)
  drain(reasoning, content);
  if (thought_) reasoning += newlines_;
  newlines_.clear();
}

}  // namespace kipp
