// Reading the scalar fields of a JSON request body, for both APIs: numbers in a range, with an
// error that names the field and what it held.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "server/api_error.h"

namespace kipp::server {

ApiError field_error(const std::string& field, const std::string& message);

// A whole number in [low, high] (an integral float such as 1e3 counts; "10" does not).
ApiResult<int64_t> whole_number(const nlohmann::ordered_json& value, const std::string& field, int64_t low,
                                int64_t high);

// A number in [low, high]; `open_low` excludes low itself.
ApiResult<float> real_number(const nlohmann::ordered_json& value, const std::string& field, double low, double high,
                             bool open_low = false);

// The same, handing the number to `assign` (or `target`); the error when it is out of range.
ApiStatus assign_whole(const std::string& field, const nlohmann::ordered_json& value, int64_t low, int64_t high,
                       const std::function<void(int64_t)>& assign);
ApiStatus assign_real(const std::string& field, const nlohmann::ordered_json& value, double low, double high,
                      bool open_low, std::optional<float>& target);

// Stop strings: an array of non-empty strings (or one string, where the API allows it), at most
// `max_count` of at most `max_bytes` each.
ApiResult<std::vector<std::string>> stop_strings(const nlohmann::ordered_json& value, const std::string& field,
                                                 uint32_t max_count, uint32_t max_bytes, bool single_allowed);

// Kipp's `json_form` field, on every API: "tidy" or "exact", the JSON form a schema or forced call
// compiles to (grammar/json_schema.h).
ApiStatus read_json_form(const nlohmann::ordered_json& value, grammar::JsonForm& form);

}  // namespace kipp::server
