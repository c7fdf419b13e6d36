#include "cli/id_list.h"

#include <charconv>

namespace kipp::cli {

Result<std::vector<uint32_t>> parse_id_list(std::string_view list) {
  std::vector<uint32_t> ids;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view item = list.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value > UINT32_MAX)
      return fail("--ids: \"", item, "\" is not a token id (expected comma-separated non-negative integers)");
    ids.push_back(uint32_t(value));
    start = end + 1;
  }
  return ids;
}

}  // namespace kipp::cli
