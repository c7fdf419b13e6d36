// JSON Schema's `format` values whose language is regular, as grammar rules for the whole string.
//
// Each format is written as an anchored pattern (grammar/regex.h) transcribing the ABNF of the
// document that defines it, so its characters go through the caller's CharRule like a pattern's:
//   date, time, date-time   RFC 3339 full-date, full-time, date-time: days per month and leap
//                           years exactly; T, Z in either case; a leap second (:60) only where
//                           the time in UTC is 23:59 (every such local time and offset is listed)
//   duration                RFC 3339 Appendix A
//   uuid                    RFC 9562: 8-4-4-4-12 hex digits, either case, any version and variant
//   ipv4                    RFC 2673 dotted quad: four decimal octets 0-255 without leading zeros
//   ipv6                    RFC 4291 section 2.2: eight groups, "::" for one or more, a trailing
//                           IPv4 address
//   email                   RFC 5321 Mailbox (draft 2019-09 on; draft 7's RFC 5322 addr-spec is
//                           a superset): a Dot-string or Quoted-string local part, then a Domain
//                           or an IPv4 / IPv6 address literal. A subset, so that all it accepts
//                           is a Mailbox: never the General-address-literal, nor IPv4 literal
//                           octets with leading zeros; the length limits of section 4.5.3 are
//                           not counted
//   uri, uri-reference      RFC 3986 URI, URI-reference
//   iri, iri-reference      RFC 3987 IRI, IRI-reference
//   json-pointer            RFC 6901
//   relative-json-pointer   draft-handrews-relative-json-pointer-01 (draft 7's): the index
//                           manipulation ("0+1/a") of draft-bhutton-relative-json-pointer-00
//                           is left out, so nothing one draft refuses is accepted
// Not enforced (refused with an error): hostname and idn-hostname (IDNA A-labels must decode as
// Punycode to valid U-labels, which no grammar of this size can check), idn-email, regex,
// uri-template, and any other name.
#pragma once

#include <span>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/regex.h"
#include "util/error.h"

namespace kipp::grammar {

// The rule for a whole string of the given format (anchored), or an error naming the format
// when it is not supported ("format 'uri-reference' is not enforced").
Result<RuleId> compile_format(GrammarBuilder& builder, std::string_view format, const CharRule& char_rule);
// The names compile_format accepts, for documentation and error messages.
std::span<const std::string_view> supported_formats();

}  // namespace kipp::grammar
