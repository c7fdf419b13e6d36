// The tokenizer's own contract: known ids, invalid UTF-8 errors with offsets, decode and the
// streaming decoder, NFC as the reference applies it, load-time rejection of bad data, every
// build the same, and linear time on pathological inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_format.h"
#include "real_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "util/utf8.h"

namespace kipp {
namespace {

const Tokenizer& tokenizer() {
  static const Tokenizer* shared = [] {
    auto loaded = testing::real_tokenizer();
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? loaded.value() : nullptr;
  }();
  return *shared;
}

std::vector<TokenId> encode(std::string_view text) {
  auto ids = tokenizer().encode(text);
  EXPECT_TRUE(ids.ok()) << (ids.ok() ? "" : ids.error().message);
  return ids.ok() ? ids.value() : std::vector<TokenId>{};
}

TEST(Tokenizer, RealVocabularyShape) {
  ASSERT_TRUE(testing::real_tokenizer().ok());
  EXPECT_EQ(tokenizer().vocab_size(), 151936u);
  EXPECT_EQ(tokenizer().merge_count(), 151387u);
  EXPECT_EQ(tokenizer().added_token_count(), 26u);
}

TEST(Tokenizer, KnownIds) {
  EXPECT_EQ(encode("Hello world"), (std::vector<TokenId>{9707, 1879}));
  // Added tokens in the raw text, NFC of the rest, a contraction with LONG S.
  EXPECT_EQ(encode("he\xCC\x81llo <think>wörld</think> '\xC5\xBF"),
            (std::vector<TokenId>{71, 18503, 385, 220, 151667, 86, 9416, 507, 151668, 364, 144815}));
  EXPECT_EQ(encode(""), std::vector<TokenId>{});
  EXPECT_EQ(encode("<|im_start|><|im_end|>"), (std::vector<TokenId>{151644, 151645}));
}

TEST(Tokenizer, InvalidUtf8NamesTheByteOffset) {
  struct Case {
    std::string text;
    size_t offset;
  };
  const Case cases[] = {
      {"\xFF", 0},
      {"ab\x80", 2},                    // lone continuation byte
      {"abc\xC0\x80", 3},               // overlong NUL
      {"x\xED\xA0\x80", 1},             // UTF-16 surrogate
      {"12345678\xF4\x90\x80\x80", 8},  // above U+10FFFF
      {"ok \xE2\x82", 3},               // ends inside a character
      {"<think>\xF5", 7},               // after an added token
  };
  for (const Case& c : cases) {
    auto ids = tokenizer().encode(c.text);
    ASSERT_FALSE(ids.ok()) << c.offset;
    EXPECT_NE(ids.error().message.find("invalid UTF-8 at byte offset " + std::to_string(c.offset)), std::string::npos)
        << ids.error().message;
  }
}

TEST(Tokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const TokenId ids[] = {9707, 151936};
  auto text = tokenizer().decode(ids);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("151936"), std::string::npos);
  // Unused ids ([PAD...]) stand for nothing, as in the reference.
  const TokenId unused[] = {151700, 9707};
  EXPECT_EQ(tokenizer().decode(unused).value(), "Hello");
}

TEST(Tokenizer, DecodeOfEncodeIsNfc) {
  const std::string samples[] = {
      "plain ascii, with punctuation!\n\tand tabs",
      "A\xCC\x8Angstro\xCC\x88m caf\x65\xCC\x81 \xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8",  // NFD Latin and Hangul jamo
      "q\xCC\x87\xCC\xA3 and a\xCC\xA3\xCC\x82",                                        // reordering
      "\xE2\x84\xAB \xE2\x84\xA6",                                                      // singletons (Angstrom, Ohm)
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",
  };
  NfcNormalizer nfc;
  for (const std::string& text : samples) {
    auto round_trip = tokenizer().decode(encode(text));
    ASSERT_TRUE(round_trip.ok());
    EXPECT_EQ(round_trip.value(), std::string(nfc.normalize(text))) << text;
  }
}

TEST(Nfc, FollowsTheReferencesUnicodeVersion) {
  NfcNormalizer nfc;
  EXPECT_EQ(nfc.normalize("e\xCC\x81"), "\xC3\xA9");
  // U+07FD (Unicode 11) is a plain starter to the reference: it blocks the composition of U+0301.
  EXPECT_EQ(nfc.normalize("a\xDF\xBD\xCC\x81"), "a\xDF\xBD\xCC\x81");
  // U+11935 U+11930 composes to U+11938 only from Unicode 13 on: the reference keeps the pair.
  EXPECT_EQ(nfc.normalize("\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0"), "\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0");
  // Already-normalized text comes back as the same view.
  const std::string_view ascii = "nothing to do here";
  EXPECT_EQ(nfc.normalize(ascii).data(), ascii.data());
}

TEST(StreamDecoder, HoldsBackSplitCharacters) {
  // The first of these rare characters that has no token of its own.
  std::string character;
  std::vector<TokenId> ids;
  for (const char* candidate : {"\xF0\xA0\x80\x80", "\xF0\x9D\x84\x9E", "\xF0\x9F\xAB\xA8", "\xEA\xAF\x8D"}) {
    character = candidate;
    ids = encode(character);
    if (ids.size() > 1) break;
  }
  ASSERT_GT(ids.size(), 1u);
  StreamDecoder stream(tokenizer());
  std::string out;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    ASSERT_TRUE(stream.push(ids[i], out).ok());
    EXPECT_EQ(out, "") << "emitted part of a character after token " << i;
  }
  ASSERT_TRUE(stream.push(ids.back(), out).ok());
  EXPECT_EQ(out, character);
  EXPECT_FALSE(stream.push(151936, out).ok());
}

TEST(StreamDecoder, JoinedPiecesEqualDecode) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<TokenId> ids(1 + random() % 12);
    for (TokenId& id : ids) id = random() % 151936;
    StreamDecoder stream(tokenizer());
    std::string joined;
    for (TokenId id : ids) {
      const size_t before = joined.size();
      ASSERT_TRUE(stream.push(id, joined).ok());
      EXPECT_TRUE(utf8::validate(std::string_view(joined).substr(before)).ok());
    }
    stream.finish(joined);
    EXPECT_EQ(joined, tokenizer().decode(ids).value());
  }
}

// A tiny vocabulary: the 256 byte tokens, "ab", and whatever a test adds.
struct SmallVocab {
  std::vector<std::string> texts;
  std::vector<int32_t> types;
  std::vector<std::string> merge_texts;
  std::vector<std::string_view> token_views, merge_views;

  SmallVocab() {
    for (uint32_t byte = 0; byte < 256; ++byte) {
      std::string text;
      utf8::append(byte_level::char_of_byte()[byte], text);
      add(text);
    }
    add("ab");
    merge_texts.push_back("a b");
  }
  void add(std::string text, gguf::TokenType type = gguf::TokenType::normal) {
    texts.push_back(std::move(text));
    types.push_back(int32_t(type));
  }
  Result<Tokenizer> build() {
    token_views.assign(texts.begin(), texts.end());
    merge_views.assign(merge_texts.begin(), merge_texts.end());
    TokenizerData data;
    data.tokens = token_views;
    data.token_types = types;
    data.merges = merge_views;
    return Tokenizer::create(data);
  }
};

void expect_rejected(SmallVocab& vocab, const std::string& fragment) {
  auto built = vocab.build();
  ASSERT_FALSE(built.ok()) << "expected an error mentioning " << fragment;
  EXPECT_NE(built.error().message.find(fragment), std::string::npos) << built.error().message;
}

TEST(TokenizerData, SmallVocabularyWorks) {
  SmallVocab vocab;
  vocab.add("<x>", gguf::TokenType::control);
  vocab.add("<xy>", gguf::TokenType::user_defined);
  auto built = vocab.build();
  ASSERT_TRUE(built.ok()) << built.error().message;
  // "ab" merges; the longest added token wins where two start at one place.
  EXPECT_EQ(built->encode("ab<xy><x>").value(), (std::vector<TokenId>{256, 258, 257}));
}

TEST(TokenizerData, RejectsMergesOutsideTheVocabulary) {
  {
    SmallVocab vocab;
    vocab.merge_texts.push_back("ab c");  // result "abc" is not a token
    expect_rejected(vocab, "\"abc\" is not in the vocabulary");
  }
  {
    SmallVocab vocab;
    vocab.merge_texts.push_back("zz b");
    expect_rejected(vocab, "\"zz\" is not in the vocabulary");
  }
  {
    SmallVocab vocab;
    vocab.merge_texts.push_back("ab");
    expect_rejected(vocab, "not two pieces");
  }
  {
    SmallVocab vocab;
    vocab.merge_texts.push_back("a b");
    expect_rejected(vocab, "repeats an earlier merge");
  }
}

TEST(TokenizerData, RejectsTokensOutsideTheByteLevelAlphabet) {
  {
    SmallVocab vocab;
    vocab.add("a b");  // a raw space is not byte-level text (that is U+0120)
    expect_rejected(vocab, "not in the byte-level alphabet");
  }
  {
    SmallVocab vocab;
    vocab.add("ab");
    expect_rejected(vocab, "appears twice");
  }
  {
    SmallVocab vocab;
    vocab.types[3] = int32_t(gguf::TokenType::byte);
    expect_rejected(vocab, "has type 6");
  }
  {
    SmallVocab vocab;
    vocab.types[0] = int32_t(gguf::TokenType::unused);
    expect_rejected(vocab, "no token for byte 0x0");
  }
}

// A build from the data (151,936 tokens, 151,387 merges) takes every token and every merge, and
// a second build is the same tokenizer as the first: the same bytes for every id, the same ids for
// a text that goes through every stage. How long a build takes is a benchmark's question, not
// this test's.
TEST(Tokenizer, EveryBuildFromTheDataHoldsEveryTokenAndMerge) {
  auto data = testing::real_tokenizer_data();
  ASSERT_TRUE(data.ok()) << data.error().message;
  auto built = Tokenizer::create(*data.value());
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->vocab_size(), data.value()->tokens.size());
  EXPECT_EQ(built->merge_count(), data.value()->merges.size());
  EXPECT_EQ(built->added_token_count(), tokenizer().added_token_count());
  ASSERT_EQ(built->vocab_size(), tokenizer().vocab_size());
  size_t different = 0;
  for (TokenId id = 0; id < built->vocab_size(); ++id)
    different +=
        built->token_bytes(id) != tokenizer().token_bytes(id) || built->is_normal(id) != tokenizer().is_normal(id);
  EXPECT_EQ(different, 0u);
  const std::string text =
      "Hello world, it's 2024! he\xCC\x81llo <think>w\xC3\xB6rld</think>\n\n  def f(x):\n    return x + 1 "
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80<|im_end|>";
  const auto again = built->encode(text);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), encode(text));
}

}  // namespace
}  // namespace kipp
