// The thinking budget and the answer layout it consults, with made-up token ids: which tokens it
// forces and when.
#include "engine/thinking_budget.h"

#include <gtest/gtest.h>

#include <vector>

namespace kipp {
namespace {

constexpr uint32_t kOpen = 10, kClose = 11, kNewline = 5, kSeparator = 6, kWord = 1, kLine = 2;

ThinkClosing closing() { return ThinkClosing{{kOpen, kClose}, {kNewline}, {kSeparator}}; }

// A budget and the layout of its answer, fed tokens as the decoder feeds them.
class Budgeted {
 public:
  Budgeted(uint32_t budget, AnswerStart start, bool separator)
      : layout_(start, closing().think), budget_(budget, closing(), separator) {}
  std::optional<uint32_t> forced() { return budget_.forced(layout_); }
  void accept(uint32_t token, std::string_view bytes) { budget_.accept(bytes, layout_.take(token)); }
  bool closed_it() const { return budget_.closed_it(); }

 private:
  AnswerLayout layout_;
  ThinkingBudget budget_;
};

// Takes `tokens` (a kLine token ends in a newline), then whatever the budget forces, and returns
// what was forced, in order.
std::vector<uint32_t> forced_after(Budgeted& budget, const std::vector<uint32_t>& tokens) {
  for (uint32_t token : tokens) {
    EXPECT_FALSE(budget.forced()) << "forced before the budget was spent";
    budget.accept(token, token == kLine ? "x\n" : token == kOpen ? "<think>" : "word");
  }
  std::vector<uint32_t> forced;
  while (auto next = budget.forced()) {
    forced.push_back(*next);
    budget.accept(*next, "");
    if (forced.size() > 8) break;
  }
  return forced;
}

TEST(ThinkingBudget, ClosesAnOpenThoughtWithANewlineTheTagAndTheSeparator) {
  Budgeted budget(3, AnswerStart::after_think, true);
  EXPECT_EQ(forced_after(budget, {kWord, kWord, kWord}), (std::vector<uint32_t>{kNewline, kClose, kSeparator}));
  EXPECT_TRUE(budget.closed_it());
  budget.accept(kWord, "answer");
  EXPECT_FALSE(budget.forced()) << "the answer is free once the block is closed";
}

TEST(ThinkingBudget, NoExtraNewlineWhenTheThoughtEndedOne) {
  Budgeted budget(2, AnswerStart::after_think, true);
  EXPECT_EQ(forced_after(budget, {kWord, kLine}), (std::vector<uint32_t>{kClose, kSeparator}));
}

TEST(ThinkingBudget, UnderAGrammarTheSeparatorIsLeftToIt) {
  Budgeted budget(1, AnswerStart::after_think, false);
  EXPECT_EQ(forced_after(budget, {kWord}), (std::vector<uint32_t>{kNewline, kClose}));
}

TEST(ThinkingBudget, AModelThatClosesInTimeIsNeverTouched) {
  Budgeted budget(3, AnswerStart::after_think, true);
  EXPECT_EQ(forced_after(budget, {kWord, kWord, kClose, kWord, kWord, kWord}), std::vector<uint32_t>{});
  EXPECT_FALSE(budget.closed_it());
}

TEST(ThinkingBudget, ZeroClosesAtOnceTheTemplatesEmptyBlock) {
  // thinking-2507: the prompt ends "<think>\n", so the block closes with </think> and "\n\n".
  Budgeted opened(0, AnswerStart::after_think, true);
  EXPECT_EQ(forced_after(opened, {}), (std::vector<uint32_t>{kClose, kSeparator}));
  // A hybrid checkpoint that opens <think> itself: "\n" first, as the template writes it.
  Budgeted hybrid(0, AnswerStart::maybe_think, true);
  EXPECT_EQ(forced_after(hybrid, {kOpen}), (std::vector<uint32_t>{kNewline, kClose, kSeparator}));
}

TEST(ThinkingBudget, AnswersThatDoNotThinkAreNotCounted) {
  Budgeted direct(1, AnswerStart::maybe_think, true);
  EXPECT_EQ(forced_after(direct, {kWord, kWord, kWord}), std::vector<uint32_t>{}) << "no <think>: nothing to close";
  Budgeted never(0, AnswerStart::at_once, true);
  EXPECT_EQ(forced_after(never, {kWord, kOpen, kWord}), std::vector<uint32_t>{});
}

TEST(ThinkingBudget, TheHybridBudgetCountsFromInsideTheBlock) {
  Budgeted budget(2, AnswerStart::maybe_think, true);
  EXPECT_EQ(forced_after(budget, {kOpen, kWord, kWord}), (std::vector<uint32_t>{kNewline, kClose, kSeparator}));
}

}  // namespace
}  // namespace kipp
