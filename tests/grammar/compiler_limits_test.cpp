// Every constraint compiler bounded (issue 32): inputs built to exhaust the stack (deep nesting,
// long chains of references or rules) or to make the work grow with the square of their size
// (large enums, tails copied for optional parts, long rule chains for a fixed point) are either
// compiled, correctly, or refused with an error naming the limit and where it was met; never a
// crash. The first two cases are the reproductions filed with the issue: a `pattern` nesting
// groups deeply (it crashed `kipp serve` with one request) and a schema nested 3,000 levels deep
// (it crashed `kipp grammar --json-schema`).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"

namespace kipp::grammar {
namespace {

using nlohmann::json;

std::string repeated(std::string_view unit, size_t times) {
  std::string text;
  for (size_t i = 0; i < times; ++i) text += unit;
  return text;
}

Result<Grammar> pattern_grammar(std::string_view pattern) {
  GrammarBuilder builder;
  KIPP_ASSIGN(const RuleId root, compile_pattern(builder, pattern, utf8_char_rule()));
  return std::move(builder).finish(root);
}

bool accepts(const Grammar& grammar, std::string_view text) {
  auto automaton = Automaton::create(grammar);
  EXPECT_TRUE(automaton.ok()) << automaton.error().message;
  if (!automaton) return false;
  auto checked = check_text(**automaton, text);
  EXPECT_TRUE(checked.ok()) << checked.error().message;
  return checked.ok() && checked->complete;
}

// {"type":"array","items":{"type":"array","items":...}} with `levels` schemas.
json nested_arrays(size_t levels) {
  json schema = {{"type", "integer"}};
  for (size_t i = 1; i < levels; ++i) schema = {{"type", "array"}, {"items", std::move(schema)}};
  return schema;
}

TEST(CompilerLimits, PatternNestingGroupsDeeplyIsRefusedAtItsLimit) {
  const size_t deep = 4'000;  // deep enough for the filed crash, short enough for the length limit
  auto refused = pattern_grammar(repeated("(", deep) + "a" + repeated(")", deep));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "pattern: groups nest deeper than the limit of " +
                                         std::to_string(kMaxPatternGroupDepth) + " levels at offset " +
                                         std::to_string(kMaxPatternGroupDepth));
  // At the limit it compiles and means what it says.
  const size_t most = kMaxPatternGroupDepth;
  auto allowed = pattern_grammar("^" + repeated("(?:", most) + "ab" + repeated(")", most) + "+$");
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  EXPECT_TRUE(accepts(*allowed, "abab"));
  EXPECT_FALSE(accepts(*allowed, "aba"));
}

TEST(CompilerLimits, APatternOverALimitIsRefusedWhateverStrictSays) {
  // strict = false leaves out what cannot be enforced; a limit met is no such thing.
  const json schema = {{"type", "string"}, {"pattern", repeated("(", 100) + "a" + repeated(")", 100)}};
  for (const bool strict : {true, false}) {
    SchemaOptions options;
    options.strict = strict;
    auto refused = compile_json_schema(schema, options);
    ASSERT_FALSE(refused.ok());
    const auto where = parse_refusal(refused.error().message);
    ASSERT_TRUE(where.has_value()) << refused.error().message;
    EXPECT_EQ(where->pointer, "/pattern");
    EXPECT_NE(refused.error().message.find("groups nest deeper than the limit of"), std::string::npos);
  }
}

TEST(CompilerLimits, NestedRepetitionsOfWhatMatchesNothingStopAtTheClosureLimit) {
  // A fuzzer's finding: ((a?){1000}){1000} is a short pattern whose first state holds a million
  // parse stacks; filling it took seconds before the node limit said no.
  auto grammar = pattern_grammar("^((a?){1000}){1000}$");
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  auto automaton = Automaton::create(std::move(grammar).value());
  ASSERT_FALSE(automaton.ok());
  EXPECT_NE(automaton.error().message.find("parse stacks"), std::string::npos) << automaton.error().message;
  EXPECT_TRUE(automaton.error().over_limit);
  // Its smaller twin is an ordinary pattern.
  auto small = pattern_grammar("^((a?){10}){10}$");
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(accepts(*small, std::string(57, 'a')));
  EXPECT_FALSE(accepts(*small, std::string(101, 'a')));
}

TEST(CompilerLimits, NumberRulesAreCountedOverTheWholeSchema) {
  // Each number literal is a digit automaton of its own: an enum of numbers is cheap to send and
  // was seconds and a gigabyte to compile.
  json numbers = json::array();
  for (size_t i = 0; i <= kMaxSchemaNumbers; ++i) numbers.push_back(i);
  auto refused = compile_json_schema({{"enum", numbers}});
  ASSERT_FALSE(refused.ok());
  const auto where = parse_refusal(refused.error().message);
  ASSERT_TRUE(where.has_value()) << refused.error().message;
  EXPECT_EQ(where->keyword, "enum");
  EXPECT_NE(refused.error().message.find("the limit of " + std::to_string(kMaxSchemaNumbers)), std::string::npos);
  auto few = compile_json_schema({{"enum", {1, 2.5, 30}}});
  ASSERT_TRUE(few.ok()) << few.error().message;
  EXPECT_TRUE(accepts(few->grammar, "2.50"));
  EXPECT_FALSE(accepts(few->grammar, "3"));
}

TEST(CompilerLimits, PatternLengthIsBounded) {
  auto refused = pattern_grammar(repeated("a", kMaxPatternCodePoints + 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "pattern: " + std::to_string(kMaxPatternCodePoints + 1) +
                                         " code points, more than the limit of " +
                                         std::to_string(kMaxPatternCodePoints));
  EXPECT_TRUE(pattern_grammar(repeated("a", kMaxPatternCodePoints)).ok());
}

TEST(CompilerLimits, RepeatingManyOptionalPartsIsRefusedNotCopiedWithoutBound) {
  // (a?b?c?...)* rewrites into one option per part, each holding a copy of the parts after it.
  std::string parts;
  for (size_t i = 0; i < 2'000; ++i) parts += std::string(1, char('a' + i % 26)) + "?";
  auto refused = pattern_grammar("^(" + parts + ")*$");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("more than " + std::to_string(kMaxRewrittenNodes) + " nodes"),
            std::string::npos)
      << refused.error().message;
  // A few optional parts are rewritten as before: (a?b?)* is any text of a and b.
  auto small = pattern_grammar("^(a?b?)*$");
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_TRUE(accepts(*small, "abba"));
  EXPECT_FALSE(accepts(*small, "abc"));
}

TEST(CompilerLimits, SchemaNested3000LevelsIsRefusedNamingWhere) {
  auto refused = compile_json_schema(nested_arrays(3'000));
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.error().message;
  EXPECT_EQ(message.find("keyword 'schema' at /items/items/"), 0u) << message.substr(0, 200);
  EXPECT_NE(message.find("nests deeper than the limit of " + std::to_string(kMaxSchemaDepth) + " levels"),
            std::string::npos);
  // 60 nested schemas (120 JSON levels) compile, and the grammar is exact at depth.
  auto allowed = compile_json_schema(nested_arrays(60));
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  EXPECT_TRUE(accepts(allowed->grammar, repeated("[", 59) + "7" + repeated("]", 59)));
  EXPECT_FALSE(accepts(allowed->grammar, repeated("[", 58) + "7" + repeated("]", 58)));
}

TEST(CompilerLimits, DeepValuesInsideEnumAreRefusedBeforeAnyRecursion) {
  json value = 1;
  for (int i = 0; i < 5'000; ++i) value = json::array({std::move(value)});
  auto refused = compile_json_schema({{"enum", json::array({value})}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message.find("keyword 'schema' at /enum/0/0/0/"), 0u);
}

TEST(CompilerLimits, LongChainOfReferencesIsRefusedAtTheNestingLimit) {
  // $defs/d0 -> d1 -> ... -> dN -> integer: each reference nests one level deeper when compiled.
  const auto chain = [](size_t length) {
    json defs = json::object();
    for (size_t i = 0; i < length; ++i) defs["d" + std::to_string(i)] = {{"$ref", "#/$defs/d" + std::to_string(i + 1)}};
    defs["d" + std::to_string(length)] = {{"type", "integer"}};
    return json{{"$defs", std::move(defs)}, {"$ref", "#/$defs/d0"}};
  };
  auto refused = compile_json_schema(chain(20'000));
  ASSERT_FALSE(refused.ok());
  const auto where = parse_refusal(refused.error().message);
  ASSERT_TRUE(where.has_value()) << refused.error().message;
  EXPECT_EQ(where->keyword, "$ref");
  EXPECT_NE(refused.error().message.find("the limit of " + std::to_string(kMaxSchemaNesting)), std::string::npos);
  auto allowed = compile_json_schema(chain(200));
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  EXPECT_TRUE(accepts(allowed->grammar, "42"));
  EXPECT_FALSE(accepts(allowed->grammar, "\"42\""));
}

TEST(CompilerLimits, LargeEnumsCompileExactlyAndTooLargeOnesAreRefused) {
  // Every value twice over: deduplication keeps one of each (it compared every pair before).
  json values = json::array();
  for (size_t i = 0; i < kMaxEnumValues / 2; ++i) values.push_back("v" + std::to_string(i));
  for (size_t i = 0; i < kMaxEnumValues / 2; ++i) values.push_back("v" + std::to_string(i));
  auto compiled = compile_json_schema({{"enum", values}});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  EXPECT_TRUE(accepts(compiled->grammar, "\"v4999\""));
  EXPECT_FALSE(accepts(compiled->grammar, "\"v5000\""));
  // Numbers equal by value are one value: 1 and 1.0.
  auto numbers = compile_json_schema(json::parse(R"({"enum": [1, 1.0, 2], "type": "integer"})"));
  ASSERT_TRUE(numbers.ok()) << numbers.error().message;
  EXPECT_TRUE(accepts(numbers->grammar, "1"));
  EXPECT_FALSE(accepts(numbers->grammar, "3"));

  values.push_back("one too many");
  auto refused = compile_json_schema({{"properties", {{"x", {{"enum", values}}}}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "keyword 'enum' at /properties/x/enum: " + std::to_string(kMaxEnumValues + 1) +
                                         " values, more than the limit of " + std::to_string(kMaxEnumValues));
}

TEST(CompilerLimits, ManyBranchesAreRefusedNamingTheKeyword) {
  json branches = json::array();
  for (size_t i = 0; i <= kMaxSchemaBranches; ++i) branches.push_back({{"const", i}});
  SchemaOptions lenient;
  lenient.strict = false;
  auto refused = compile_json_schema({{"anyOf", branches}}, lenient);
  ASSERT_FALSE(refused.ok());
  const auto where = parse_refusal(refused.error().message);
  ASSERT_TRUE(where.has_value()) << refused.error().message;
  EXPECT_EQ(where->keyword, "anyOf");
  EXPECT_EQ(where->pointer, "/anyOf");
}

TEST(CompilerLimits, DistributingNestedChoicesStopsAtTheViewLimit) {
  // allOf of anyOfs with a sibling keyword at every level: the cases multiply level by level.
  json schema = {{"type", "integer"}};
  for (int level = 0; level < 40; ++level)
    schema = {{"minimum", 0},
              {"anyOf", json::array({schema, {{"maximum", level}}})},
              {"allOf", json::array({{{"anyOf", json::array({{{"minimum", 1}}, {{"maximum", 100}}})}}})}};
  auto refused = compile_json_schema(schema);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("limit of"), std::string::npos) << refused.error().message;
}

TEST(CompilerLimits, GbnfChainOfManyRulesCompilesWithoutDeepRecursion) {
  // r0 ::= r1, r1 ::= r2, ...: the left-recursion search and the fixed points walk the chain; a
  // recursive search exhausted the stack, and repeated passes took the square of its length.
  const size_t length = 100'000;
  std::string chain = "root ::= r0\n";
  for (size_t i = 0; i < length; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " | \"\"\n";
  const std::string last = "r" + std::to_string(length);
  auto grammar = compile_gbnf(chain + last + " ::= \"x\"\n");
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  EXPECT_TRUE(accepts(*grammar, "x"));
  EXPECT_TRUE(accepts(*grammar, ""));
  EXPECT_FALSE(accepts(*grammar, "xx"));
  // The same chain closed into a loop is left recursion, found along the whole chain.
  auto looped = compile_gbnf(chain + last + " ::= r0 \"y\" | \"x\"\n");
  ASSERT_FALSE(looped.ok());
  EXPECT_NE(looped.error().message.find("left recursive"), std::string::npos);
}

TEST(CompilerLimits, GrammarThatMatchesNothingIsRefusedWhenCompiled) {
  // Found by compiling, not at generation time: `a` can never end.
  auto refused = compile_gbnf("root ::= \"x\" a\na ::= \"y\" a\n");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("matches no text at all"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace kipp::grammar
