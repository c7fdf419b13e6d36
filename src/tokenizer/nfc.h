// NFC normalization as the reference tokenizer applies it (utf8proc's data, with the code points
// of unicode::normalization_parts_since_9_0() treated as plain starters). Text that is already
// in NFC, the usual case, is returned as is without copying.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kipp {

class NfcNormalizer {
 public:
  // `text` must be valid UTF-8. The result views either `text` or this normalizer's buffer,
  // valid until the next call.
  std::string_view normalize(std::string_view text);

 private:
  void append_region(std::string_view region);
  void append_utf8proc_nfc(std::string_view piece);

  std::string normalized_;
  std::vector<int32_t> code_points_;
};

}  // namespace kipp
