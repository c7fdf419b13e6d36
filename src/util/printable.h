// Text taken from an untrusted file, made safe to put in an error line or a listing: control
// bytes (a newline, a terminal escape) become '?', and long text is cut.
#pragma once

#include <string>
#include <string_view>

namespace kipp {

inline std::string printable(std::string_view text, size_t max_bytes = 64) {
  std::string out(text.substr(0, max_bytes));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text.size() > max_bytes ? out + "..." : out;
}

}  // namespace kipp
