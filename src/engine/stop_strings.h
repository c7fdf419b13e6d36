// Stop strings over streamed text. Text arrives in pieces (whole UTF-8 characters, from the
// StreamDecoder); a stop string may straddle any number of pieces. What could still turn out to
// be the start of a stop string is held back, everything before it is released, and when a stop
// string appears, the text before it is released and the rest is dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kipp {

class StopStrings {
 public:
  // Empty strings are ignored (they would stop before the first character).
  explicit StopStrings(std::vector<std::string> stops);

  // Takes the next piece of text; appends to `released` what can no longer be part of a stop
  // string. Returns true when a stop string is complete: `released` then ends just before it,
  // and matched() names it. Nothing may be pushed after that.
  bool push(std::string_view piece, std::string& released);

  // At the end of generation (no stop string found): appends what was held back.
  void finish(std::string& released);

  const std::string& matched() const { return matched_; }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
};

}  // namespace kipp
