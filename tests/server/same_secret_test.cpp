// The API key comparison: equal only for the very same bytes, whatever the lengths.
#include <gtest/gtest.h>

#include <string>

#include "util/sha256.h"

namespace kipp {
namespace {

TEST(SameSecret, OnlyTheSameBytesMatch) {
  EXPECT_TRUE(same_secret("sk-local-123", "sk-local-123"));
  EXPECT_FALSE(same_secret("sk-local-124", "sk-local-123"));   // the last byte
  EXPECT_FALSE(same_secret("sk-local-12", "sk-local-123"));    // a prefix
  EXPECT_FALSE(same_secret("sk-local-1234", "sk-local-123"));  // longer
  EXPECT_FALSE(same_secret("", "sk-local-123"));
  EXPECT_TRUE(same_secret(std::string("a\0b", 3), std::string("a\0b", 3)));
  EXPECT_FALSE(same_secret(std::string("a\0b", 3), std::string("a\0c", 3)));  // bytes after a NUL count
}

}  // namespace
}  // namespace kipp
