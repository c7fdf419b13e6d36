// Checked field access on parsed JSON (nlohmann), for the converter's and downloader's inputs:
// a missing field or one of the wrong type is an error naming the file and field, never a throw.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace kipp::json {

using Json = nlohmann::json;

// Parses without exceptions; `what` names the source in the error.
Result<Json> parse(const std::string& text, const std::string& what);

Result<const Json*> field(const Json& object, const char* key, const std::string& what);
Result<uint64_t> get_uint(const Json& object, const char* key, const std::string& what);
Result<double> get_number(const Json& object, const char* key, const std::string& what);
Result<bool> get_bool(const Json& object, const char* key, const std::string& what);
Result<std::string> get_string(const Json& object, const char* key, const std::string& what);

}  // namespace kipp::json
