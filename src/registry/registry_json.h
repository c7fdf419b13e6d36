// The registry as JSON: every field of every entry, derived figures included.
#pragma once

#include <string>

namespace kipp {

std::string registry_json(int indent = 2);

}  // namespace kipp
