// Parses the comma-separated token ids that `--ids` takes ("1, 2,3").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace kipp::cli {

Result<std::vector<uint32_t>> parse_id_list(std::string_view list);

}  // namespace kipp::cli
