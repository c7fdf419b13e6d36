#include "engine/output_text.h"

namespace kipp {

Result<bool> OutputText::push(uint32_t token, std::string& released, std::vector<AddedTokenMark>* marks) {
  piece_.clear();
  KIPP_TRY(decoder_.push(token, piece_));
  // An added token's text ends the piece (the decoder flushes what it held before it).
  const std::string_view spelling = tokenizer_.token_bytes(token);
  if (marks && !tokenizer_.is_normal(token) && piece_.ends_with(spelling))
    marks->push_back({decoded_bytes_ + piece_.size() - spelling.size(), token});
  decoded_bytes_ += piece_.size();
  return stops_.push(piece_, released);
}

bool OutputText::finish(std::string& released) {
  piece_.clear();
  decoder_.finish(piece_);
  if (stops_.push(piece_, released)) return true;
  stops_.finish(released);
  return false;
}

}  // namespace kipp
