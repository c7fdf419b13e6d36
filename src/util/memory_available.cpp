#include "util/memory_available.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace kipp {
namespace {

std::optional<std::string> read_small_file(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<uint64_t> parse_number(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<uint64_t> meminfo_available(std::string_view meminfo) {
  constexpr std::string_view key = "MemAvailable:";
  const size_t at = meminfo.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const auto kib = parse_number(meminfo.substr(at + key.size()));
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

std::optional<uint64_t> cgroup_room(std::string_view memory_max, std::string_view memory_current) {
  const auto limit = parse_number(memory_max), used = parse_number(memory_current);
  if (!limit || !used) return std::nullopt;  // "max": no limit
  return *limit > *used ? *limit - *used : 0;
}

std::optional<uint64_t> memory_available_bytes() {
  const auto meminfo = read_small_file("/proc/meminfo");
  if (!meminfo) return std::nullopt;
  std::optional<uint64_t> available = meminfo_available(*meminfo);
  if (!available) return std::nullopt;
  const auto max = read_small_file("/sys/fs/cgroup/memory.max");
  const auto current = read_small_file("/sys/fs/cgroup/memory.current");
  if (max && current)
    if (const auto room = cgroup_room(*max, *current); room && *room < *available) available = room;
  return available;
}

}  // namespace kipp
