#include "engine/output_text.h"

namespace kipp {

Result<bool> OutputText::push(uint32_t token, std::string& released) {
  piece_.clear();
  KIPP_TRY(decoder_.push(token, piece_));
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
