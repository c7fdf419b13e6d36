// compile_format checked against independent references: every string instance of
// JSON-Schema-Test-Suite's optional/format files (draft2020-12 and draft7, read in place from
// KIPP_SHARED_DATA), the calendar of std::chrono for dates, UTC arithmetic for leap seconds, and
// glibc's inet_pton for IP addresses.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/string_formats.h"

namespace kipp::grammar {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Automaton> format_automaton(std::string_view format) {
  GrammarBuilder builder;
  const Result<RuleId> rule = compile_format(builder, format, utf8_char_rule());
  EXPECT_TRUE(rule.ok()) << rule.error().message;
  if (!rule.ok()) return nullptr;
  Result<Grammar> grammar = std::move(builder).finish(rule.value());
  EXPECT_TRUE(grammar.ok()) << grammar.error().message;
  if (!grammar.ok()) return nullptr;
  auto automaton = Automaton::create(std::move(grammar).value());
  EXPECT_TRUE(automaton.ok()) << automaton.error().message;
  return automaton.ok() ? automaton.value() : nullptr;
}

bool matches(Automaton& automaton, std::string_view text) {
  const Result<TextCheck> checked = check_text(automaton, text);
  EXPECT_TRUE(checked.ok()) << checked.error().message;
  return checked.ok() && checked->complete;
}

std::string two_digits(int value) { return std::string{char('0' + value / 10), char('0' + value % 10)}; }

class StringFormatSuite : public testing::TestWithParam<std::string_view> {};

// Every string instance of the format's files, in both drafts that have one.
TEST_P(StringFormatSuite, AgreesWithEveryStringInstance) {
  const std::string format(GetParam());
  auto automaton = format_automaton(format);
  ASSERT_TRUE(automaton);
  const fs::path tests = fs::path(KIPP_SHARED_DATA) / "json-schema-test-suite" / "tests";
  size_t instances = 0, agreeing = 0;
  for (const char* draft : {"draft2020-12", "draft7"}) {
    const fs::path path = tests / draft / "optional" / "format" / (format + ".json");
    if (!fs::exists(path)) continue;
    std::ifstream in(path, std::ios::binary);
    const nlohmann::json groups = nlohmann::json::parse(in, nullptr, false);
    ASSERT_TRUE(groups.is_array()) << path;
    for (const nlohmann::json& group : groups) {
      ASSERT_EQ(group["schema"].value("format", ""), format) << path;
      for (const nlohmann::json& test : group["tests"]) {
        if (!test["data"].is_string()) continue;
        ++instances;
        const bool valid = test["valid"].get<bool>();
        const bool accepted = matches(*automaton, test["data"].get<std::string>());
        agreeing += accepted == valid;
        EXPECT_EQ(accepted, valid) << draft << " " << format << ": " << test["data"] << " (" << test["description"]
                                   << ")";
      }
    }
  }
  EXPECT_GT(instances, 10u) << "no suite file for " << format;
  std::printf("format %s: %zu of %zu suite strings agree\n", format.c_str(), agreeing, instances);
}

INSTANTIATE_TEST_SUITE_P(StringFormat, StringFormatSuite, testing::ValuesIn(supported_formats()),
                         [](const testing::TestParamInfo<std::string_view>& param) {
                           std::string name(param.param);
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(StringFormat, RefusesFormatsItDoesNotEnforce) {
  for (std::string_view format : {"hostname", "idn-hostname", "idn-email", "regex", "uri-template", "color"}) {
    GrammarBuilder builder;
    const Result<RuleId> rule = compile_format(builder, format, utf8_char_rule());
    ASSERT_FALSE(rule.ok()) << format;
    EXPECT_EQ(rule.error().message, "format '" + std::string(format) + "' is not enforced");
  }
}

// Every month and day number 00..32 in years that test the leap rule, against std::chrono.
TEST(StringFormat, DatesFollowTheGregorianCalendar) {
  auto automaton = format_automaton("date");
  ASSERT_TRUE(automaton);
  size_t valid = 0;
  for (int year : {0, 4, 100, 400, 1582, 1900, 1996, 2000, 2023, 2024, 2100, 2400, 9996, 9999}) {
    char year_text[8];
    std::snprintf(year_text, sizeof year_text, "%04d", year);
    for (int month = 0; month <= 13; ++month)
      for (int day = 0; day <= 32; ++day) {
        const std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(unsigned(month)),
                                               std::chrono::day(unsigned(day))};
        const std::string text = std::string(year_text) + "-" + two_digits(month) + "-" + two_digits(day);
        EXPECT_EQ(matches(*automaton, text), date.ok()) << text;
        valid += date.ok();
      }
  }
  EXPECT_EQ(valid, 14 * 365u + 8);  // eight leap years: 0, 4, 400, 1996, 2000, 2024, 2400, 9996
}

// :60 is valid exactly when the local time less its offset is 23:59 UTC.
TEST(StringFormat, LeapSecondsOnlyAtTheLastMinuteOfTheUtcDay) {
  auto time = format_automaton("time");
  auto date_time = format_automaton("date-time");
  ASSERT_TRUE(time && date_time);
  size_t valid = 0;
  for (int local = 0; local < 24 * 60; ++local)
    for (int offset = -(24 * 60 - 1); offset < 24 * 60; offset += 13) {
      const int magnitude = std::abs(offset);
      const std::string text = two_digits(local / 60) + ":" + two_digits(local % 60) + ":60" +
                               (offset < 0 ? "-" : "+") + two_digits(magnitude / 60) + ":" + two_digits(magnitude % 60);
      const bool utc_last_minute = ((local - offset) % (24 * 60) + 24 * 60) % (24 * 60) == 24 * 60 - 1;
      EXPECT_EQ(matches(*time, text), utc_last_minute) << text;
      EXPECT_EQ(matches(*time, text.substr(0, 8) + ".25" + text.substr(8)), utc_last_minute) << text;
      valid += utc_last_minute;
    }
  EXPECT_GT(valid, 100u);
  for (int hour = 0; hour < 24; ++hour) {
    EXPECT_EQ(matches(*time, two_digits(hour) + ":59:60Z"), hour == 23);
    EXPECT_EQ(matches(*date_time, "2016-12-31t" + two_digits(hour) + ":59:60z"), hour == 23);
  }
}

// Candidate addresses put together from groups, octets and separators, against inet_pton
// (glibc's refuses leading zeros in IPv4 octets, as the formats do).
TEST(StringFormat, IpAddressesAgreeWithInetPton) {
  auto ipv4 = format_automaton("ipv4");
  auto ipv6 = format_automaton("ipv6");
  ASSERT_TRUE(ipv4 && ipv6);
  for (int octet = 0; octet < 1000; ++octet)
    for (const std::string& written : {std::to_string(octet), "0" + std::to_string(octet)}) {
      const std::string text = "10." + written + ".0.1";
      in_addr address{};
      EXPECT_EQ(matches(*ipv4, text), inet_pton(AF_INET, text.c_str(), &address) == 1) << text;
    }
  // Mostly well-formed groups, so that a fair share of the candidates are addresses.
  const char* const kPieces[] = {"0",    "1", "ab",    "FFFF", "c0de",    "0",           "1",         "ab",      "FFFF",
                                 "c0de", "",  "12345", "g",    "1.2.3.4", "255.0.0.255", "256.0.0.1", "01.2.3.4"};
  std::mt19937 random(7);
  const auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(random); };
  size_t valid = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (int pieces = pick(10) + 1; pieces > 0; --pieces) {
      text += kPieces[pick(std::size(kPieces))];
      if (pieces > 1) text += pick(5) == 0 ? "::" : ":";
    }
    in6_addr address{};
    const bool reference = inet_pton(AF_INET6, text.c_str(), &address) == 1;
    EXPECT_EQ(matches(*ipv6, text), reference) << text;
    valid += reference;
  }
  EXPECT_GT(valid, 500u);
}

}  // namespace
}  // namespace kipp::grammar
