// The GBNF compiler against what each grammar says when read by hand: llama.cpp's published
// grammars (KIPP_SHARED_DATA/llama.cpp-grammars, read in place) on sentences they must accept and
// near misses they must refuse at a known byte, each piece of the syntax on small grammars, and
// the messages for malformed grammars, which must name the line:column at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace kipp::grammar {
namespace {

namespace fs = std::filesystem;

const fs::path kGrammarsDir = fs::path(KIPP_SHARED_DATA) / "llama.cpp-grammars";

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The automaton of a grammar that must compile; null (with the failure recorded) otherwise.
std::shared_ptr<Automaton> compiled(std::string_view gbnf, std::string_view root = "root") {
  Result<Grammar> grammar = compile_gbnf(gbnf, root);
  if (!grammar) {
    ADD_FAILURE() << grammar.error().message << "\nin:\n" << gbnf;
    return nullptr;
  }
  Result<std::shared_ptr<Automaton>> automaton = Automaton::create(std::move(grammar).value());
  if (!automaton) {
    ADD_FAILURE() << automaton.error().message;
    return nullptr;
  }
  return automaton.value();
}

std::shared_ptr<Automaton> published(const std::string& file) {
  const fs::path path = kGrammarsDir / file;
  if (!fs::exists(path)) {
    ADD_FAILURE() << path << " is missing";
    return nullptr;
  }
  return compiled(file_text(path));
}

::testing::AssertionResult described(const TextCheck& check, std::string_view text) {
  return ::testing::AssertionFailure() << "text \"" << text << "\": complete " << check.complete << ", prefix "
                                       << check.prefix << ", valid_bytes " << check.valid_bytes;
}

// The whole text is a sentence.
::testing::AssertionResult accepts(Automaton& automaton, std::string_view text) {
  Result<TextCheck> check = check_text(automaton, text);
  if (!check) return ::testing::AssertionFailure() << check.error().message;
  if (check->complete && check->prefix && check->valid_bytes == text.size()) return ::testing::AssertionSuccess();
  return described(*check, text);
}

// The text is a prefix of a sentence but not one itself.
::testing::AssertionResult unfinished(Automaton& automaton, std::string_view text) {
  Result<TextCheck> check = check_text(automaton, text);
  if (!check) return ::testing::AssertionFailure() << check.error().message;
  if (!check->complete && check->prefix && check->valid_bytes == text.size()) return ::testing::AssertionSuccess();
  return described(*check, text);
}

// The text stops being a prefix of any sentence at byte `offset`.
::testing::AssertionResult rejected_at(Automaton& automaton, std::string_view text, size_t offset) {
  Result<TextCheck> check = check_text(automaton, text);
  if (!check) return ::testing::AssertionFailure() << check.error().message;
  if (!check->complete && !check->prefix && check->valid_bytes == offset) return ::testing::AssertionSuccess();
  return described(*check, text);
}

// The grammar is refused with a message that starts with `position` ("line:column: ", or "" for
// none) and says `what`.
::testing::AssertionResult refused(std::string_view gbnf, std::string_view position, std::string_view what) {
  Result<Grammar> grammar = compile_gbnf(gbnf);
  if (grammar) return ::testing::AssertionFailure() << "compiled:\n" << gbnf;
  const std::string& message = grammar.error().message;
  if (message.starts_with(position) && message.find(what) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << position
                                       << "\" at its start or \"" << what << "\"";
}

// --- llama.cpp's grammars -------------------------------------------------------------------

TEST(GbnfLlamaCppGrammars, EveryFileCompiles) {
  ASSERT_TRUE(fs::is_directory(kGrammarsDir)) << kGrammarsDir << " is missing";
  size_t files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(kGrammarsDir)) {
    if (entry.path().extension() != ".gbnf") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    EXPECT_NE(compiled(file_text(entry.path())), nullptr);
  }
  EXPECT_GT(files, 0u) << "no .gbnf files in " << kGrammarsDir;
}

TEST(GbnfLlamaCppGrammars, Json) {
  auto json = published("json.gbnf");
  ASSERT_NE(json, nullptr);
  EXPECT_TRUE(accepts(*json, R"({"a": [1, 2.5e3, true, null]})"));
  EXPECT_TRUE(accepts(*json, R"({"k": ["x\u00e9\n\"", -0.5, {}], "b": false})"));
  EXPECT_TRUE(accepts(*json, "{\"\xC3\xA9\": \"\xE6\x97\xA5\xE6\x9C\xAC\"}"));
  EXPECT_TRUE(accepts(*json, "{\n  \"a\": 1e0}"));
  EXPECT_TRUE(unfinished(*json, R"({"a": [1, 2)"));
  EXPECT_TRUE(rejected_at(*json, R"({"a" 1})", 5));    // ':' expected after the key
  EXPECT_TRUE(rejected_at(*json, R"({"a":  1})", 6));  // ws is at most one space here
  EXPECT_TRUE(rejected_at(*json, R"({"a": 01})", 7));  // no leading zeros
  EXPECT_TRUE(rejected_at(*json, R"({"a": tru})", 9));
  EXPECT_TRUE(rejected_at(*json, R"({"a": 1e10})", 9));     // this grammar's exponent digits after the first are [1-9]
  EXPECT_TRUE(rejected_at(*json, "{\"a\": \"\x01\"}", 7));  // raw control characters are not string characters
  EXPECT_TRUE(rejected_at(*json, R"({"a": "\q"})", 8));     // not a JSON escape
  EXPECT_TRUE(rejected_at(*json, "[1]", 0));                // the root is an object
}

TEST(GbnfLlamaCppGrammars, JsonArr) {
  auto json_arr = published("json_arr.gbnf");
  ASSERT_NE(json_arr, nullptr);
  EXPECT_TRUE(accepts(*json_arr, "[\n1,\n\"a\",\n{\"b\": null}]"));
  EXPECT_TRUE(accepts(*json_arr, "[\n]"));
  EXPECT_TRUE(accepts(*json_arr, "[\n1e10]"));  // unlike json.gbnf: [1-9] [0-9]{0,15}
  EXPECT_TRUE(rejected_at(*json_arr, "[\n1e0]", 4));
  EXPECT_TRUE(rejected_at(*json_arr, "[\n1]\n", 4));   // nothing after the root array
  EXPECT_TRUE(rejected_at(*json_arr, "[1]", 1));       // "[\n" opens it
  EXPECT_TRUE(rejected_at(*json_arr, "[\n1, 2]", 4));  // elements are separated by ",\n"
}

TEST(GbnfLlamaCppGrammars, Arithmetic) {
  auto arithmetic = published("arithmetic.gbnf");
  ASSERT_NE(arithmetic, nullptr);
  EXPECT_TRUE(accepts(*arithmetic, "1+2=3\n"));
  EXPECT_TRUE(accepts(*arithmetic, "(x1 +2) *y= 10\n"));
  EXPECT_TRUE(accepts(*arithmetic, "a=b\nc_d=1\n"));
  EXPECT_TRUE(unfinished(*arithmetic, "1=2"));
  EXPECT_TRUE(rejected_at(*arithmetic, "1+=2\n", 2));
  EXPECT_TRUE(rejected_at(*arithmetic, "X=1\n", 0));
  EXPECT_TRUE(rejected_at(*arithmetic, "1+ 2=3\n", 2));  // an operator is followed by a term, not by spaces
}

TEST(GbnfLlamaCppGrammars, List) {
  auto list = published("list.gbnf");
  ASSERT_NE(list, nullptr);
  EXPECT_TRUE(accepts(*list, "- milk\n- eggs \xC3\xBC\n"));
  EXPECT_TRUE(unfinished(*list, ""));
  EXPECT_TRUE(unfinished(*list, "- milk"));
  EXPECT_TRUE(rejected_at(*list, "- a\xE2\x80\xA8z\n", 5));  // U+2028 is excluded (E2 80 A8)
  EXPECT_TRUE(accepts(*list, "- a\xE2\x80\xA7z\n"));         // U+2027 is not
  EXPECT_TRUE(rejected_at(*list, "- \xC2\x85\n", 3));        // nor is U+0085
  EXPECT_TRUE(rejected_at(*list, "- \x0b\n", 2));
  EXPECT_TRUE(rejected_at(*list, "- \n", 2));  // an item has at least one character
  EXPECT_TRUE(rejected_at(*list, "-a\n", 1));
}

TEST(GbnfLlamaCppGrammars, Chess) {
  auto chess = published("chess.gbnf");
  ASSERT_NE(chess, nullptr);
  EXPECT_TRUE(accepts(*chess, "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n"));
  EXPECT_TRUE(accepts(*chess, "1. e4 e5\n12. O-O-O exd8=Q+\n"));
  EXPECT_TRUE(unfinished(*chess, "1. e4 e5\n"));  // at least one numbered line follows the first
  EXPECT_TRUE(rejected_at(*chess, "1. e9 e5\n2. a3 a4\n", 4));
  EXPECT_TRUE(rejected_at(*chess, "1. e4 e5\n0. a3 a4\n", 9));
  EXPECT_TRUE(rejected_at(*chess, "1. Ze4", 3));
}

TEST(GbnfLlamaCppGrammars, C) {
  auto c = published("c.gbnf");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(accepts(*c, ""));
  EXPECT_TRUE(accepts(*c, "int main(){return 0;}"));
  EXPECT_TRUE(accepts(*c, "int f(int x){x = x+1;return x;}float g(){while(a<b){a = a*2;}}"));
  EXPECT_TRUE(accepts(*c, "char h(){// note\n/* a * b */if(a==b){}else{}}"));
  EXPECT_TRUE(rejected_at(*c, "int main(){return 0}", 19));  // ';' missing
  EXPECT_TRUE(rejected_at(*c, "intmain(){}", 3));            // a type is followed by whitespace
  EXPECT_TRUE(rejected_at(*c, "int 9a(){}", 4));
}

TEST(GbnfLlamaCppGrammars, English) {
  auto english = published("english.gbnf");
  ASSERT_NE(english, nullptr);
  EXPECT_TRUE(accepts(*english, "Hello, world! 42 (yes)"));
  EXPECT_TRUE(accepts(*english, "[a]\\{b}|~^_`-\"#$%&'*+,./:;<=>?@\tok\nend"));
  EXPECT_TRUE(unfinished(*english, "word "));
  EXPECT_TRUE(rejected_at(*english, "Hello  world", 6));
  EXPECT_TRUE(rejected_at(*english, "caf\xC3\xA9", 3));
  EXPECT_TRUE(rejected_at(*english, " x", 0));
}

TEST(GbnfLlamaCppGrammars, Japanese) {
  auto japanese = published("japanese.gbnf");
  ASSERT_NE(japanese, nullptr);
  // こんにちは、世界。 (hiragana U+3053..., U+3001, CJK U+4E16 U+754C, U+3002)
  EXPECT_TRUE(accepts(*japanese,
                      "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF\xE3\x80\x81"
                      "\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82"));
  // カタカナ 日本語\nです
  EXPECT_TRUE(accepts(*japanese,
                      "\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"
                      "\n\xE3\x81\xA7\xE3\x81\x99"));
  EXPECT_TRUE(unfinished(*japanese, "\xE6\x97\xA5\xE6"));  // 日 and the first byte of 本
  EXPECT_TRUE(unfinished(*japanese, "\xE6\x97\xA5 "));
  EXPECT_TRUE(rejected_at(*japanese,
                          "\xE6\x97\xA5\xE6\x9C\xAC"
                          "a",
                          6));                             // 日本a
  EXPECT_TRUE(rejected_at(*japanese, "\xEF\xBD\xB1", 0));  // halfwidth ｱ U+FF71
  EXPECT_TRUE(rejected_at(*japanese, "\xE3\x80\x80", 2));  // U+3000 is just below the punctuation range
  EXPECT_TRUE(rejected_at(*japanese, "\xE3\x82\xA0", 2));  // U+30A0 lies between hiragana and katakana
}

// --- the syntax, piece by piece ---------------------------------------------------------------

TEST(GbnfSyntax, LiteralEscapes) {
  auto a = compiled(R"gbnf(root ::= "\x41\u00e9\U0001F600\n\r\t\\\"\[\]\-" "\u00E9")gbnf");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(accepts(*a, "A\xC3\xA9\xF0\x9F\x98\x80\n\r\t\\\"[]-\xC3\xA9"));
  EXPECT_TRUE(rejected_at(*a, "\\x41", 0));
  auto raw = compiled("root ::= \"\xE6\x97\xA5\" \"#\" \"\"");
  ASSERT_NE(raw, nullptr);
  EXPECT_TRUE(accepts(*raw, "\xE6\x97\xA5#"));
  EXPECT_TRUE(rejected_at(*raw, "\xE6\x97\xA6", 2));
  // \xHH names a code point, as in llama.cpp: U+00E9, two bytes of UTF-8, not the byte E9.
  auto latin = compiled(R"gbnf(root ::= "\xe9")gbnf");
  ASSERT_NE(latin, nullptr);
  EXPECT_TRUE(accepts(*latin, "\xC3\xA9"));
  EXPECT_TRUE(rejected_at(*latin, "\xE9", 0));
  auto nul = compiled(R"gbnf(root ::= "a\x00b")gbnf");
  ASSERT_NE(nul, nullptr);
  EXPECT_TRUE(accepts(*nul, std::string_view("a\0b", 3)));
}

TEST(GbnfSyntax, ClassEscapesAndRanges) {
  auto a = compiled(R"gbnf(root ::= [\x41-\x43\u00e9\U0001F600\n\t\]\[\\\-^"]+)gbnf");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(accepts(*a, "ABC\xC3\xA9\xF0\x9F\x98\x80\n\t][\\-^\""));
  EXPECT_TRUE(rejected_at(*a, "AD", 1));
  EXPECT_TRUE(rejected_at(*a, "\xC3\xA8", 1));  // è: same first byte as é
  EXPECT_TRUE(rejected_at(*a, "\xF0\x9F\x98\x81", 3));
  // '-' first or last is itself; "[]" matches nothing; "[^]" any code point.
  auto dashes = compiled("root ::= [-a] [b-]");
  ASSERT_NE(dashes, nullptr);
  for (std::string_view in : {"ab", "a-", "-b", "--"}) EXPECT_TRUE(accepts(*dashes, in));
  EXPECT_TRUE(rejected_at(*dashes, "c", 0));
  EXPECT_TRUE(rejected_at(*dashes, "aa", 1));
  auto empty = compiled("root ::= \"x\" | \"y\" []");
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(accepts(*empty, "x"));
  EXPECT_TRUE(rejected_at(*empty, "y", 0));  // no sentence starts with it
  auto any = compiled("root ::= [^]");
  ASSERT_NE(any, nullptr);
  for (std::string_view in : {"]", "^", "\xF0\x9F\x98\x80"}) EXPECT_TRUE(accepts(*any, in));
  auto ranges = compiled("root ::= [a-cx-z\xC3\xA0-\xC3\xA2]");  // [a-cx-zà-â]
  ASSERT_NE(ranges, nullptr);
  for (std::string_view in : {"a", "b", "c", "x", "z", "\xC3\xA0", "\xC3\xA1", "\xC3\xA2"})
    EXPECT_TRUE(accepts(*ranges, in));
  for (std::string_view out : {"d", "w", "`", "{"}) EXPECT_TRUE(rejected_at(*ranges, out, 0));
  EXPECT_TRUE(rejected_at(*ranges, "\xC3\xA3", 1));
}

TEST(GbnfSyntax, NegatedClassesOverMultiByteCodePoints) {
  auto a = compiled("root ::= [^a-z\xC3\xA9\xE2\x82\xAC]");  // [^a-zé€]
  ASSERT_NE(a, nullptr);
  for (std::string_view in : {"A", "\xC3\xA8", "\xE2\x82\xAD", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"})
    EXPECT_TRUE(accepts(*a, in));
  EXPECT_TRUE(rejected_at(*a, "m", 0));
  EXPECT_TRUE(rejected_at(*a, "\xC3\xA9", 1));
  EXPECT_TRUE(rejected_at(*a, "\xE2\x82\xAC", 2));
  EXPECT_TRUE(rejected_at(*a, "\xED\xA0\x80", 1));  // a surrogate is no code point of UTF-8 text
  EXPECT_TRUE(rejected_at(*a, "\xC0\x80", 0));      // nor is an overlong form
  EXPECT_TRUE(rejected_at(*a, "AB", 1));
}

TEST(GbnfSyntax, DotIsOneCodePointOfOneToFourBytes) {
  auto a = compiled("root ::= .");
  ASSERT_NE(a, nullptr);
  for (std::string_view in : {"a", "\x7F", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
                              "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"})
    EXPECT_TRUE(accepts(*a, in));
  EXPECT_TRUE(accepts(*a, std::string_view("\0", 1)));
  EXPECT_TRUE(unfinished(*a, "\xE2\x82"));
  EXPECT_TRUE(rejected_at(*a, "ab", 1));
  EXPECT_TRUE(rejected_at(*a, "\x80", 0));      // a lone continuation byte
  EXPECT_TRUE(rejected_at(*a, "\xC0\x80", 0));  // overlong
  EXPECT_TRUE(rejected_at(*a, "\xC1\xBF", 0));
  EXPECT_TRUE(rejected_at(*a, "\xE0\x80\x80", 1));      // overlong three-byte form
  EXPECT_TRUE(rejected_at(*a, "\xED\xA0\x80", 1));      // U+D800
  EXPECT_TRUE(rejected_at(*a, "\xED\xBF\xBF", 1));      // U+DFFF
  EXPECT_TRUE(rejected_at(*a, "\xF4\x90\x80\x80", 1));  // above U+10FFFF
  EXPECT_TRUE(rejected_at(*a, "\xF5\x80\x80\x80", 0));
  EXPECT_TRUE(rejected_at(*a, "\xFF", 0));
  EXPECT_TRUE(rejected_at(*a, "\xC3\x28", 1));
  auto two = compiled("root ::= .{2}");
  ASSERT_NE(two, nullptr);
  EXPECT_TRUE(accepts(*two, "a\xE2\x82\xAC"));
  EXPECT_TRUE(unfinished(*two, "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(rejected_at(*two, "abc", 2));
}

// Each repetition form on each kind of element, against its bounds: `unit` n times is a sentence
// when min <= n <= max, a prefix while n <= max, and stops at max units beyond.
TEST(GbnfSyntax, RepetitionFormsAtTheirBounds) {
  constexpr uint32_t kNone = UINT32_MAX;
  struct Form {
    const char* postfix;
    uint32_t min, max;
  };
  const Form forms[] = {{"*", 0, kNone},     {"+", 1, kNone},    {"?", 0, 1},       {"{3}", 3, 3},
                        {"{2,}", 2, kNone},  {"{2,4}", 2, 4},    {"{,2}", 0, 2},    {"{0}", 0, 0},
                        {"{ 1 , 3 }", 1, 3}, {"{0,}", 0, kNone}, {"{,}", 0, kNone}, {"{1,1}", 1, 1}};
  struct Element {
    const char* gbnf;
    const char* unit;
  };
  const Element elements[] = {{"\"a\"", "a"},           {"\"ab\"", "ab"},  {"[x-z]", "y"},
                              {"(\"p\" | \"q\")", "q"}, {"x", "\xC3\xA9"}, {"(\"a\" \"b\")", "ab"},
                              {"[^a!]", "\xE2\x82\xAC"}};
  for (const Element& element : elements)
    for (const Form& form : forms) {
      const std::string gbnf = std::string("root ::= ") + element.gbnf + form.postfix + " \"!\"\nx ::= \"\xC3\xA9\"\n";
      SCOPED_TRACE(gbnf);
      auto a = compiled(gbnf);
      ASSERT_NE(a, nullptr);
      const std::string unit = element.unit;
      for (uint32_t n = 0; n <= 6; ++n) {
        std::string text;
        for (uint32_t i = 0; i < n; ++i) text += unit;
        if (n > form.max) {
          EXPECT_TRUE(rejected_at(*a, text + "!", unit.size() * form.max)) << n;
          continue;
        }
        EXPECT_TRUE(unfinished(*a, text)) << n;
        if (n >= form.min) EXPECT_TRUE(accepts(*a, text + "!")) << n;
        else EXPECT_TRUE(rejected_at(*a, text + "!", text.size())) << n;
      }
    }
}

TEST(GbnfSyntax, RepetitionCountsUpToTheLimit) {
  auto exact = compiled("root ::= \"a\"{10000}");
  ASSERT_NE(exact, nullptr);
  EXPECT_TRUE(accepts(*exact, std::string(10000, 'a')));
  EXPECT_TRUE(unfinished(*exact, std::string(9999, 'a')));
  EXPECT_TRUE(rejected_at(*exact, std::string(10001, 'a'), 10000));
  auto bounded = compiled("root ::= \"a\"{0,10000} \"!\"");
  ASSERT_NE(bounded, nullptr);
  EXPECT_TRUE(accepts(*bounded, std::string(10000, 'a') + "!"));
  EXPECT_TRUE(rejected_at(*bounded, std::string(10001, 'a'), 10000));
  EXPECT_TRUE(refused("root ::= \"a\"{10001}", "1:14: ", "the repetition count 10001 is above the limit of 10000"));
  EXPECT_TRUE(refused("root ::= \"a\"{2,99999999999999999999999}", "1:16: ", "above the limit of 10000"));
}

TEST(GbnfSyntax, RepetitionsNestAndChain) {
  auto nested = compiled("root ::= (\"a\"{2}){3}");
  ASSERT_NE(nested, nullptr);
  EXPECT_TRUE(accepts(*nested, "aaaaaa"));
  EXPECT_TRUE(unfinished(*nested, "aaaaa"));
  EXPECT_TRUE(rejected_at(*nested, "aaaaaaa", 6));
  auto optional_part = compiled("root ::= (\"ab\" \"c\"?){2}");
  ASSERT_NE(optional_part, nullptr);
  for (std::string_view in : {"abab", "abcab", "ababc", "abcabc"}) EXPECT_TRUE(accepts(*optional_part, in));
  EXPECT_TRUE(rejected_at(*optional_part, "abcc", 3));
  // As in llama.cpp, a postfix after a postfix applies to the repetition: ("a"+)?
  auto chained = compiled("root ::= \"a\"+? \"!\"");
  ASSERT_NE(chained, nullptr);
  EXPECT_TRUE(accepts(*chained, "!"));
  EXPECT_TRUE(accepts(*chained, "aaa!"));
}

TEST(GbnfSyntax, Comments) {
  auto a = compiled(
      "# a grammar\n"
      "root ::= \"#\" [#] item # after an element\n"
      "   # a line of its own\n"
      "\n"
      "item ::= ( # inside a group\n"
      "  \"x\" # and again\n"
      "  | \"y\" ) # at the end");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(accepts(*a, "##x"));
  EXPECT_TRUE(accepts(*a, "##y"));
  EXPECT_TRUE(rejected_at(*a, "## ", 2));
}

TEST(GbnfSyntax, RulesGoOnPastANewlineOnlyAfterDefinesOrBarsOrInsideParentheses) {
  const std::string gbnf =
      "root ::=\n"
      "    \"a\" |\n"
      "    \"b\" |\n"
      "    ( \"c\"\n"
      "      \"d\" ) tail\n"
      "tail ::= \"!\"?\n";
  auto a = compiled(gbnf);
  ASSERT_NE(a, nullptr);
  for (std::string_view in : {"a", "b", "cd", "cd!"}) EXPECT_TRUE(accepts(*a, in));
  EXPECT_TRUE(rejected_at(*a, "a!", 1));
  // The same grammar with CRLF line ends.
  std::string crlf;
  for (char c : gbnf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  auto b = compiled(crlf);
  ASSERT_NE(b, nullptr);
  for (std::string_view in : {"a", "b", "cd", "cd!"}) EXPECT_TRUE(accepts(*b, in));
  // As in llama.cpp, a line that goes on with an element or a '|' is not part of the rule above.
  EXPECT_TRUE(refused("root ::= \"a\"\n  \"b\"\n", "2:3: ", "expected a rule name, found '\"'"));
  EXPECT_TRUE(refused("root ::= \"a\"\n  | \"b\"\n", "2:3: ", "only after '::=' or '|'"));
}

TEST(GbnfSyntax, NestedGroupsAndEmptyAlternatives) {
  auto a = compiled("root ::= (\"x\" (\"y\" | \"z\")* ( \"w\" | (\"v\" \"u\")+ ))? \".\"");
  ASSERT_NE(a, nullptr);
  for (std::string_view in : {".", "xw.", "xyzyw.", "xvuvu."}) EXPECT_TRUE(accepts(*a, in));
  EXPECT_TRUE(unfinished(*a, "xyv"));
  EXPECT_TRUE(rejected_at(*a, "xv.", 2));
  EXPECT_TRUE(rejected_at(*a, "x.", 1));
  auto ws = compiled("root ::= \"a\" ws \"b\" ()\nws ::= | \" \"");
  ASSERT_NE(ws, nullptr);
  EXPECT_TRUE(accepts(*ws, "ab"));
  EXPECT_TRUE(accepts(*ws, "a b"));
  EXPECT_TRUE(rejected_at(*ws, "a  b", 2));
}

TEST(GbnfSyntax, RuleNamesReferencesAndRoot) {
  // Names with digits, '-' and '_', used before they are defined, and a name directly before '('.
  auto a = compiled("root ::= en-char2_x+ tail(\"!\")\ntail ::= \"?\"\nen-char2_x ::= [a-c]");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(accepts(*a, "abc?!"));
  EXPECT_TRUE(rejected_at(*a, "abd", 2));
  auto start = compiled("start ::= \"s\" root\nroot ::= \"r\"", "start");
  ASSERT_NE(start, nullptr);
  EXPECT_TRUE(accepts(*start, "sr"));
  EXPECT_TRUE(rejected_at(*start, "r", 0));
}

// --- malformed grammars -------------------------------------------------------------------------

TEST(GbnfErrors, UnterminatedLiteralsClassesGroupsAndRepetitions) {
  EXPECT_TRUE(refused("root ::= \"abc", "1:10: ", "expected '\"' to close the string literal"));
  EXPECT_TRUE(refused("root ::= \"a\"\nx ::= [a-z", "2:7: ", "expected ']' to close the character class"));
  // Columns count characters, not bytes.
  EXPECT_TRUE(refused("root ::= \"\xE6\x97\xA5\xE6\x9C\xAC\" [", "1:15: ", "expected ']'"));
  EXPECT_TRUE(refused("root ::= (\"a\" | \"b\"\n", "2:1: ", "expected ')' to close the group opened at 1:10"));
  EXPECT_TRUE(refused("root ::= (\"a\" ]", "1:15: ", "expected ')' to close the group opened at 1:10, found ']'"));
  EXPECT_TRUE(refused("root ::= \"a\"{2,3", "1:17: ", "expected '}' to close the repetition opened at 1:13"));
  EXPECT_TRUE(refused("root ::= \"a\"{x}", "1:14: ", "expected a count or ','"));
  EXPECT_TRUE(refused("root ::= \"a\" )", "1:14: ", "expected the end of the line after rule 'root', found ')'"));
}

TEST(GbnfErrors, RulesMissingOrTwice) {
  EXPECT_TRUE(refused("root ::= \"a\"\nvalue = \"b\"", "2:7: ", "expected '::=' after the rule name 'value'"));
  EXPECT_TRUE(refused("root ::= \"a\" value\n", "1:14: ", "rule 'value' is used but never defined"));
  EXPECT_TRUE(refused("value ::= \"a\"", "", "no rule named 'root'"));
  EXPECT_TRUE(refused("", "", "no rule named 'root'"));
  EXPECT_TRUE(refused("a ::= \"x\"\nroot ::= a\na ::= \"y\"", "3:1: ", "rule 'a' is defined twice (first at 1:1)"));
  EXPECT_TRUE(refused("::= \"x\"", "1:1: ", "expected a rule name"));
}

TEST(GbnfErrors, LeftRecursion) {
  EXPECT_TRUE(refused("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]", "", "expr -> expr"));
  EXPECT_TRUE(refused("root ::= a\na ::= b? \"x\"\nb ::= \"y\" | a", "", "left recursive"));
  // Repeating what can match nothing without end is left recursion too (as in llama.cpp); the
  // generated rule's name points at the '*'.
  EXPECT_TRUE(refused("root ::= (\"a\"?)*", "", "root@1:16"));
}

TEST(GbnfErrors, EscapesAndCharacters) {
  EXPECT_TRUE(refused("root ::= \"a\\qb\"", "1:12: ", "unknown escape '\\' followed by 'q'"));
  EXPECT_TRUE(refused("root ::= [\\x4]", "1:11: ", "expected 2 hex digits after '\\x', found ']'"));
  EXPECT_TRUE(refused("root ::= \"\\u12\"", "1:11: ", "expected 4 hex digits"));
  EXPECT_TRUE(refused("root ::= \"\\U00110000\"", "1:11: ", "above U+10FFFF"));
  EXPECT_TRUE(refused("root ::= \"\\uD800\"", "1:11: ", "U+D800 is a surrogate"));
  EXPECT_TRUE(refused("root ::= [z-a]", "1:11: ", "the range 'z'-'a' ends before it starts"));
  EXPECT_TRUE(refused("root ::= \"\xC3\x28\"", "1:11: ", "not valid UTF-8"));
  EXPECT_TRUE(refused("root ::= \"a\\", "1:12: ", "expected an escaped character"));
}

TEST(GbnfErrors, RepetitionAndUnsupportedSyntax) {
  EXPECT_TRUE(refused("root ::= \"a\"{3,1}", "1:13: ", "the repetition {3,1} has its minimum above its maximum"));
  EXPECT_TRUE(refused("root ::= *\"a\"", "1:10: ", "'*' has nothing before it to repeat"));
  EXPECT_TRUE(refused("root ::= \"a\" | +", "1:16: ", "'+' has nothing before it to repeat"));
  EXPECT_TRUE(refused("root ::= <think> \"a\"", "1:10: ", "token references"));
  EXPECT_TRUE(refused("root ::= !<[12]>", "1:10: ", "token references"));
  EXPECT_TRUE(refused("root ::= \"a\"\nb ::= 'x'", "2:7: ", "found '''"));
}

TEST(GbnfErrors, GroupsNestToABoundedDepth) {
  const auto nested = [](size_t depth) {
    return "root ::= " + std::string(depth, '(') + "\"a\"" + std::string(depth, ')');
  };
  auto deep = compiled(nested(256));
  ASSERT_NE(deep, nullptr);
  EXPECT_TRUE(accepts(*deep, "a"));
  EXPECT_TRUE(refused(nested(257), "1:266: ", "groups nest deeper than 256 levels"));
  EXPECT_TRUE(refused(nested(100000), "1:266: ", "groups nest deeper than 256 levels"));
}

}  // namespace
}  // namespace kipp::grammar
