// Token sets over the real Qwen3 vocabulary, checked against the plainest possible reference:
// every token's bytes fed to the matcher one at a time.
#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "engine/token_constraint.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "real_tokenizer.h"
#include "scheduler/constraint_cache.h"

namespace kipp {
namespace {

using grammar::ByteSet;
using grammar::GrammarBuilder;
using grammar::RuleId;

const Tokenizer& tokenizer() {
  auto t = testing::real_tokenizer();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return *t.value();
}

// root ::= "[" item ("," " "? item)* "]" ; item ::= [0-9]+ | "\"" [^"\\]* "\""
grammar::Grammar list_grammar() {
  GrammarBuilder b;
  const RuleId digits = b.repeat("digits", b.bytes(ByteSet::range('0', '9')), 1, GrammarBuilder::kUnbounded);
  const RuleId text_char = b.utf8_class("text-char", {{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true);
  const RuleId text = b.repeat("text", GrammarBuilder::call(text_char), 0, GrammarBuilder::kUnbounded);
  const grammar::Item quote = b.bytes(ByteSet::of('"'));
  const RuleId item = b.add("item", {{GrammarBuilder::call(digits)}, {quote, GrammarBuilder::call(text), quote}});
  const RuleId space = b.add("space", {b.literal(" "), {}});
  const RuleId more = b.repeat(
      "more",
      b.call(b.add("next", {{b.bytes(ByteSet::of(',')), GrammarBuilder::call(space), GrammarBuilder::call(item)}})), 0,
      GrammarBuilder::kUnbounded);
  const RuleId root = b.add("root", {{b.bytes(ByteSet::of('[')), GrammarBuilder::call(item), GrammarBuilder::call(more),
                                      b.bytes(ByteSet::of(']'))}});
  return std::move(b).finish(root).value();
}

std::shared_ptr<grammar::Automaton> matcher_of(grammar::Grammar g) {
  return grammar::Automaton::create(std::move(g)).value();
}

TEST(TokenTrie, HoldsEveryNormalTokenOnceInBreadthFirstOrder) {
  const Tokenizer& t = tokenizer();
  auto trie = constrained_vocabulary(t);
  size_t normal = 0;
  for (uint32_t id = 0; id < t.vocab_size(); ++id) normal += t.is_normal(id);
  EXPECT_EQ(trie->token_count(), normal);
  EXPECT_GT(normal, 150000u);
  // Spell each node's path from its parent's; every token must match its bytes, and children must
  // come after their parent, in increasing byte order, each node the child of exactly one parent.
  std::vector<std::string> path(trie->node_count());
  std::vector<bool> seen(t.vocab_size(), false), has_parent(trie->node_count(), false);
  EXPECT_TRUE(trie->tokens(grammar::TokenTrie::kRoot).empty());
  for (uint32_t node = 0; node < trie->node_count(); ++node) {
    for (uint32_t child = trie->first_child(node); child < trie->children_end(node); ++child) {
      ASSERT_GT(child, node);
      ASSERT_FALSE(has_parent[child]);
      has_parent[child] = true;
      if (child > trie->first_child(node)) {
        ASSERT_LT(trie->byte(child - 1), trie->byte(child));
      }
      path[child] = path[node] + char(trie->byte(child));
    }
    for (uint32_t id : trie->tokens(node)) {
      EXPECT_EQ(t.token_bytes(id), path[node]) << id;
      EXPECT_FALSE(seen[id]);
      seen[id] = true;
    }
    if (node > 0) {
      ASSERT_TRUE(has_parent[node]) << node;
    }
  }
}

TEST(TokenMasks, EqualTokenByTokenReference) {
  const Tokenizer& t = tokenizer();
  auto automaton = grammar::Automaton::create(list_grammar()).value();
  grammar::TokenMasks masks(automaton, constrained_vocabulary(t));
  // States along a sentence, including ones inside a string and after a partial UTF-8 character.
  const std::string text = "[12, \"h\xc3\xa9llo\",3,\"";
  grammar::StateId state = automaton->start();
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    if (cut > 0) state = automaton->next(state, uint8_t(text[cut - 1])).value();
    ASSERT_NE(state, grammar::kDeadState);
    if (cut % 3 != 0 && cut != text.size()) continue;  // a sample of positions keeps the test quick
    auto set = masks.allowed(state);
    ASSERT_TRUE(set.ok()) << set.error().message;
    size_t expected = 0;
    for (uint32_t id = 0; id < t.vocab_size(); ++id) {
      bool allowed = false;
      if (t.is_normal(id)) allowed = masks.after(state, t.token_bytes(id)).value() != grammar::kDeadState;
      expected += allowed;
      ASSERT_EQ(set.value()->has(id), allowed)
          << "after " << cut << " bytes, token " << id << " '" << t.token_bytes(id) << "'";
    }
    EXPECT_EQ(set.value()->count(), expected);
    EXPECT_GT(expected, 0u);
  }
  // The same state again is a lookup, not a walk.
  const uint64_t walks = masks.walks();
  ASSERT_TRUE(masks.allowed(state).ok());
  EXPECT_EQ(masks.walks(), walks);
}

TEST(TokenMasks, OneTokenSetsWorkIsBoundedByItsLimit) {
  const Tokenizer& t = tokenizer();
  auto trie = constrained_vocabulary(t);
  // The walk from the start computes states as it goes: more than a few stacks' worth of work.
  auto starved = grammar::TokenMasks(grammar::Automaton::create(list_grammar()).value(), trie, 10);
  auto refused = starved.allowed(starved.automaton().start());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("more than the limit of 10 matcher steps"), std::string::npos)
      << refused.error().message;
  // The default limit leaves ordinary grammars alone; what the walk did shows in its bytes.
  grammar::TokenMasks masks(grammar::Automaton::create(list_grammar()).value(), trie);
  const size_t before = masks.memory_bytes();
  ASSERT_TRUE(masks.allowed(masks.automaton().start()).ok());
  EXPECT_GT(masks.automaton().steps(), 10u);
  EXPECT_GT(masks.memory_bytes(), before + (t.vocab_size() / 8));
}

// One answer's matcher steps are bounded in all, not only per token set: a walk that keeps finding
// new states fails over_limit once it has taken more than its limit, naming it.
TEST(TokenConstraint, OneAnswersMatcherStepsAreBoundedInAll) {
  const Tokenizer& t = tokenizer();
  const auto masks = std::make_shared<grammar::TokenMasks>(matcher_of(list_grammar()), constrained_vocabulary(t));
  const AnswerLayout answering(AnswerStart::at_once, find_think_tokens(t).value());
  const std::vector<uint32_t> stop = {151645};
  const std::vector<uint32_t> ids = t.encode("[1, \"a\", 22]").value();
  // What the whole text costs with no limit, from a fresh matcher.
  uint64_t needed = 0;
  {
    const auto fresh = std::make_shared<grammar::TokenMasks>(matcher_of(list_grammar()), constrained_vocabulary(t));
    TokenConstraint unbounded(fresh, stop);
    for (uint32_t id : ids) {
      ASSERT_TRUE(unbounded.allowed(answering).ok());
      ASSERT_TRUE(unbounded.accept(id, t.token_bytes(id), TokenRole::answer).ok());
    }
    needed = fresh->automaton().steps();
  }
  ASSERT_GT(needed, 100u);
  TokenConstraint bounded(masks, stop, std::nullopt, needed / 2);
  Status failed;
  for (uint32_t id : ids) {
    if (auto allowed = bounded.allowed(answering); !allowed) {
      failed = allowed.error();
      break;
    }
    if (failed = bounded.accept(id, t.token_bytes(id), TokenRole::answer); !failed) break;
  }
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(failed.error().over_limit);
  const std::string limit = "more than the limit of " + std::to_string(needed / 2) + " matcher steps for one answer";
  EXPECT_NE(failed.error().message.find(limit), std::string::npos) << failed.error().message;
}

TEST(ConstraintCache, KeepsToItsByteBudgetDroppingTheLeastRecentlyUsed) {
  const Tokenizer& t = tokenizer();
  GrammarBuilder b;
  const RuleId yes = b.add("root", {b.literal("yes")});
  const grammar::Grammar other = std::move(b).finish(yes).value();
  ConstraintCache roomy(t);
  ASSERT_NE(roomy.masks_for(matcher_of(list_grammar())), nullptr);
  ASSERT_NE(roomy.masks_for(matcher_of(other)), nullptr);
  EXPECT_EQ(roomy.size(), 2u);
  EXPECT_GT(roomy.memory_bytes(), 0u);
  // A budget smaller than one grammar keeps only the one just asked for; the one a request holds
  // stays valid in its hands.
  ConstraintCache tight(t, 1);
  auto held = tight.masks_for(matcher_of(list_grammar()));
  ASSERT_NE(tight.masks_for(matcher_of(other)), nullptr);
  EXPECT_EQ(tight.size(), 1u);
  EXPECT_TRUE(held->allowed(held->automaton().start()).ok());
}

// The server builds a request's matcher on its compile threads: the cache keeps the first one of a
// grammar and shares it with every later request for an equal grammar, whose own is dropped.
TEST(ConstraintCache, SharesTheFirstMatcherOfAGrammar) {
  ConstraintCache cache(tokenizer());
  const auto first = matcher_of(list_grammar());
  const auto masks = cache.masks_for(first);
  EXPECT_EQ(&masks->automaton(), first.get());
  const auto again = matcher_of(list_grammar());
  EXPECT_EQ(cache.masks_for(again), masks);
  EXPECT_EQ(again.use_count(), 1);
  EXPECT_EQ(cache.size(), 1u);
}

// The id of the set's `n`th token in increasing order (what a scan of every id finds, without
// the scan: under ASan, scanning the vocabulary at each step took most of the walks' minutes).
uint32_t nth_token(const grammar::TokenSet& set, size_t n) {
  const std::span<const uint64_t> words = set.words();
  for (size_t w = 0; w < words.size(); ++w) {
    uint64_t word = words[w];
    const size_t in_word = size_t(std::popcount(word));
    if (n >= in_word) {
      n -= in_word;
      continue;
    }
    for (; n > 0; --n) word &= word - 1;  // drop the lowest set bits
    return uint32_t(w * 64 + size_t(std::countr_zero(word)));
  }
  ADD_FAILURE() << "the set has fewer tokens than asked for";
  return 0;
}

// Random walks: always a token from the allowed set; the set never empties before the text is a
// sentence, and the stop token is offered exactly when it is one.
TEST(TokenConstraint, RandomWalksEndInSentences) {
  const Tokenizer& t = tokenizer();
  ConstraintCache cache(t);
  auto masks = cache.masks_for(matcher_of(list_grammar()));
  const AnswerLayout answering(AnswerStart::at_once, find_think_tokens(t).value());
  const std::vector<uint32_t> stop = {151645};
  std::mt19937 random(7);
  for (int walk = 0; walk < 40; ++walk) {
    TokenConstraint constraint(masks, stop);
    std::string text;
    for (int step = 0; step < 400; ++step) {
      const AllowedTokens* allowed = constraint.allowed(answering).value();
      ASSERT_NE(allowed, nullptr);
      ASSERT_GT(allowed->count(), 0u) << text;
      const bool complete = grammar::check_text(masks->automaton(), text).value().complete;
      EXPECT_EQ(allowed->has(stop[0]), complete) << text;
      const size_t choices = allowed->set ? allowed->set->count() : 0;
      // Prefer ending once possible, now and then, so walks finish.
      if (complete && (choices == 0 || random() % 4 == 0)) break;
      const uint32_t token = nth_token(*allowed->set, random() % choices);
      ASSERT_TRUE(constraint.accept(token, t.token_bytes(token), TokenRole::answer).ok());
      text += t.token_bytes(token);
      ASSERT_TRUE(grammar::check_text(masks->automaton(), text).value().prefix) << text;
    }
  }
  EXPECT_EQ(cache.size(), 1u);
}

// A constraint and the layout it consults, fed tokens as the decoder feeds them.
struct LaidOut {
  LaidOut(std::shared_ptr<grammar::TokenMasks> masks, AnswerStart start, std::span<const uint32_t> stop,
          ThinkTokens think)
      : layout(start, think), constraint(std::move(masks), stop) {}
  Result<const AllowedTokens*> allowed() { return constraint.allowed(layout); }
  Status accept(uint32_t token, std::string_view bytes) { return constraint.accept(token, bytes, layout.take(token)); }

  AnswerLayout layout;
  TokenConstraint constraint;
};

TEST(TokenConstraint, ThinkingIsFreeUntilItsEnd) {
  const Tokenizer& t = tokenizer();
  ConstraintCache cache(t);
  auto masks = cache.masks_for(matcher_of(list_grammar()));
  const ThinkTokens think = find_think_tokens(t).value();
  EXPECT_EQ(think.open, 151667u);
  EXPECT_EQ(think.close, 151668u);
  const std::vector<uint32_t> stop = {151645};
  const uint32_t hello = t.encode("Hello").value()[0];
  const uint32_t bracket = t.encode("[").value()[0];

  LaidOut hybrid(masks, AnswerStart::maybe_think, stop, think);
  const AllowedTokens* first = hybrid.allowed().value();
  EXPECT_TRUE(first->has(think.open));
  EXPECT_TRUE(first->has(bracket));
  EXPECT_FALSE(first->has(hello));
  ASSERT_TRUE(hybrid.accept(think.open, t.token_bytes(think.open)).ok());
  EXPECT_EQ(hybrid.allowed().value(), nullptr);  // free reasoning
  ASSERT_TRUE(hybrid.accept(hello, "Hello").ok());
  ASSERT_TRUE(hybrid.accept(think.close, t.token_bytes(think.close)).ok());
  EXPECT_FALSE(hybrid.layout.in_thought());
  EXPECT_FALSE(hybrid.allowed().value()->has(hello));
  EXPECT_FALSE(hybrid.accept(hello, "Hello").ok());

  LaidOut direct(masks, AnswerStart::maybe_think, stop, think);
  ASSERT_TRUE(direct.accept(bracket, "[").ok());
  EXPECT_FALSE(direct.allowed().value()->has(think.open));

  LaidOut after(masks, AnswerStart::after_think, stop, think);
  EXPECT_EQ(after.allowed().value(), nullptr);
  EXPECT_TRUE(after.accept(stop[0], t.token_bytes(stop[0])).ok());  // the model may stop while reasoning
}

}  // namespace
}  // namespace kipp
