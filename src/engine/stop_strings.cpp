#include "engine/stop_strings.h"

#include <algorithm>

namespace kipp {

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (std::string& stop : stops)
    if (!stop.empty()) stops_.push_back(std::move(stop));
}

bool StopStrings::push(std::string_view piece, std::string& released) {
  held_.append(piece);
  // The earliest stop string in the held text wins; among those starting at the same place, the
  // shortest (it completes first).
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at != std::string::npos && (at < first || (at == first && stop.size() < matched_.size()))) {
      first = at;
      matched_ = stop;
    }
  }
  if (first != std::string::npos) {
    released.append(held_, 0, first);
    held_.clear();
    return true;
  }
  // Keep the longest tail of the held text that begins some stop string.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    for (size_t length = std::min(stop.size() - 1, held_.size()); length > keep; --length) {
      if (std::string_view(held_).substr(held_.size() - length) == std::string_view(stop).substr(0, length)) {
        keep = length;
        break;
      }
    }
  }
  released.append(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return false;
}

void StopStrings::finish(std::string& released) {
  released += held_;
  held_.clear();
}

}  // namespace kipp
