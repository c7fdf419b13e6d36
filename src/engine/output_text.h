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

class OutputText {
 public:
  OutputText(const Tokenizer& tokenizer, std::vector<std::string> stops)
      : decoder_(tokenizer), stops_(std::move(stops)) {}

  // Appends to `released` what became final with `token`; true when a stop string completed
  // (then nothing more may be pushed).
  Result<bool> push(uint32_t token, std::string& released);
  // At the end of a sequence not stopped by a stop string: appends what was held back (an
  // unfinished character as U+FFFD); true when that completed a stop string after all.
  bool finish(std::string& released);
  const std::string& matched() const { return stops_.matched(); }

 private:
  StreamDecoder decoder_;
  StopStrings stops_;
  std::string piece_;
};

}  // namespace kipp
