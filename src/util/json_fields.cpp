#include "util/json_fields.h"

#include <vector>

namespace kipp::json {

Shape shape_of(std::string_view text, const ShapeLimits& limits) {
  // Per open container: whether it is an object, and the commas seen at its level.
  struct Open {
    bool object;
    uint32_t commas;
  };
  std::vector<Open> open;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (open.size() == limits.depth) return Shape::too_deep;
      open.push_back({c == '{', 0});
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    } else if (c == ',' && !open.empty() && open.back().object && ++open.back().commas >= limits.members) {
      return Shape::too_many_members;
    }
  }
  return Shape::fits;
}

Result<Json> parse(const std::string& text, const std::string& what) {
  if (shape_of(text, {.depth = kMaxFileDepth}) != Shape::fits)
    return fail(what, ": nests deeper than the limit of ", kMaxFileDepth, " levels");
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return fail(what, ": not valid JSON");
  return parsed;
}

Result<const Json*> field(const Json& object, const char* key, const std::string& what) {
  if (!object.is_object()) return fail(what, ": expected a JSON object");
  auto it = object.find(key);
  if (it == object.end()) return fail(what, ": field \"", key, "\" is missing");
  return &*it;
}

Result<uint64_t> get_uint(const Json& object, const char* key, const std::string& what) {
  KIPP_ASSIGN(const Json* value, field(object, key, what));
  if (!value->is_number_unsigned()) return fail(what, ": field \"", key, "\" must be a non-negative integer");
  return value->get<uint64_t>();
}

Result<double> get_number(const Json& object, const char* key, const std::string& what) {
  KIPP_ASSIGN(const Json* value, field(object, key, what));
  if (!value->is_number()) return fail(what, ": field \"", key, "\" must be a number");
  return value->get<double>();
}

Result<bool> get_bool(const Json& object, const char* key, const std::string& what) {
  KIPP_ASSIGN(const Json* value, field(object, key, what));
  if (!value->is_boolean()) return fail(what, ": field \"", key, "\" must be true or false");
  return value->get<bool>();
}

Result<std::string> get_string(const Json& object, const char* key, const std::string& what) {
  KIPP_ASSIGN(const Json* value, field(object, key, what));
  if (!value->is_string()) return fail(what, ": field \"", key, "\" must be a string");
  return value->get<std::string>();
}

}  // namespace kipp::json
