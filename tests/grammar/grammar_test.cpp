// The grammar form and the matcher on grammars built by hand, checked against what each grammar
// says by construction: sentences, prefixes, the byte where a text stops being a prefix.
#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace kipp::grammar {
namespace {

std::shared_ptr<Automaton> automaton_of(Result<Grammar> grammar) {
  EXPECT_TRUE(grammar.ok()) << grammar.error().message;
  auto automaton = Automaton::create(std::move(grammar).value());
  EXPECT_TRUE(automaton.ok()) << automaton.error().message;
  return automaton.value();
}

TextCheck checked(Automaton& automaton, std::string_view text) {
  auto result = check_text(automaton, text);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.value();
}

bool complete(Automaton& automaton, std::string_view text) { return checked(automaton, text).complete; }

TEST(GrammarMatcher, LiteralAlternativesAndPrefixes) {
  GrammarBuilder b;
  const RuleId root = b.add("root", {b.literal("cat"), b.literal("car"), b.literal("")});
  auto a = automaton_of(std::move(b).finish(root));
  EXPECT_TRUE(complete(*a, "cat"));
  EXPECT_TRUE(complete(*a, "car"));
  EXPECT_TRUE(complete(*a, ""));
  EXPECT_FALSE(complete(*a, "ca"));
  EXPECT_TRUE(checked(*a, "ca").prefix);
  const TextCheck bad = checked(*a, "cab");
  EXPECT_FALSE(bad.prefix);
  EXPECT_EQ(bad.valid_bytes, 2u);
  EXPECT_FALSE(checked(*a, "cats").prefix);
  EXPECT_EQ(checked(*a, "cats").valid_bytes, 3u);
}

TEST(GrammarMatcher, RepetitionBounds) {
  GrammarBuilder b;
  const Item x = b.bytes(ByteSet::of('x'));
  const RuleId two_to_four = b.repeat("x24", x, 2, 4);
  const RuleId star = b.repeat("xs", x, 0, GrammarBuilder::kUnbounded);
  const RuleId root =
      b.add("root", {{GrammarBuilder::call(two_to_four), b.bytes(ByteSet::of('-')), GrammarBuilder::call(star)}});
  auto a = automaton_of(std::move(b).finish(root));
  EXPECT_FALSE(complete(*a, "x-"));
  EXPECT_TRUE(complete(*a, "xx-"));
  EXPECT_TRUE(complete(*a, "xxxx-"));
  EXPECT_FALSE(checked(*a, "xxxxx-").prefix);
  EXPECT_EQ(checked(*a, "xxxxx-").valid_bytes, 4u);
  // Right recursion keeps the stacks flat: a long run adds no states after the first few.
  std::string long_run = "xx-" + std::string(5000, 'x');
  EXPECT_TRUE(complete(*a, long_run));
  EXPECT_LT(a->state_count(), 20u);
}

TEST(GrammarMatcher, RecursionNestsBrackets) {
  // value ::= "[" (value ("," value)*)? "]" | "1"
  GrammarBuilder b;
  const RuleId value = b.declare("value");
  const RuleId more = b.declare("more");
  b.set_alternatives(more, {{b.bytes(ByteSet::of(',')), GrammarBuilder::call(value), GrammarBuilder::call(more)}, {}});
  b.set_alternatives(value, {{b.bytes(ByteSet::of('[')), GrammarBuilder::call(value), GrammarBuilder::call(more),
                              b.bytes(ByteSet::of(']'))},
                             {b.bytes(ByteSet::of('[')), b.bytes(ByteSet::of(']'))},
                             b.literal("1")});
  auto a = automaton_of(std::move(b).finish(value));
  EXPECT_TRUE(complete(*a, "[]"));
  EXPECT_TRUE(complete(*a, "[1,[1,[]],[[[1]]]]"));
  EXPECT_FALSE(complete(*a, "[1,[1]"));
  EXPECT_TRUE(checked(*a, "[1,[1]").prefix);
  EXPECT_EQ(checked(*a, "[1,]").valid_bytes, 3u);
  EXPECT_EQ(checked(*a, "[1]]").valid_bytes, 3u);
}

TEST(GrammarMatcher, Utf8ClassesCoverEveryLengthAndNoSurrogate) {
  GrammarBuilder b;
  const RuleId not_a = b.utf8_class("not-a", {{'a', 'a'}}, true);
  const RuleId root = b.repeat("root", GrammarBuilder::call(not_a), 0, GrammarBuilder::kUnbounded);
  auto a = automaton_of(std::move(b).finish(root));
  EXPECT_TRUE(complete(
      *a, "b\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(checked(*a, "xa").prefix);
  EXPECT_FALSE(checked(*a, "\xed\xa0\x80").prefix);  // U+D800, a surrogate
  EXPECT_EQ(checked(*a, "\xed\xa0\x80").valid_bytes, 1u);
  EXPECT_FALSE(checked(*a, "\xc0\x80").prefix);          // an overlong form
  EXPECT_FALSE(checked(*a, "\xf4\x90\x80\x80").prefix);  // past U+10FFFF
  EXPECT_FALSE(complete(*a, "\xe0\xa0"));                // a character cut short
  EXPECT_TRUE(checked(*a, "\xe0\xa0").prefix);

  GrammarBuilder greek;
  const RuleId alpha_to_omega = greek.utf8_class("greek", {{0x3B1, 0x3C9}}, false);
  auto g = automaton_of(std::move(greek).finish(alpha_to_omega));
  EXPECT_TRUE(complete(*g, "\xce\xb1"));   // α
  EXPECT_TRUE(complete(*g, "\xcf\x89"));   // ω
  EXPECT_FALSE(complete(*g, "\xce\xb0"));  // ΰ, one before α
  EXPECT_FALSE(complete(*g, "\xcf\x8a"));  // ϊ, one after ω
}

// A permutation: the members {a, b (required), c}, each at most once, any order, separated by
// ',', with any number of additional 'x' members.
std::shared_ptr<Automaton> members_automaton(uint32_t min, uint32_t max, bool additional) {
  GrammarBuilder b;
  Permutation p;
  p.members = {{b.add("a", {b.literal("a")}), false},
               {b.add("b", {b.literal("b")}), true},
               {b.add("c", {b.literal("c")}), false}};
  if (additional) p.additional = b.add("x", {b.literal("x")});
  p.separator = b.add("comma", {b.literal(",")});
  p.min_members = min;
  p.max_members = max;
  const Item members = b.permutation(p);
  const RuleId root = b.add("root", {{b.bytes(ByteSet::of('{')), members, b.bytes(ByteSet::of('}'))}});
  return automaton_of(std::move(b).finish(root));
}

TEST(GrammarMatcher, PermutationsTakeAnyOrderOnce) {
  auto a = members_automaton(0, Permutation::kUnbounded, true);
  for (const char* text : {"{b}", "{a,b}", "{b,a}", "{c,b,a}", "{a,c,b}", "{x,b,x,x}", "{x,c,x,b,a}"})
    EXPECT_TRUE(complete(*a, text)) << text;
  for (const char* text : {"{}", "{a}", "{a,c}", "{b,b}", "{a,b,a}", "{b,}", "{,b}", "{x}"})
    EXPECT_FALSE(complete(*a, text)) << text;
  EXPECT_EQ(checked(*a, "{b,b").valid_bytes, 3u);
}

TEST(GrammarMatcher, PermutationCounts) {
  auto a = members_automaton(2, 3, true);
  EXPECT_FALSE(complete(*a, "{b}"));
  EXPECT_TRUE(complete(*a, "{b,x}"));
  EXPECT_TRUE(complete(*a, "{x,b,x}"));
  EXPECT_FALSE(checked(*a, "{x,b,x,").prefix);
  auto closed = members_automaton(0, Permutation::kUnbounded, false);
  EXPECT_FALSE(checked(*closed, "{b,x").prefix);
}

TEST(GrammarMatcher, PermutationsOfferNoMemberThatLeavesNoWayToFinish) {
  // At most two members, b required: after an optional one, only b may follow.
  auto at_most_two = members_automaton(0, 2, false);
  EXPECT_TRUE(complete(*at_most_two, "{a,b}"));
  EXPECT_TRUE(checked(*at_most_two, "{a,").prefix);
  EXPECT_FALSE(checked(*at_most_two, "{a,c").prefix);
  EXPECT_EQ(checked(*at_most_two, "{a,c").valid_bytes, 3u);
  // At least three members and no additional ones: all of a, b, c; the end is not offered early.
  auto all_three = members_automaton(3, Permutation::kUnbounded, false);
  EXPECT_TRUE(complete(*all_three, "{c,a,b}"));
  EXPECT_FALSE(checked(*all_three, "{c,b}").prefix);
  // Nothing left to offer after the last member: no separator either.
  auto one = members_automaton(0, 1, false);
  EXPECT_TRUE(complete(*one, "{b}"));
  EXPECT_FALSE(checked(*one, "{b,").prefix);
}

TEST(GrammarMatcher, UnproductiveBranchesAreNeverEntered) {
  // root ::= "a" loop | "b" ; loop ::= "x" loop (never ends): "a" must not be a prefix.
  GrammarBuilder b;
  const RuleId loop = b.declare("loop");
  b.set_alternatives(loop, {{b.bytes(ByteSet::of('x')), GrammarBuilder::call(loop)}});
  const RuleId root = b.add("root", {{b.bytes(ByteSet::of('a')), GrammarBuilder::call(loop)}, b.literal("b")});
  auto a = automaton_of(std::move(b).finish(root));
  EXPECT_FALSE(checked(*a, "a").prefix);
  EXPECT_TRUE(complete(*a, "b"));
}

TEST(GrammarCheck, RefusesLeftRecursionAndUndefinedRules) {
  GrammarBuilder b;
  const RuleId expr = b.declare("expr");
  const RuleId opt = b.add("opt", {b.literal(""), b.literal(" ")});
  b.set_alternatives(expr, {{GrammarBuilder::call(opt), GrammarBuilder::call(expr), b.bytes(ByteSet::of('+'))},
                            b.literal("1")});
  auto refused = std::move(b).finish(expr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("left recursive (expr -> expr"), std::string::npos) << refused.error().message;

  GrammarBuilder undefined;
  const RuleId missing = undefined.declare("missing");
  const RuleId root = undefined.add("root", {{GrammarBuilder::call(missing)}});
  auto result = std::move(undefined).finish(root);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("'missing' is used but never defined"), std::string::npos);
}

TEST(GrammarCheck, DigestFollowsStructureNotNames) {
  const auto build = [](const char* name, const char* text) {
    GrammarBuilder b;
    const RuleId root = b.add(name, {b.literal(text)});
    return std::move(b).finish(root).value().digest();
  };
  EXPECT_EQ(build("root", "abc"), build("other", "abc"));
  EXPECT_NE(build("root", "abc"), build("root", "abd"));
}

}  // namespace
}  // namespace kipp::grammar
