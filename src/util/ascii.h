// ASCII case folding, for the names protocols compare case-insensitively (HTTP header names,
// hub paths): bytes outside A-Z, UTF-8 included, pass unchanged.
#pragma once

#include <string>

namespace kipp {

inline std::string ascii_lower(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

}  // namespace kipp
