#include "chat/reasoning_split.h"

#include <algorithm>

namespace kipp {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

// The length of the longest end of `text` that is a proper start of `tag`.
size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
  for (size_t length = std::min(text.size(), tag.size() - 1); length > 0; --length)
    if (text.substr(text.size() - length) == tag.substr(0, length)) return length;
  return 0;
}

}  // namespace

ReasoningSplitter::ReasoningSplitter(AnswerStart start)
    : state_(start == AnswerStart::at_once       ? State::content
             : start == AnswerStart::after_think ? State::reasoning
                                                 : State::opening),
      at_part_start_(start != AnswerStart::at_once) {}

void ReasoningSplitter::push(std::string_view text, std::string& reasoning, std::string& content) {
  held_ += text;
  drain(reasoning, content);
}

void ReasoningSplitter::drain(std::string& reasoning, std::string& content) {
  while (true) {
    if (at_part_start_ && state_ != State::opening) {
      const size_t text_start = held_.find_first_not_of('\n');
      held_.erase(0, text_start == std::string::npos ? held_.size() : text_start);
      if (held_.empty()) return;
      at_part_start_ = false;
    }
    switch (state_) {
      case State::opening:
        if (held_.size() < kOpen.size() && kOpen.substr(0, held_.size()) == held_) return;  // could still open
        if (held_.compare(0, kOpen.size(), kOpen) == 0) {
          held_.erase(0, kOpen.size());
          state_ = State::reasoning;
        } else {
          state_ = State::content;
          at_part_start_ = false;
        }
        continue;
      case State::reasoning: {
        const size_t close = held_.find(kClose);
        if (close != std::string::npos) {
          const size_t end = held_.find_last_not_of('\n', close == 0 ? std::string::npos : close - 1);
          if (close > 0 && end != std::string::npos) reasoning.append(held_, 0, end + 1);
          held_.erase(0, close + kClose.size());
          state_ = State::content;
          at_part_start_ = true;
          continue;
        }
        // Hold back a possible start of </think> and the newlines before it.
        size_t keep = partial_tag_at_end(held_, kClose);
        while (keep < held_.size() && held_[held_.size() - keep - 1] == '\n') ++keep;
        reasoning.append(held_, 0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::content:
        content += held_;
        held_.clear();
        return;
    }
  }
}

void ReasoningSplitter::finish(std::string& reasoning, std::string& content) {
  if (state_ == State::reasoning) reasoning += held_;
  else content += held_;
  held_.clear();
}

}  // namespace kipp
