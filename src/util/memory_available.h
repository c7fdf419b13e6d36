// How much memory this process can fill before the kernel starts evicting pages: MemAvailable
// from /proc/meminfo, lowered to the cgroup's limit (memory.max less memory.current) where one
// is set, as in a container.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kipp {

// nullopt where /proc/meminfo cannot be read (not Linux).
std::optional<uint64_t> memory_available_bytes();

// The parsers, for tests: MemAvailable of a /proc/meminfo text; the room a cgroup v2 memory.max
// and memory.current leave ("max" is no limit).
std::optional<uint64_t> meminfo_available(std::string_view meminfo);
std::optional<uint64_t> cgroup_room(std::string_view memory_max, std::string_view memory_current);

}  // namespace kipp
