// The GGUF writer and reader agree on every value type Kipp writes, on tensor placement and on
// alignment padding.
#include <gtest/gtest.h>

#include <cstring>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "test_paths.h"
#include "util/mapped_file.h"

namespace kipp::gguf {
namespace {

TEST(GgufRoundTrip, MetadataAndTensorsComeBackExactly) {
  const std::string path = testing::scratch_dir("gguf_roundtrip") + "/file.gguf";
  Writer writer;
  writer.add_string("general.architecture", "qwen3");
  writer.add_u32("answer", 42);
  writer.add_f32("theta", 1e6f);
  writer.add_bool("flag", true);
  writer.add_string_array("words", {"a", "", "\xc3\xa9t\xc3\xa9"});
  writer.add_i32_array("numbers", {-1, 0, 7});
  ASSERT_TRUE(writer.add_tensor("vector", {5}, TensorType::f32).ok());
  ASSERT_TRUE(writer.add_tensor("matrix", {64, 3}, TensorType::q8_0).ok());
  ASSERT_TRUE(writer.add_tensor("bf", {3, 2}, TensorType::bf16).ok());
  EXPECT_FALSE(writer.add_tensor("odd", {33, 1}, TensorType::q4_1).ok()) << "33 columns cannot hold Q4_1 blocks";

  auto out = AtomicFile::create(path);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(writer.write_header(out.value()).ok());
  std::vector<uint8_t> vector_bytes(20, 1), matrix_bytes(3 * 2 * 34, 2), bf_bytes(12, 3);
  ASSERT_TRUE(writer.append_tensor_bytes(out.value(), vector_bytes).ok());
  ASSERT_TRUE(writer.append_tensor_bytes(out.value(), std::span(matrix_bytes).first(100)).ok());
  ASSERT_FALSE(writer.finish(out.value()).ok()) << "finishing with incomplete tensors must fail";
  ASSERT_TRUE(writer.append_tensor_bytes(out.value(), std::span(matrix_bytes).subspan(100)).ok());
  ASSERT_TRUE(writer.append_tensor_bytes(out.value(), bf_bytes).ok());
  ASSERT_FALSE(writer.append_tensor_bytes(out.value(), bf_bytes).ok()) << "bytes beyond the last tensor";
  ASSERT_TRUE(writer.finish(out.value()).ok());

  auto mapping = MappedFile::open(path);
  ASSERT_TRUE(mapping.ok());
  auto file = File::parse(mapping->bytes());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->get_string("general.architecture").value(), "qwen3");
  EXPECT_EQ(file->get_u32("answer").value(), 42u);
  EXPECT_EQ(file->get_f32("theta").value(), 1e6f);
  EXPECT_EQ(file->get_bool("flag").value(), true);
  const Value* words = file->get_array("words", ValueType::string).value();
  ASSERT_EQ(words->strings.size(), 3u);
  EXPECT_EQ(words->strings[2], "\xc3\xa9t\xc3\xa9");
  const Value* numbers = file->get_array("numbers", ValueType::i32).value();
  ASSERT_EQ(numbers->count, 3u);
  int32_t first;
  std::memcpy(&first, numbers->raw.data(), 4);
  EXPECT_EQ(first, -1);
  EXPECT_FALSE(file->get_u32("theta").ok());
  EXPECT_NE(file->get_u32("theta").error().message.find("expected UINT32, found FLOAT32"), std::string::npos);
  EXPECT_FALSE(file->get_u32("absent").ok());

  ASSERT_EQ(file->tensors.size(), 3u);
  EXPECT_EQ(file->data_offset % 32, 0u);
  const TensorInfo* matrix = file->find_tensor("matrix");
  ASSERT_NE(matrix, nullptr);
  EXPECT_EQ(matrix->n_dims, 2u);
  EXPECT_EQ(matrix->dims[0], 64u);
  EXPECT_EQ(matrix->dims[1], 3u);
  EXPECT_EQ(matrix->offset, 32u);  // 20 bytes of "vector", padded to 32
  EXPECT_EQ(matrix->bytes, 204u);
  EXPECT_TRUE(std::equal(matrix->data.begin(), matrix->data.end(), matrix_bytes.begin()));
  EXPECT_EQ(file->find_tensor("bf")->offset, 256u);
  EXPECT_EQ(file->find_tensor("bf")->data[0], 3);
}

}  // namespace
}  // namespace kipp::gguf
