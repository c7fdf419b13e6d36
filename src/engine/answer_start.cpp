#include "engine/answer_start.h"

namespace kipp {

AnswerStart chat_answer_start(Variant variant, bool enable_thinking) {
  switch (variant) {
    case Variant::instruct: return enable_thinking ? AnswerStart::maybe_think : AnswerStart::at_once;
    case Variant::thinking_2507: return AnswerStart::after_think;
    default: return AnswerStart::at_once;
  }
}

}  // namespace kipp
