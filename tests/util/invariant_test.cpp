// util/invariant.h: where invariants are checked (the sanitizer build of `make test`), a broken
// one stops the process naming its condition and place; elsewhere its condition is not even
// evaluated.
#include "util/invariant.h"

#include <gtest/gtest.h>

namespace kipp {
namespace {

#if defined(KIPP_CHECK_INVARIANTS)

TEST(Invariant, ABrokenOneStopsTheProcessNamingItsConditionAndLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int held = 2;
  KIPP_INVARIANT(held == 2);
  EXPECT_DEATH(KIPP_INVARIANT(held == 3), "invariant broken at .*invariant_test.cpp:[0-9]+: held == 3");
}

#else

TEST(Invariant, ElsewhereItsConditionIsNotEvaluated) {
  int evaluated = 0;
  KIPP_INVARIANT(++evaluated == 1);
  EXPECT_EQ(evaluated, 0);
}

#endif

}  // namespace
}  // namespace kipp
