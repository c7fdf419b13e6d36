// The text of one generated sequence as it becomes final: token ids through the streaming
// detokenizer, then through the stop-string matcher. The CLI's generator and the server's
// scheduler both release text through it, so their outputs agree byte for byte.
#pragma once

#include <string>
#include <vector>

#include "engine/stop_strings.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

// Where an added token's text sits in a sequence's text (a byte offset from the start), so that a
// reader can tell the <tool_call> token from the same characters spelled by ordinary tokens.
struct AddedTokenMark {
  size_t offset = 0;
  uint32_t id = 0;
};

class OutputText {
 public:
  OutputText(const Tokenizer& tokenizer, std::vector<std::string> stops)
      : tokenizer_(tokenizer), decoder_(tokenizer), stops_(std::move(stops)) {}

  // Appends to `released` what became final with `token`; true when a stop string completed
  // (then nothing more may be pushed). When `token` is an added token, its mark is appended to
  // `marks` (when given): its offset counts from the sequence's first byte, and a stop string may
  // still cut the text before it.
  Result<bool> push(uint32_t token, std::string& released, std::vector<AddedTokenMark>* marks = nullptr);
  // At the end of a sequence not stopped by a stop string: appends what was held back (an
  // unfinished character as U+FFFD); true when that completed a stop string after all.
  bool finish(std::string& released);
  const std::string& matched() const { return stops_.matched(); }

 private:
  const Tokenizer& tokenizer_;
  StreamDecoder decoder_;
  StopStrings stops_;
  std::string piece_;
  size_t decoded_bytes_ = 0;  // decoded so far, held back by the stop strings or not
};

}  // namespace kipp
