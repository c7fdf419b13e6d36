#include "util/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace kipp {
namespace {

void append_string(std::string& out, const std::string& text) {
  out += '"';
  out += escape_json_string(text);
  out += '"';
}

void append(std::string& out, const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: out += "null"; break;
    case nlohmann::json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; break;
    case nlohmann::json::value_t::number_integer: out += std::to_string(value.get<int64_t>()); break;
    case nlohmann::json::value_t::number_unsigned: out += std::to_string(value.get<uint64_t>()); break;
    case nlohmann::json::value_t::number_float: out += python_float_repr(value.get<double>()); break;
    case nlohmann::json::value_t::string: append_string(out, value.get_ref<const std::string&>()); break;
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object: append_python_container(out, value, append, append_string); break;
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded: out += "null"; break;
  }
}

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "NaN";  // json.dumps' spellings (allow_nan=True)
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  // The shortest round-trip digits, from scientific form: d[.ddd]e±x.
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string scientific(buffer, written.ptr);
  const size_t e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  const int exponent = std::stoi(scientific.substr(e + 1));
  std::string sign;
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (const char c : mantissa)
    if (c != '.') digits += c;
  // Python switches to scientific when the decimal point would sit before -4 or after 16 digits.
  const int point = exponent + 1;  // digits before the decimal point
  if (point <= -4 || point > 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char tail[16];
    std::snprintf(tail, sizeof tail, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + tail;
  }
  if (point <= 0) return sign + "0." + std::string(size_t(-point), '0') + digits;
  if (size_t(point) >= digits.size()) return sign + digits + std::string(size_t(point) - digits.size(), '0') + ".0";
  return sign + digits.substr(0, size_t(point)) + "." + digits.substr(size_t(point));
}

std::string escape_json_string(std::string_view utf8) {
  std::string out;
  for (const char c : utf8) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;  // UTF-8 passes through: ensure_ascii=False
        }
    }
  }
  return out;
}

void append_python_container(std::string& out, const nlohmann::ordered_json& value,
                             const std::function<void(std::string&, const nlohmann::ordered_json&)>& item,
                             const std::function<void(std::string&, const std::string&)>& key) {
  bool first = true;
  if (value.is_array()) {
    out += '[';
    for (const auto& element : value) {
      if (!first) out += ", ";
      first = false;
      item(out, element);
    }
    out += ']';
    return;
  }
  out += '{';
  for (const auto& [name, member] : value.items()) {
    if (!first) out += ", ";
    first = false;
    key(out, name);
    out += ": ";
    item(out, member);
  }
  out += '}';
}

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  append(out, value);
  return out;
}

}  // namespace kipp
