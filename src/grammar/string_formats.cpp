// Each format is an anchored pattern built from named pieces of its ABNF, compiled by
// compile_pattern; the formats and their sources are listed in string_formats.h.
#include "grammar/string_formats.h"

#include <array>
#include <cstdio>
#include <string>

namespace kipp::grammar {
namespace {

std::string two_digits(int value) {
  char text[3];
  std::snprintf(text, sizeof text, "%02d", value);
  return text;
}

// --- RFC 3339 dates and times. ---

std::string full_date() {
  // Leap years: a multiple of 4 that is not a century, or a multiple of 400.
  const std::string leap_year = "(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
  return "(?:\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])"
         "|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)"
         "|02-(?:0[1-9]|1\\d|2[0-8]))"
         "|" +
         leap_year + "-02-29)";
}

// A leap second is :60 in the minute that ends 23:59 UTC: for each local hour and minute, the
// one positive and the one negative offset that make it 23:59 UTC (and Z for 23:59 itself).
std::string leap_second_time(const std::string& fraction) {
  constexpr int kMinutesPerDay = 24 * 60;
  constexpr int kLastMinute = kMinutesPerDay - 1;
  const auto offset = [](int minutes) { return two_digits(minutes / 60) + ":" + two_digits(minutes % 60); };
  std::string hours;
  for (int hour = 0; hour < 24; ++hour) {
    std::string minutes;
    for (int minute = 0; minute < 60; ++minute) {
      const int local = hour * 60 + minute;
      const int ahead = (local - kLastMinute + kMinutesPerDay) % kMinutesPerDay;  // local = UTC + ahead
      const int behind = (kLastMinute - local) % kMinutesPerDay;                  // local = UTC - behind
      minutes += (minute ? "|" : "") + two_digits(minute) + ":60" + fraction + "(?:\\+" + offset(ahead) + "|-" +
                 offset(behind) + (local == kLastMinute ? "|[Zz]" : "") + ")";
    }
    hours += (hour ? "|" : "") + two_digits(hour) + ":(?:" + minutes + ")";
  }
  return "(?:" + hours + ")";
}

std::string full_time() {
  const std::string hour = "(?:[01]\\d|2[0-3])";
  const std::string minute = "[0-5]\\d";
  const std::string fraction = "(?:\\.\\d+)?";
  const std::string offset = "(?:[Zz]|[+-]" + hour + ":" + minute + ")";
  return "(?:" + hour + ":" + minute + ":" + minute + fraction + offset + "|" + leap_second_time(fraction) + ")";
}

std::string duration() {
  const std::string time = "T(?:\\d+H(?:\\d+M(?:\\d+S)?)?|\\d+M(?:\\d+S)?|\\d+S)";
  const std::string date = "(?:\\d+D|\\d+M(?:\\d+D)?|\\d+Y(?:\\d+M(?:\\d+D)?)?)";
  return "P(?:" + date + "(?:" + time + ")?|" + time + "|\\d+W)";
}

// --- Addresses. ---

const std::string kHex = "[0-9A-Fa-f]";

// A decimal octet 0-255 without leading zeros (RFC 3986 dec-octet).
std::string ipv4() {
  const std::string octet = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]\\d|\\d)";
  return "(?:" + octet + "(?:\\." + octet + "){3})";
}

// Eight 16-bit groups, an IPv4 address standing for the last two; "::" stands for one or more
// groups, so at most `compressed_groups` are written beside it (7 in RFC 4291, 6 in RFC 5321).
std::string ipv6(int compressed_groups) {
  const std::string group = kHex + "{1,4}";
  const auto groups_then_colon = [&](int max) { return "(?:" + group + ":){0," + std::to_string(max) + "}"; };
  std::string forms = "(?:" + group + ":){7}" + group + "|(?:" + group + ":){6}" + ipv4();
  for (int left = 0; left <= compressed_groups; ++left) {
    const int right = compressed_groups - left;
    std::string after;
    if (right >= 1) after = groups_then_colon(right - 1) + group;
    if (right >= 2) after += "|" + groups_then_colon(right - 2) + ipv4();
    forms += "|";
    if (left > 0) forms += "(?:" + group + ":){" + std::to_string(left - 1) + "}" + group;
    forms += "::" + (after.empty() ? "" : "(?:" + after + ")?");
  }
  return "(?:" + forms + ")";
}

// RFC 5321 section 4.1.2 Mailbox.
std::string email() {
  const std::string atom = "[A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~]+";
  const std::string quoted = "\"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\x20-\\x7E])*\"";
  const std::string label = "[A-Za-z0-9](?:[A-Za-z0-9\\-]*[A-Za-z0-9])?";
  const std::string literal = "\\[(?:" + ipv4() + "|IPv6:" + ipv6(6) + ")\\]";
  return "(?:" + atom + "(?:\\." + atom + ")*|" + quoted + ")@(?:" + label + "(?:\\." + label + ")*|" + literal + ")";
}

// --- RFC 3986 URIs and RFC 3987 IRIs: one ABNF, IRIs allowing more characters. ---

std::string uri(bool international, bool reference) {
  const std::string ucschar =
      "\\u{A0}-\\u{D7FF}\\u{F900}-\\u{FDCF}\\u{FDF0}-\\u{FFEF}\\u{10000}-\\u{1FFFD}\\u{20000}-\\u{2FFFD}"
      "\\u{30000}-\\u{3FFFD}\\u{40000}-\\u{4FFFD}\\u{50000}-\\u{5FFFD}\\u{60000}-\\u{6FFFD}\\u{70000}-\\u{7FFFD}"
      "\\u{80000}-\\u{8FFFD}\\u{90000}-\\u{9FFFD}\\u{A0000}-\\u{AFFFD}\\u{B0000}-\\u{BFFFD}\\u{C0000}-\\u{CFFFD}"
      "\\u{D0000}-\\u{DFFFD}\\u{E1000}-\\u{EFFFD}";
  const std::string iprivate = "\\u{E000}-\\u{F8FF}\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}";
  const std::string ascii_unreserved = "A-Za-z0-9\\-._~";
  const std::string unreserved = ascii_unreserved + (international ? ucschar : "");
  const std::string sub_delims = "!$&'()*+,;=";
  const std::string pct_encoded = "%" + kHex + "{2}";
  const auto any_of = [&](const std::string& members) { return "(?:[" + members + "]|" + pct_encoded + ")"; };
  const std::string pchar = any_of(unreserved + sub_delims + ":@");
  const std::string segment = pchar + "*";
  const std::string segments = "(?:/" + segment + ")*";
  const std::string query = "(?:" + pchar + "|[/?" + (international ? iprivate : "") + "])*";
  const std::string fragment = "(?:" + pchar + "|[/?])*";
  const std::string ip_future = "[vV]" + kHex + "+\\.[" + ascii_unreserved + sub_delims + ":]+";
  // An IPv4address is also a reg-name, so reg-name stands for both.
  const std::string host = "(?:\\[(?:" + ipv6(7) + "|" + ip_future + ")\\]|" + any_of(unreserved + sub_delims) + "*)";
  const std::string authority = "(?:" + any_of(unreserved + sub_delims + ":") + "*@)?" + host + "(?::\\d*)?";
  const std::string path_absolute = "/(?:" + pchar + "+" + segments + ")?";
  const std::string tail = "(?:\\?" + query + ")?(?:#" + fragment + ")?";
  const std::string absolute = "[A-Za-z][A-Za-z0-9+\\-.]*:(?://" + authority + segments + "|" + path_absolute + "|" +
                               pchar + "+" + segments + "|)" + tail;
  if (!reference) return absolute;
  const std::string path_noscheme = any_of(unreserved + sub_delims + "@") + "+" + segments;
  const std::string relative = "(?://" + authority + segments + "|" + path_absolute + "|" + path_noscheme + "|)" + tail;
  return "(?:" + absolute + "|" + relative + ")";
}

// --- JSON pointers. ---

std::string json_pointer() { return "(?:/(?:[^/~]|~[01])*)*"; }

// The form of draft-handrews-relative-json-pointer-01 (draft 7); later drafts add index
// manipulation ("0+1/a"), left out so that nothing one draft refuses is accepted.
std::string relative_json_pointer() { return "(?:0|[1-9]\\d*)(?:#|" + json_pointer() + ")"; }

struct Format {
  std::string_view name;
  std::string (*pattern)();
};

const std::array<Format, 14> kFormats = {{
    {"date", [] { return full_date(); }},
    {"time", [] { return full_time(); }},
    {"date-time", [] { return full_date() + "[Tt]" + full_time(); }},
    {"duration", [] { return duration(); }},
    {"uuid", [] { return kHex + "{8}-" + kHex + "{4}-" + kHex + "{4}-" + kHex + "{4}-" + kHex + "{12}"; }},
    {"ipv4", [] { return ipv4(); }},
    {"ipv6", [] { return ipv6(7); }},
    {"email", [] { return email(); }},
    {"uri", [] { return uri(false, false); }},
    {"uri-reference", [] { return uri(false, true); }},
    {"iri", [] { return uri(true, false); }},
    {"iri-reference", [] { return uri(true, true); }},
    {"json-pointer", [] { return json_pointer(); }},
    {"relative-json-pointer", [] { return relative_json_pointer(); }},
}};

const std::array<std::string_view, kFormats.size()> kFormatNames = [] {
  std::array<std::string_view, kFormats.size()> names;
  for (size_t i = 0; i < kFormats.size(); ++i) names[i] = kFormats[i].name;
  return names;
}();

}  // namespace

Result<RuleId> compile_format(GrammarBuilder& builder, std::string_view format, const CharRule& char_rule) {
  for (const Format& known : kFormats) {
    if (known.name != format) continue;
    Result<RuleId> rule = compile_pattern(builder, "^" + known.pattern() + "$", char_rule, SIZE_MAX);
    if (!rule) return with_context("format '" + std::string(format) + "'", rule.error());
    return rule;
  }
  return fail("format '", format, "' is not enforced");
}

std::span<const std::string_view> supported_formats() { return kFormatNames; }

}  // namespace kipp::grammar
