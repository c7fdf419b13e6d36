#include "util/python_str.h"

#include <cmath>
#include <cstdio>

#include "util/python_json.h"
#include "util/utf8.h"

namespace kipp {
namespace {

// str.isspace(): Unicode's White_Space characters plus the ASCII separators \x1c-\x1f.
bool python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Characters repr() escapes: the ASCII and C1 controls, the no-break and other non-space separators
// (Zs, Zl, Zp) and the common format characters (Cf). Rarer non-printable code points (unassigned
// ones, private use) are kept raw here, where Python would escape them.
bool python_unprintable(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD || c == 0x1680 || (c >= 0x2000 && c <= 0x200F) ||
         (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF;
}

void append_repr(std::string& out, std::string_view text) {
  // Single quotes, unless the text holds a single quote and no double quote.
  const bool double_quoted = text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = double_quoted ? '"' : '\'';
  out += quote;
  for (size_t i = 0; i < text.size();) {
    uint32_t length = 1;
    const char32_t c = utf8::decode_valid(reinterpret_cast<const unsigned char*>(text.data() + i), length);
    if (c == '\\' || c == char32_t(quote)) {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (python_unprintable(c)) {
      char escaped[12];
      if (c < 0x100) std::snprintf(escaped, sizeof escaped, "\\x%02x", unsigned(c));
      else std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
      out += escaped;
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  out += quote;
}

void append_python(std::string& out, const nlohmann::ordered_json& value, bool nested) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: out += "None"; break;
    case nlohmann::json::value_t::boolean: out += value.get<bool>() ? "True" : "False"; break;
    case nlohmann::json::value_t::number_integer: out += std::to_string(value.get<int64_t>()); break;
    case nlohmann::json::value_t::number_unsigned: out += std::to_string(value.get<uint64_t>()); break;
    case nlohmann::json::value_t::number_float: {
      const double number = value.get<double>();
      if (std::isnan(number)) out += "nan";
      else if (std::isinf(number)) out += number > 0 ? "inf" : "-inf";
      else out += python_float_repr(number);
      break;
    }
    case nlohmann::json::value_t::string:
      if (nested) append_repr(out, value.get_ref<const std::string&>());
      else out += value.get_ref<const std::string&>();
      break;
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object:
      append_python_container(
          out, value, [](std::string& to, const nlohmann::ordered_json& item) { append_python(to, item, true); },
          append_repr);
      break;
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded: out += "None"; break;
  }
}

}  // namespace

std::string python_str(const nlohmann::ordered_json& value) {
  std::string out;
  append_python(out, value, false);
  return out;
}

std::string_view python_strip(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  size_t begin = 0;
  while (begin < text.size()) {
    uint32_t length = 1;
    if (!python_space(utf8::decode_valid(bytes + begin, length))) break;
    begin += length;
  }
  size_t end = text.size();
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (bytes[start] & 0xC0) == 0x80) --start;  // back to the character's lead byte
    uint32_t length = 1;
    if (!python_space(utf8::decode_valid(bytes + start, length))) break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

}  // namespace kipp
