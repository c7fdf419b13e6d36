// Only the tail can be unfinished: everything before the last incomplete step is emitted.
#include "tokenizer/stream_decoder.h"

#include "util/utf8.h"

namespace kipp {

Status StreamDecoder::push(TokenId id, std::string& text) {
  KIPP_TRY(tokenizer_->check_id(id));
  pending_.append(tokenizer_->token_bytes(id));
  size_t complete = 0;
  while (complete < pending_.size()) {
    const utf8::Step step = utf8::step(std::string_view(pending_).substr(complete));
    if (step.kind == utf8::StepKind::incomplete) break;
    complete += step.length;
  }
  utf8::append_lossy(std::string_view(pending_).substr(0, complete), text);
  pending_.erase(0, complete);
  return {};
}

void StreamDecoder::finish(std::string& text) {
  utf8::append_lossy(pending_, text);
  pending_.clear();
}

}  // namespace kipp
