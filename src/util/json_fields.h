// Bounded parsing and checked field access on JSON (nlohmann), for the converter's, the
// downloader's and the CLI's inputs: a document nested too deeply, a missing field or one of the
// wrong type is an error naming the file and field, never a throw or a stack overflow.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace kipp::json {

using Json = nlohmann::json;

// What a JSON text is refused for before it is parsed, found in one pass (strings skipped):
// nesting deeper than `depth` (what reads a parsed value, copies, dumps and compilers, recurses
// per level), or an object with more than `members` members (an ordered_json object finds each
// key by a linear search, so reading n members takes time growing with n squared).
struct ShapeLimits {
  uint32_t depth = UINT32_MAX;
  uint32_t members = UINT32_MAX;
};
enum class Shape { fits, too_deep, too_many_members };
// The members an ordered object read from a client (or from the model's tool calls) may have.
inline constexpr uint32_t kMaxObjectMembers = 1024;
Shape shape_of(std::string_view text, const ShapeLimits& limits);

// The deepest nesting parse() reads: config files, hub listings and schema files nest a few
// levels; anything deeper is refused, not read.
inline constexpr uint32_t kMaxFileDepth = 512;

// Parses without exceptions; `what` names the source in the error.
Result<Json> parse(const std::string& text, const std::string& what);

Result<const Json*> field(const Json& object, const char* key, const std::string& what);
Result<uint64_t> get_uint(const Json& object, const char* key, const std::string& what);
Result<double> get_number(const Json& object, const char* key, const std::string& what);
Result<bool> get_bool(const Json& object, const char* key, const std::string& what);
Result<std::string> get_string(const Json& object, const char* key, const std::string& what);

}  // namespace kipp::json
