// The safetensors reader on hand-made files, valid and malformed.
#include <gtest/gtest.h>

#include <fstream>

#include "convert/safetensors.h"
#include "synthetic_checkpoint.h"
#include "test_paths.h"

namespace kipp {
namespace {

std::string write_raw(const std::string& dir, const std::string& header, size_t data_bytes) {
  const std::string path = dir + "/model.safetensors";
  std::ofstream out(path, std::ios::binary);
  const uint64_t size = header.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << header << std::string(data_bytes, '\0');
  return dir;
}

void expect_open_error(const std::string& dir, const std::string& fragment) {
  auto opened = SafetensorsCheckpoint::open(dir);
  ASSERT_FALSE(opened.ok()) << fragment;
  EXPECT_NE(opened.error().message.find(fragment), std::string::npos) << opened.error().message;
}

TEST(Safetensors, ReadsTensorsAtTheirOffsets) {
  const std::string dir = testing::scratch_dir("st_ok");
  ASSERT_TRUE(testing::write_safetensors(dir + "/model.safetensors", {{"a", "BF16", {2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}},
                                                                      {"b", "F32", {1}, {9, 9, 9, 9}}})
                  .ok());
  auto st = SafetensorsCheckpoint::open(dir);
  ASSERT_TRUE(st.ok()) << st.error().message;
  const SafetensorsTensor* a = st->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{2, 2}));
  uint8_t bytes[4];
  ASSERT_TRUE(st->read(*a, 4, bytes, 4).ok());
  EXPECT_EQ(bytes[0], 5);
  EXPECT_FALSE(st->read(*a, 6, bytes, 4).ok()) << "reads past the tensor are refused";
  EXPECT_EQ(st->source_files(), std::vector<std::string>{"model.safetensors"});
}

TEST(Safetensors, RejectsMalformedHeaders) {
  const std::string dir = testing::scratch_dir("st_bad");
  expect_open_error(write_raw(dir, "{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 4),
                    "lie outside");
  expect_open_error(write_raw(dir, "{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,6]}}", 8),
                    "holds 6 bytes, its shape and dtype need 8");
  expect_open_error(write_raw(dir,
                              "{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                              "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[2,6]}}",
                              8),
                    "overlap");
  expect_open_error(write_raw(dir, "{\"a\":{\"dtype\":\"Q9\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4),
                    "unknown dtype");
  expect_open_error(write_raw(dir, "{\"a\":{\"dtype\":\"BF16\",\"shape\":[-2],\"data_offsets\":[0,4]}}", 4),
                    "non-negative");
  expect_open_error(write_raw(dir, "{\"a\":", 4), "not valid JSON");
  expect_open_error(write_raw(dir, "[1,2]", 4), "not a JSON object");
  {
    std::ofstream out(dir + "/model.safetensors", std::ios::binary);
    const uint64_t huge = ~0ull;
    out.write(reinterpret_cast<const char*>(&huge), 8);
  }
  expect_open_error(dir, "header length");
  expect_open_error(testing::scratch_dir("st_missing"), "cannot open");
}

}  // namespace
}  // namespace kipp
