#include "server/request_fields.h"

#include <cmath>

namespace kipp::server {

ApiError field_error(const std::string& field, const std::string& message) {
  return ApiError{400, field + ": " + message, field};
}

ApiResult<int64_t> whole_number(const nlohmann::ordered_json& value, const std::string& field, int64_t low,
                                int64_t high) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX))
      return field_error(field, "must be at most " + std::to_string(high));
    const int64_t whole = value.get<int64_t>();
    if (whole < low || whole > high)
      return field_error(field, "must be between " + std::to_string(low) + " and " + std::to_string(high) + ", not " +
                                    std::to_string(whole));
    return whole;
  }
  if (!value.is_number_float()) return field_error(field, "must be an integer, not " + std::string(value.type_name()));
  const double number = value.get<double>();
  if (!std::isfinite(number) || std::floor(number) != number)
    return field_error(field, "must be an integer, not " + value.dump());
  if (number < double(low) || number > double(high))
    return field_error(field, "must be between " + std::to_string(low) + " and " + std::to_string(high) + ", not " +
                                  value.dump());
  return int64_t(number);
}

ApiResult<float> real_number(const nlohmann::ordered_json& value, const std::string& field, double low, double high,
                             bool open_low) {
  if (!value.is_number()) return field_error(field, "must be a number, not " + std::string(value.type_name()));
  const double number = value.get<double>();
  const bool too_low = open_low ? !(number > low) : !(number >= low);
  if (!std::isfinite(number) || too_low || number > high) {
    std::string range =
        (open_low ? "(" : "[") + nlohmann::ordered_json(low).dump() + ", " + nlohmann::ordered_json(high).dump() + "]";
    return field_error(field, "must be in " + range + ", not " + value.dump());
  }
  return float(number);
}

ApiStatus assign_whole(const std::string& field, const nlohmann::ordered_json& value, int64_t low, int64_t high,
                       const std::function<void(int64_t)>& assign) {
  KIPP_ASSIGN(auto number, whole_number(value, field, low, high));
  assign(number);
  return {};
}

ApiStatus assign_real(const std::string& field, const nlohmann::ordered_json& value, double low, double high,
                      bool open_low, std::optional<float>& target) {
  KIPP_ASSIGN(auto number, real_number(value, field, low, high, open_low));
  target = number;
  return {};
}

ApiResult<std::vector<std::string>> stop_strings(const nlohmann::ordered_json& value, const std::string& field,
                                                 uint32_t max_count, uint32_t max_bytes, bool single_allowed) {
  const std::string shape = single_allowed ? "must be a string or an array of strings" : "must be an array of strings";
  std::vector<std::string> stops;
  if (value.is_string() && single_allowed) {
    stops.push_back(value.get<std::string>());
  } else if (value.is_array()) {
    if (value.size() > max_count)
      return field_error(field,
                         "at most " + std::to_string(max_count) + " stop strings, not " + std::to_string(value.size()));
    for (const auto& stop : value) {
      if (!stop.is_string()) return field_error(field, shape);
      stops.push_back(stop.get<std::string>());
    }
  } else {
    return field_error(field, shape);
  }
  for (const std::string& stop : stops) {
    if (stop.empty()) return field_error(field, "an empty stop string would stop before the first character");
    if (stop.size() > max_bytes)
      return field_error(field, "a stop string may be at most " + std::to_string(max_bytes) + " bytes, not " +
                                    std::to_string(stop.size()));
  }
  return stops;
}

ApiStatus read_json_form(const nlohmann::ordered_json& value, grammar::JsonForm& form) {
  if (value == "tidy") form = grammar::JsonForm::tidy;
  else if (value == "exact") form = grammar::JsonForm::exact;
  else return field_error("json_form", "must be \"tidy\" or \"exact\"");
  return {};
}

}  // namespace kipp::server
