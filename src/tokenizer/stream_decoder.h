// Turns generated token ids into text as they arrive. It emits only complete UTF-8 characters:
// a multi-byte character split across tokens is held back until its last byte arrives. Bytes
// that cannot become UTF-8 come out as U+FFFD, exactly as Tokenizer::decode shows them, so the
// pieces joined always equal decode of all the ids.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace kipp {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}

  // Appends to `text` what became complete with this token (possibly nothing).
  Status push(TokenId id, std::string& text);

  // Appends the held-back bytes (an unfinished character shows as U+FFFD) and starts over.
  void finish(std::string& text);

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;  // bytes of an unfinished character at the end of the stream so far
};

}  // namespace kipp
