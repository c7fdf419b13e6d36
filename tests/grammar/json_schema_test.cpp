// The pieces of the JSON Schema compiler, each against expectations computed here from the
// specification's meaning (integer arithmetic, code point counts, key sets), not from its output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace kipp::grammar {
namespace {

using nlohmann::json;

class Compiled {
 public:
  explicit Compiled(const std::string& schema, SchemaOptions options = {}) {
    auto compiled = compile_json_schema(json::parse(schema), options);
    if (!compiled) {
      error_ = compiled.error().message;
      return;
    }
    unenforced_ = compiled->unenforced;
    auto automaton = Automaton::create(std::move(compiled->grammar));
    if (!automaton) {
      error_ = automaton.error().message;
      return;
    }
    automaton_ = *automaton;
  }
  bool ok() const { return automaton_ != nullptr; }
  const std::string& error() const { return error_; }
  const std::vector<Unenforced>& unenforced() const { return unenforced_; }
  bool accepts(const std::string& text) const {
    auto check = check_text(*automaton_, text);
    return check.ok() && check->complete;
  }

 private:
  std::shared_ptr<Automaton> automaton_;
  std::string error_;
  std::vector<Unenforced> unenforced_;
};

TEST(JsonSchemaIntegers, RangeWithNegativeBoundsAtAndAroundEveryValue) {
  const Compiled schema(R"({"type": "integer", "minimum": -15, "maximum": 120})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  for (int value = -250; value <= 250; ++value) {
    const bool inside = value >= -15 && value <= 120;
    EXPECT_EQ(schema.accepts(std::to_string(value)), inside) << value;
    EXPECT_EQ(schema.accepts(std::to_string(value) + ".0"), inside) << value << ".0";
    EXPECT_FALSE(schema.accepts(std::to_string(value) + ".5")) << value << ".5";
  }
  EXPECT_TRUE(schema.accepts("-0"));
  EXPECT_TRUE(schema.accepts("0.000"));
  EXPECT_TRUE(schema.accepts("-0.0"));
  EXPECT_FALSE(schema.accepts("01"));
  EXPECT_FALSE(schema.accepts("-"));
  EXPECT_FALSE(schema.accepts("1200"));
  EXPECT_FALSE(schema.accepts("\"5\""));
}

TEST(JsonSchemaIntegers, BoundsAcrossDigitCountsAndBeyondSixtyFourBits) {
  const Compiled schema(R"({"type": "integer", "exclusiveMinimum": 99.5, "maximum": 18446744073709551615})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_FALSE(schema.accepts("99"));
  EXPECT_TRUE(schema.accepts("100"));
  EXPECT_TRUE(schema.accepts("999"));
  EXPECT_TRUE(schema.accepts("1000"));
  EXPECT_TRUE(schema.accepts("18446744073709551615"));
  EXPECT_TRUE(schema.accepts("18446744073709551615.00"));
  EXPECT_FALSE(schema.accepts("18446744073709551616"));
  EXPECT_FALSE(schema.accepts("100000000000000000000"));
  EXPECT_TRUE(schema.accepts("9999999999999999999"));
}

TEST(JsonSchemaIntegers, UnboundedIntegerTakesFloatsWithZeroFractionAndPlainExponents) {
  const Compiled schema(R"({"type": "integer"})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  for (const char* text :
       {"0", "-0", "12345678910111213141516171819202122232425262728293031", "1.0", "-7.000", "1e308", "2E+3"})
    EXPECT_TRUE(schema.accepts(text)) << text;
  for (const char* text : {"1.5", "0.1", "-", "1.", ".5", "1e-3", "true"}) EXPECT_FALSE(schema.accepts(text)) << text;
}

TEST(JsonSchemaNumbers, DecimalBoundsOnAGridOfHundredths) {
  const Compiled schema(R"({"type": "number", "minimum": -0.5, "exclusiveMaximum": 2.25})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  for (int hundredths = -400; hundredths <= 400; ++hundredths) {
    char text[32];
    std::snprintf(text, sizeof text, "%s%d.%02d", hundredths < 0 ? "-" : "", std::abs(hundredths) / 100,
                  std::abs(hundredths) % 100);
    const bool inside = hundredths >= -50 && hundredths < 225;
    EXPECT_EQ(schema.accepts(text), inside) << text;
  }
  EXPECT_TRUE(schema.accepts("2.2499999999"));
  EXPECT_FALSE(schema.accepts("2.25000000001"));
  EXPECT_TRUE(schema.accepts("-0.5000"));
  EXPECT_FALSE(schema.accepts("-0.50001"));
}

TEST(JsonSchemaNumbers, SignBoundsKeepExponentForms) {
  const Compiled schema(R"({"type": "number", "exclusiveMinimum": 0})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  for (const char* text : {"1", "0.001", "1e-9", "2.5E+10"}) EXPECT_TRUE(schema.accepts(text)) << text;
  for (const char* text : {"0", "-0", "0.0e5", "-1e-9", "-3"}) EXPECT_FALSE(schema.accepts(text)) << text;
}

TEST(JsonSchemaNumbers, MultipleOfADecimalStep) {
  const Compiled schema(R"({"type": "number", "multipleOf": 0.25, "maximum": 3})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  for (int hundredths = -300; hundredths <= 400; ++hundredths) {
    char text[32];
    std::snprintf(text, sizeof text, "%s%d.%02d", hundredths < 0 ? "-" : "", std::abs(hundredths) / 100,
                  std::abs(hundredths) % 100);
    const bool valid = hundredths % 25 == 0 && hundredths <= 300;
    EXPECT_EQ(schema.accepts(text), valid) << text;
  }
}

TEST(JsonSchemaNumbers, IntegerMultipleOf) {
  const Compiled schema(R"({"type": "integer", "multipleOf": 7})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  for (int value = -100; value <= 100; ++value)
    EXPECT_EQ(schema.accepts(std::to_string(value)), value % 7 == 0) << value;
}

TEST(JsonSchemaStrings, LengthsCountCodePointsAndEscapesAsOneCharacter) {
  const Compiled schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_FALSE(schema.accepts(R"("a")"));
  EXPECT_TRUE(schema.accepts(R"("ab")"));
  EXPECT_TRUE(schema.accepts(R"("abc")"));
  EXPECT_FALSE(schema.accepts(R"("abcd")"));
  EXPECT_TRUE(schema.accepts(R"("a\nb")"));      // a, line feed, b
  EXPECT_TRUE(schema.accepts(R"("\"\\")"));      // quote, backslash
  EXPECT_TRUE(schema.accepts(R"("\u001F\/")"));  // a control character, a slash
  EXPECT_FALSE(schema.accepts(R"("\n\n\n\n")"));
  EXPECT_FALSE(schema.accepts("\"\xC3\xA9\""));                                         // é: two bytes, one character
  EXPECT_TRUE(schema.accepts("\"\xC3\xA9\xC3\xA9\""));                                  // éé
  EXPECT_TRUE(schema.accepts("\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xF0\x9F\x98\x80\""));  // three emoji
  EXPECT_FALSE(schema.accepts("\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xF0\x9F\x98\x80\""));
  EXPECT_FALSE(schema.accepts("\"a\nb\""));  // a raw control character is not JSON
  EXPECT_FALSE(schema.accepts(R"("a\qb")"));
}

TEST(JsonSchemaObjects, AdditionalPropertiesCoverExactlyTheUnnamedKeys) {
  const Compiled schema(
      R"({"properties": {"a": {"type": "integer"}, "a\"b": {"type": "string"}, "ab/": {"type": "null"}},
                            "additionalProperties": {"type": "boolean"}})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts(R"({"a":1})"));
  EXPECT_FALSE(schema.accepts(R"({"a":true})"));
  EXPECT_TRUE(schema.accepts(R"({"a\"b":"x"})"));
  EXPECT_FALSE(schema.accepts(R"({"a\"b":true})"));
  EXPECT_TRUE(schema.accepts(R"({"ab/":null})"));
  // The same key spelled with \/ is still the named key, so the additional schema must not take it.
  EXPECT_FALSE(schema.accepts(R"({"ab\/":true})"));
  for (const char* key : {"", "b", "ab", "a\\\"", "a\\\"bc", "ab//", "aa", "\\n"}) {
    EXPECT_TRUE(schema.accepts(std::string("{\"") + key + "\":false}")) << key;
    EXPECT_FALSE(schema.accepts(std::string("{\"") + key + "\":1}")) << key;
  }
}

TEST(JsonSchemaObjects, MembersInAnyOrderEachAtMostOnce) {
  const Compiled schema(
      R"({"properties": {"a": {}, "b": {}, "c": {}}, "required": ["a", "c"], "additionalProperties": false})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  std::vector<std::string> keys{"a", "b", "c"};
  std::sort(keys.begin(), keys.end());
  // Every subset, in every order: valid exactly when it holds a and c.
  for (unsigned subset = 0; subset < 8; ++subset) {
    std::vector<std::string> chosen;
    for (unsigned k = 0; k < 3; ++k)
      if (subset & (1u << k)) chosen.push_back(keys[k]);
    const bool valid = (subset & 1) && (subset & 4);
    do {
      std::string text = "{";
      for (const std::string& key : chosen) text += (text.size() > 1 ? ",\"" : "\"") + key + "\":1";
      EXPECT_EQ(schema.accepts(text + "}"), valid) << text;
    } while (std::next_permutation(chosen.begin(), chosen.end()));
  }
  EXPECT_FALSE(schema.accepts(R"({"a":1,"a":1,"c":1})"));
  EXPECT_FALSE(schema.accepts(R"({"a":1,"c":1,"d":1})"));
}

TEST(JsonSchemaObjects, MemberCounts) {
  const Compiled schema(R"({"type": "object", "minProperties": 1, "maxProperties": 2})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_FALSE(schema.accepts("{}"));
  EXPECT_TRUE(schema.accepts(R"({"x":1})"));
  EXPECT_TRUE(schema.accepts(R"({"x":1,"y":[]})"));
  EXPECT_FALSE(schema.accepts(R"({"x":1,"y":[],"z":{}})"));
}

TEST(JsonSchemaArrays, PrefixItemsThenTheRestWithCounts) {
  const Compiled schema(R"({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": {"type": "boolean"},
                            "minItems": 1, "maxItems": 4})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_FALSE(schema.accepts("[]"));
  EXPECT_TRUE(schema.accepts("[1]"));
  EXPECT_FALSE(schema.accepts(R"(["a"])"));
  EXPECT_TRUE(schema.accepts(R"([1,"a"])"));
  EXPECT_TRUE(schema.accepts(R"([1,"a",true,false])"));
  EXPECT_FALSE(schema.accepts(R"([1,"a",true,false,true])"));
  EXPECT_FALSE(schema.accepts(R"([1,"a",3])"));
}

TEST(JsonSchemaRefs, RecursionThroughRefs) {
  const Compiled schema(R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
                              "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                              "required": ["value"], "additionalProperties": false}},
                            "$ref": "#/$defs/node"})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  std::string deep = R"({"value":0})";
  for (int depth = 1; depth <= 20; ++depth)
    deep = R"({"value":)" + std::to_string(depth) + R"(,"children":[)" + deep + R"(,{"value":-1}]})";
  EXPECT_TRUE(schema.accepts(deep));
  EXPECT_FALSE(schema.accepts(R"({"value":1,"children":[{"value":"x"}]})"));
  EXPECT_FALSE(schema.accepts(R"({"value":1,"children":[{"children":[]}]})"));
}

TEST(JsonSchemaRefs, LeftRecursionIsRefused) {
  const Compiled schema(R"({"anyOf": [{"$ref": "#"}, {"type": "string"}]})");
  ASSERT_FALSE(schema.ok());
  auto refused = parse_refusal(schema.error());
  ASSERT_TRUE(refused.has_value()) << schema.error();
  EXPECT_EQ(refused->keyword, "$ref");
}

TEST(JsonSchemaValues, ConstIsJsonEquality) {
  const Compiled schema(R"({"const": {"a": 1, "b": [1, 2.5, "x"]}})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts(R"({"a":1,"b":[1,2.5,"x"]})"));
  EXPECT_TRUE(schema.accepts(R"({"b":[1.0,2.50,"x"],"a":1.000})"));
  EXPECT_FALSE(schema.accepts(R"({"a":1})"));
  EXPECT_FALSE(schema.accepts(R"({"a":1,"b":[1,2.5,"x"],"c":0})"));
  EXPECT_FALSE(schema.accepts(R"({"a":1,"b":[2.5,1,"x"]})"));
}

TEST(JsonSchemaValues, EnumValuesMustMeetTheSiblingKeywords) {
  const Compiled schema(R"({"enum": [1, "ab", "abcd", null], "type": ["string", "integer"], "maxLength": 3})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts("1"));
  EXPECT_TRUE(schema.accepts(R"("ab")"));
  EXPECT_FALSE(schema.accepts(R"("abcd")"));
  EXPECT_FALSE(schema.accepts("null"));
}

TEST(JsonSchemaValues, EnumInsideItsOwnRecursionIsRefusedNotLooped) {
  const Compiled schema(
      R"({"enum": [{"child": null}, 1], "properties": {"child": {"anyOf": [{"type": "null"}, {"$ref": "#"}]}}})");
  ASSERT_FALSE(schema.ok());
  EXPECT_EQ(parse_refusal(schema.error())->keyword, "enum");
}

TEST(JsonSchemaCombinators, OneOfNeedsDisjointBranches) {
  const Compiled disjoint(R"({"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 3}]})");
  ASSERT_TRUE(disjoint.ok()) << disjoint.error();
  EXPECT_TRUE(disjoint.accepts(R"("x")"));
  EXPECT_TRUE(disjoint.accepts("3"));
  EXPECT_FALSE(disjoint.accepts("2"));
  const Compiled overlapping(R"({"oneOf": [{"type": "integer"}, {"minimum": 3}]})");
  ASSERT_FALSE(overlapping.ok());
  EXPECT_EQ(parse_refusal(overlapping.error())->keyword, "oneOf");
}

TEST(JsonSchemaCombinators, AllOfKeepsEachAdditionalPropertiesToItsOwnProperties) {
  // The second subschema names no properties, so its additionalProperties: false forbids every key.
  const Compiled schema(R"({"allOf": [{"properties": {"a": {}}}, {"additionalProperties": false}]})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts("{}"));
  EXPECT_FALSE(schema.accepts(R"({"a":1})"));
  const Compiled typed(
      R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}, {"required": ["a"]}]})");
  ASSERT_TRUE(typed.ok()) << typed.error();
  EXPECT_TRUE(typed.accepts(R"({"a":1,"b":2})"));
  EXPECT_FALSE(typed.accepts(R"({"b":2})"));
  EXPECT_FALSE(typed.accepts(R"({"a":"1"})"));
}

TEST(JsonSchemaLayout, WhitespaceIsBounded) {
  SchemaOptions options;
  options.max_whitespace = 2;
  const Compiled schema(R"({"type": "object", "properties": {"a": {"type": "array"}}})", options);
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts(R"(  { "a" :  [ 1 ,2 ] }  )"));
  EXPECT_TRUE(schema.accepts("{\n\t\"a\":[]}"));
  EXPECT_FALSE(schema.accepts(R"({   "a":[]})"));
  EXPECT_FALSE(schema.accepts(R"(   {})"));
  options.max_whitespace = 0;
  const Compiled compact(R"({"type": "object"})", options);
  ASSERT_TRUE(compact.ok()) << compact.error();
  EXPECT_TRUE(compact.accepts(R"({"a":[1,{}]})"));
  EXPECT_FALSE(compact.accepts(R"({"a": 1})"));
}

SchemaOptions tidy_form() {
  SchemaOptions options;
  options.form = JsonForm::tidy;
  return options;
}

// The tidy form: json.dumps spacing or none, nothing looser.
TEST(JsonSchemaTidyForm, WhitespaceIsJsonDumpsSpacingOrNone) {
  const Compiled tidy(R"({"type": "object", "properties": {"a": {"type": "array"}, "b": {}}})", tidy_form());
  ASSERT_TRUE(tidy.ok()) << tidy.error();
  EXPECT_TRUE(tidy.accepts(R"({"a": [1, 2], "b": {"c": null}})"));
  EXPECT_TRUE(tidy.accepts(R"({"a":[1,2],"b":{"c":null}})"));
  EXPECT_TRUE(tidy.accepts(R"({"a":[1, 2],"b": true})"));
  for (const char* loose : {R"( {"a":[]})", R"({"a":[]} )", R"({ "a":[]})", R"({"a" :[]})", R"({"a":  []})",
                            R"({"a":[ 1]})", R"({"a":[1 ]})", "{\"a\":\n[]}", R"({"a":[],  "b":1})"})
    EXPECT_FALSE(tidy.accepts(loose)) << loose;
  const Compiled exact(R"({"type": "object", "properties": {"a": {"type": "array"}, "b": {}}})");
  EXPECT_TRUE(exact.accepts(R"({ "a" :  [ 1 ] })"));
}

// Integers: plain digits, so that no zero can be written for ever; the exact form keeps the rest.
TEST(JsonSchemaTidyForm, IntegersArePlainDigits) {
  const char* schema = R"({"type": "integer", "minimum": 0, "maximum": 120})";
  const Compiled tidy(schema, tidy_form()), exact(schema);
  ASSERT_TRUE(tidy.ok() && exact.ok());
  for (const char* plain : {"0", "7", "120", "-0"}) EXPECT_TRUE(tidy.accepts(plain)) << plain;
  for (const char* spelled : {"3.0", "-0.0", "-0.0000000000", "120.00"}) {
    EXPECT_FALSE(tidy.accepts(spelled)) << spelled;
    EXPECT_TRUE(exact.accepts(spelled)) << spelled;
  }
  // Exponents: the exact form allows them where no bound but 0 applies.
  const Compiled tidy_any(R"({"type": "integer"})", tidy_form()), exact_any(R"({"type": "integer"})");
  ASSERT_TRUE(tidy_any.ok() && exact_any.ok());
  for (const char* spelled : {"1e2", "1.0e2"}) {
    EXPECT_FALSE(tidy_any.accepts(spelled)) << spelled;
    EXPECT_TRUE(exact_any.accepts(spelled)) << spelled;
  }
  const Compiled number(R"({"type": "number", "minimum": 0})", tidy_form());
  ASSERT_TRUE(number.ok());
  EXPECT_TRUE(number.accepts("3.0")) << "numbers keep their fractions (json.dumps writes 3.0)";
}

// Members: only those listed, unless the schema asks for others or needs them.
TEST(JsonSchemaTidyForm, UnlistedMembersOnlyWhereTheSchemaAsksOrNeeds) {
  const std::string listed = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}})";
  const Compiled tidy(listed, tidy_form()), exact(listed);
  ASSERT_TRUE(tidy.ok()) << tidy.error();
  for (const char* text : {R"({})", R"({"a":1})", R"({"b":"x","a":1})"}) {
    EXPECT_TRUE(tidy.accepts(text)) << text;
    EXPECT_TRUE(exact.accepts(text)) << text;
  }
  EXPECT_FALSE(tidy.accepts(R"({"a":1,"c":2})"));
  EXPECT_TRUE(exact.accepts(R"({"a":1,"c":2})"));
  // additionalProperties and unevaluatedProperties keep their meaning.
  const Compiled open(R"({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}})", tidy_form());
  EXPECT_TRUE(open.accepts(R"({"a":"x","c":2})"));
  EXPECT_FALSE(open.accepts(R"({"a":"x","c":"y"})"));
  const Compiled unevaluated(R"({"properties": {"a": {}}, "unevaluatedProperties": true})", tidy_form());
  EXPECT_TRUE(unevaluated.accepts(R"({"a":1,"c":2})"));
  // minProperties past what is listed needs other members.
  const Compiled needs(R"({"properties": {"a": {}}, "minProperties": 2})", tidy_form());
  ASSERT_TRUE(needs.ok()) << needs.error();
  EXPECT_TRUE(needs.accepts(R"({"a":1,"c":2})"));
  const Compiled impossible(R"({"properties": {"a": false}, "minProperties": 1})", tidy_form());
  ASSERT_TRUE(impossible.ok()) << impossible.error();
  EXPECT_TRUE(impossible.accepts(R"({"c":2})")) << "the listed member cannot stand";
  // A required key that properties does not describe is listed, with any value.
  const Compiled required(R"({"properties": {"a": {}}, "required": ["z"]})", tidy_form());
  EXPECT_TRUE(required.accepts(R"({"z":[1]})"));
  EXPECT_FALSE(required.accepts(R"({"z":[1],"y":1})"));
  // An object that names nothing stays open.
  const Compiled any(R"({"type": "object"})", tidy_form());
  EXPECT_TRUE(any.accepts(R"({"x": {"y": [1, "z"]}})"));
  // Objects nested in a value listed by a $ref are tidy too.
  const Compiled nested(R"({"$defs": {"p": {"properties": {"q": {}}}}, "properties": {"p": {"$ref": "#/$defs/p"}}})",
                        tidy_form());
  EXPECT_TRUE(nested.accepts(R"({"p":{"q":1}})"));
  EXPECT_FALSE(nested.accepts(R"({"p":{"q":1,"r":2}})"));
}

TEST(JsonSchemaTidyForm, PatternPropertiesWithoutAdditionalAllowOnlyMatchingKeys) {
  const std::string schema = R"({"properties": {"id": {"type": "integer"}},
                                 "patternProperties": {"^x-": {"type": "string"}}})";
  const Compiled tidy(schema, tidy_form());
  ASSERT_TRUE(tidy.ok()) << tidy.error();
  EXPECT_TRUE(tidy.accepts(R"({"id":1,"x-a":"b"})"));
  EXPECT_FALSE(tidy.accepts(R"({"id":1,"x-a":2})"));
  EXPECT_FALSE(tidy.accepts(R"({"id":1,"y":"b"})"));
  EXPECT_FALSE(Compiled(schema).ok()) << "exact: keys not matching would need the pattern's complement";
}

TEST(JsonSchemaTidyForm, ItemsPastAnUndescribedPrefixOnlyAsFarAsMinItemsNeeds) {
  const Compiled prefix(R"({"prefixItems": [{"type": "integer"}, {"type": "string"}]})", tidy_form());
  ASSERT_TRUE(prefix.ok()) << prefix.error();
  EXPECT_TRUE(prefix.accepts(R"([1,"a"])"));
  EXPECT_TRUE(prefix.accepts(R"([1])"));
  EXPECT_FALSE(prefix.accepts(R"([1,"a",null])"));
  EXPECT_TRUE(Compiled(R"({"prefixItems": [{"type": "integer"}]})").accepts(R"([1,null])"));
  const Compiled needs(R"({"prefixItems": [{"type": "integer"}], "minItems": 3})", tidy_form());
  EXPECT_TRUE(needs.accepts(R"([1,null,{}])"));
  EXPECT_FALSE(needs.accepts(R"([1,null,{},2])"));
  const Compiled described(R"({"prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}})", tidy_form());
  EXPECT_TRUE(described.accepts(R"([1,true,false])"));
  const Compiled draft7(R"({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}]})",
                        tidy_form());
  EXPECT_FALSE(draft7.accepts(R"([1,2])"));
  EXPECT_TRUE(Compiled(R"({"type": "array"})", tidy_form()).accepts(R"([1, [2], {"a": 3}])"));
}

TEST(JsonSchemaRefusals, StrictRefusesAndLenientListsByPointer) {
  const std::string schema =
      R"({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true,
          "items": {"not": {"type": "string", "minLength": 2}}}}})";
  const Compiled strict(schema);
  ASSERT_FALSE(strict.ok());
  auto refused = parse_refusal(strict.error());
  ASSERT_TRUE(refused.has_value()) << strict.error();
  EXPECT_EQ(refused->keyword, "uniqueItems");
  EXPECT_EQ(refused->pointer, "/properties/tags/uniqueItems");

  SchemaOptions lenient;
  lenient.strict = false;
  const Compiled listed(schema, lenient);
  ASSERT_TRUE(listed.ok()) << listed.error();
  std::vector<Unenforced> expected{{"uniqueItems", "/properties/tags/uniqueItems"},
                                   {"not", "/properties/tags/items/not"}};
  std::vector<Unenforced> got = listed.unenforced();
  auto order = [](const Unenforced& a, const Unenforced& b) { return a.pointer < b.pointer; };
  std::sort(expected.begin(), expected.end(), order);
  std::sort(got.begin(), got.end(), order);
  EXPECT_EQ(got, expected);
  // What is left is enforced: an array of anything.
  EXPECT_TRUE(listed.accepts(R"({"tags":["a","a"]})"));
  EXPECT_FALSE(listed.accepts(R"({"tags":{}})"));
}

TEST(JsonSchemaObjects, PatternKeysBesideAdditionalPropertiesFalse) {
  const Compiled schema(R"({"properties": {"id": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}},
                            "additionalProperties": false})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts(R"({"id":1,"x-a":"b","x-":""})"));
  EXPECT_FALSE(schema.accepts(R"({"x-a":1})"));
  EXPECT_FALSE(schema.accepts(R"({"y":"b"})"));
  EXPECT_FALSE(schema.accepts(R"({"id":"1"})"));
  // Without additionalProperties: false, the keys that do not match would be free: not built.
  const Compiled open(R"({"patternProperties": {"^x-": {"type": "string"}}})");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(parse_refusal(open.error())->keyword, "patternProperties");
}

TEST(JsonSchemaObjects, UnevaluatedPropertiesSeeTheirOwnSubschemas) {
  const Compiled schema(R"({"$schema": "https://json-schema.org/draft/2020-12/schema",
                            "allOf": [{"properties": {"a": {"type": "integer"}}}], "properties": {"b": true},
                            "unevaluatedProperties": false})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts(R"({"a":1,"b":[]})"));
  EXPECT_FALSE(schema.accepts(R"({"a":1,"c":0})"));
  EXPECT_FALSE(schema.accepts(R"({"a":"1"})"));
  // Beside anyOf, which branches evaluated what is not tracked.
  const Compiled branches(
      R"({"anyOf": [{"properties": {"a": true}}, {"properties": {"b": true}}], "unevaluatedProperties": false})");
  ASSERT_FALSE(branches.ok());
  EXPECT_EQ(parse_refusal(branches.error())->keyword, "unevaluatedProperties");
}

TEST(JsonSchemaCombinators, OneOfOfObjectsApartByARequiredKeyOrATag) {
  const Compiled closed(
      R"({"oneOf": [{"type": "object", "properties": {"a": {}}, "required": ["a"], "additionalProperties": false},
                                      {"type": "object", "properties": {"b": {}}, "additionalProperties": false}]})");
  ASSERT_TRUE(closed.ok()) << closed.error();
  EXPECT_TRUE(closed.accepts(R"({"a":1})"));
  EXPECT_TRUE(closed.accepts(R"({"b":1})"));
  EXPECT_TRUE(closed.accepts("{}"));
  EXPECT_FALSE(closed.accepts(R"({"a":1,"b":1})"));
  const Compiled tagged(
      R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind"]},
                                      {"type": "object", "properties": {"kind": {"enum": ["square", "box"]}}, "required": ["kind"]}]})");
  ASSERT_TRUE(tagged.ok()) << tagged.error();
  EXPECT_TRUE(tagged.accepts(R"({"kind":"circle","r":1})"));
  EXPECT_TRUE(tagged.accepts(R"({"kind":"box","r":"x"})"));
  EXPECT_FALSE(tagged.accepts(R"({"kind":"circle","r":"x"})"));
  EXPECT_FALSE(tagged.accepts(R"({"kind":"oval"})"));
}

TEST(JsonSchemaRefs, Draft7IgnoresTheSiblingsOfRef) {
  SchemaOptions options;
  options.default_draft = SchemaDraft::draft7;
  const std::string schema =
      R"({"definitions": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/definitions/n", "maximum": 2}}})";
  const Compiled draft7(schema, options);
  ASSERT_TRUE(draft7.ok()) << draft7.error();
  EXPECT_TRUE(draft7.accepts(R"({"a":5})"));
  const Compiled draft2020(schema);
  ASSERT_TRUE(draft2020.ok()) << draft2020.error();
  EXPECT_FALSE(draft2020.accepts(R"({"a":5})"));
  EXPECT_TRUE(draft2020.accepts(R"({"a":2})"));
}

TEST(JsonSchemaRefs, RemoteDocumentsComeFromTheLoader) {
  SchemaOptions options;
  options.load_document = [](std::string_view uri) -> std::optional<json> {
    if (uri == "https://example.com/defs.json")
      return json::parse(R"({"$defs": {"name": {"type": "string", "maxLength": 2}}})");
    return std::nullopt;
  };
  const Compiled schema(R"({"$id": "https://example.com/root.json", "items": {"$ref": "defs.json#/$defs/name"}})",
                        options);
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(schema.accepts(R"(["ab","c"])"));
  EXPECT_FALSE(schema.accepts(R"(["abc"])"));
  const Compiled unknown(R"({"$ref": "https://example.com/other.json"})", options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(parse_refusal(unknown.error())->keyword, "$ref");
}

TEST(JsonSchemaRefusals, ASchemaWithoutValuesHasNoGrammar) {
  for (const char* schema : {"false", R"({"enum": []})", R"({"type": "integer", "minimum": 3, "maximum": 2})",
                             R"({"allOf": [{"type": "string"}, {"type": "null"}]})"}) {
    auto compiled = compile_json_schema(json::parse(schema));
    ASSERT_FALSE(compiled.ok()) << schema;
    EXPECT_EQ(compiled.error().message, kSchemaAcceptsNothing) << schema;
  }
}

TEST(JsonSchemaRefusals, ParseRefusal) {
  auto parsed = parse_refusal("keyword 'uniqueItems' at /properties/tags/uniqueItems: uniqueness is not enforced");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->keyword, "uniqueItems");
  EXPECT_EQ(parsed->pointer, "/properties/tags/uniqueItems");
  EXPECT_FALSE(parse_refusal("the grammar has 5000000 items").has_value());
}

}  // namespace
}  // namespace kipp::grammar
