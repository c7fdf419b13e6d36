// The malformed-GGUF classes G1-G25 of shared/BAD-INPUTS.md and the strict-loader rules of
// issue 2, one test each. Every rejection must also name the problem in its message.
//
// MalformedGguf.*: small handcrafted images (a byte builder below) against gguf::File::parse.
// Each image is handed to the parser in a heap block of exactly its size, so ASan sees any read
// past the end.
//
// MalformedArtifact.*: the tied tiny BF16 fixture, decomposed once per process into a Recipe
// (every metadata entry re-encoded from the parsed views, every tensor with its data view),
// changed in exactly one place and re-emitted in memory (into a reused mapping that ends at a
// guard page), against validate_artifact. The positive controls check that the unchanged
// re-emission is byte-identical to the fixture and validates, so no mutation test can pass
// because the re-serializer itself produced something invalid.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_format.h"
#include "gguf/gguf_reader.h"
#include "model/artifact_layout.h"
#include "model/model_file.h"
#include "registry/registry.h"
#include "test_paths.h"
#include "util/mapped_file.h"

namespace kipp {
namespace {

using gguf::TensorType;
using gguf::ValueType;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

uint32_t vt(ValueType type) { return static_cast<uint32_t>(type); }
uint32_t tt(TensorType type) { return static_cast<uint32_t>(type); }

// ---------------------------------------------------------------------------------------------
// Checking rejections

std::string joined(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out += (out.empty() ? "\"" : ", \"") + std::string(part) + "\"";
  return out;
}

// Succeeds when `result` is an error whose single-line message contains every needle.
template <class T>
::testing::AssertionResult Rejected(const Result<T>& result, std::initializer_list<std::string_view> needles) {
  if (result.ok()) return ::testing::AssertionFailure() << "accepted; expected an error naming " << joined(needles);
  const std::string& message = result.error().message;
  if (message.find('\n') != std::string::npos)
    return ::testing::AssertionFailure() << "error is not one line: \"" << message << "\"";
  for (std::string_view needle : needles)
    if (message.find(needle) == std::string::npos)
      return ::testing::AssertionFailure() << "error \"" << message << "\" does not name \"" << needle << "\"";
  return ::testing::AssertionSuccess() << "error: " << message;
}

// ---------------------------------------------------------------------------------------------
// A tiny little-endian byte builder for handcrafted GGUF images

class Bytes {
 public:
  template <class T>
  Bytes& put(T value) {
    static_assert(std::endian::native == std::endian::little);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    data_.insert(data_.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& i32(int32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& i64(int64_t v) { return put(v); }
  Bytes& f32(float v) { return put(v); }
  Bytes& raw(std::string_view text) {
    data_.insert(data_.end(), text.begin(), text.end());
    return *this;
  }
  Bytes& raw(std::span<const uint8_t> bytes) {
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  Bytes& str(std::string_view text) { return u64(text.size()).raw(text); }  // GGUF string
  Bytes& zeros(size_t n) {
    data_.resize(data_.size() + n, 0);
    return *this;
  }
  Bytes& pad_to(uint64_t alignment) { return zeros((alignment - data_.size() % alignment) % alignment); }

  // Metadata entries.
  Bytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(vt(ValueType::u32)).u32(v); }
  Bytes& kv_string(std::string_view key, std::string_view v) { return str(key).u32(vt(ValueType::string)).str(v); }

  // A tensor directory entry.
  Bytes& tensor(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
    str(name).u32(uint32_t(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }

  void reserve(size_t n) { data_.reserve(n); }
  size_t size() const { return data_.size(); }
  const std::vector<uint8_t>& data() const { return data_; }
  std::vector<uint8_t> prefix(size_t n) const { return {data_.begin(), data_.begin() + std::ptrdiff_t(n)}; }

 private:
  std::vector<uint8_t> data_;
};

// The fixed header: magic, version, tensor count, metadata count.
Bytes header(int64_t n_tensors, int64_t n_kv, uint32_t version = gguf::kVersion) {
  Bytes b;
  b.raw("GGUF").u32(version).i64(n_tensors).i64(n_kv);
  return b;
}

// Parses a copy held in a heap block of exactly the image's size.
Result<gguf::File> parse_exact(std::span<const uint8_t> image) {
  auto copy = std::make_unique<uint8_t[]>(image.size() ? image.size() : 1);
  if (!image.empty()) std::memcpy(copy.get(), image.data(), image.size());
  auto parsed = gguf::File::parse({copy.get(), image.size()});
  if (parsed.ok()) return fail("ACCEPTED (parse_exact serves only images that must be rejected)");
  return parsed;
}
Result<gguf::File> parse_exact(const Bytes& b) { return parse_exact(b.data()); }

// One metadata entry, then a tensor directory and a zero-filled data section of `data_bytes`.
struct Info {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type;
  uint64_t offset;
};
Bytes with_tensors(std::initializer_list<Info> infos, uint64_t data_bytes) {
  Bytes b = header(int64_t(infos.size()), 1);
  b.kv_string("general.architecture", "qwen3");
  for (const Info& info : infos) b.tensor(info.name, info.dims, info.type, info.offset);
  b.pad_to(32).zeros(data_bytes);
  return b;
}

// A small valid image: two entries, an F32 [8] tensor at 0 and a Q8_0 [32, 2] one at 32, and the
// file ends exactly where the last tensor does.
Bytes small_valid() {
  Bytes b = header(2, 2);
  b.kv_string("general.architecture", "qwen3").kv_u32("general.alignment", 32);
  b.tensor("a", {8}, tt(TensorType::f32), 0).tensor("b", {32, 2}, tt(TensorType::q8_0), 32);
  b.pad_to(32);
  for (int i = 0; i < 8; ++i) b.f32(float(i));
  for (int i = 0; i < 68; ++i) b.u8(uint8_t(i));
  return b;
}

// ---------------------------------------------------------------------------------------------
// G1-G18: the container, against gguf::File::parse

TEST(MalformedGguf, SmallValidImageParses) {
  const Bytes b = small_valid();
  auto copy = std::make_unique<uint8_t[]>(b.size());
  std::memcpy(copy.get(), b.data().data(), b.size());
  auto file = gguf::File::parse({copy.get(), b.size()});
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->version, 3u);
  EXPECT_EQ(file->alignment, 32u);
  EXPECT_EQ(file->data_offset % 32, 0u);
  ASSERT_EQ(file->tensors.size(), 2u);
  EXPECT_EQ(file->tensors[1].bytes, 68u);
  EXPECT_EQ(file->tensors[1].data.data(), copy.get() + file->data_offset + 32);
  EXPECT_EQ(file->data_offset + 32 + 68, b.size());
  auto arch = file->get_string("general.architecture");
  ASSERT_TRUE(arch.ok());
  EXPECT_EQ(*arch, "qwen3");
}

TEST(MalformedGguf, G01_BadMagicAndTooShort) {
  Bytes bad_magic;
  bad_magic.raw("GGUG").u32(3).i64(0).i64(0);
  EXPECT_TRUE(Rejected(parse_exact(bad_magic), {"bad magic"}));
  Bytes lowercase;
  lowercase.raw("gguf").u32(3).i64(0).i64(0);
  EXPECT_TRUE(Rejected(parse_exact(lowercase), {"bad magic"}));
  EXPECT_TRUE(Rejected(parse_exact(Bytes().raw("GGU")), {"not a GGUF file", "3 bytes", "too short"}));
  EXPECT_TRUE(Rejected(parse_exact(Bytes()), {"not a GGUF file", "0 bytes", "too short"}));
  EXPECT_TRUE(Rejected(parse_exact(Bytes().raw("GGUF")), {"truncated file", "version"}));
}

TEST(MalformedGguf, G02_UnsupportedVersion) {
  for (uint32_t version : {0u, 1u, 2u, 4u, 0xffffffffu})
    EXPECT_TRUE(Rejected(parse_exact(header(0, 0, version)),
                         {"unsupported GGUF version " + std::to_string(version), "expected 3"}));
  EXPECT_TRUE(Rejected(parse_exact(header(0, 0, 0x03000000u)), {"byte-swapped", "big-endian"}));
}

TEST(MalformedGguf, G03_ImpossibleTensorCount) {
  const int64_t beyond_size_max = int64_t(uint64_t(SIZE_MAX) / sizeof(gguf::TensorInfo) + 1);
  for (int64_t n : {int64_t{-1}, int64_t{1} << 62, beyond_size_max, kI64Max, std::numeric_limits<int64_t>::min()})
    EXPECT_TRUE(Rejected(parse_exact(header(n, 0)), {"tensor count " + std::to_string(n), "impossible"}));
  // One more tensor than the directory holds: caught as soon as the entry is missing.
  Bytes b = header(2, 0);
  b.tensor("a", {8}, tt(TensorType::f32), 0).pad_to(32).zeros(32);
  EXPECT_TRUE(Rejected(parse_exact(b), {"tensor #1"}));  // the zeros after the directory are no entry
}

TEST(MalformedGguf, G04_ImpossibleMetadataCount) {
  for (int64_t n : {int64_t{-1}, int64_t{1} << 62, kI64Max})
    EXPECT_TRUE(Rejected(parse_exact(header(0, n)), {"metadata count " + std::to_string(n), "impossible"}));
  Bytes b = header(0, 2);
  b.kv_u32("general.alignment", 32).zeros(14);  // room for a second entry by size, but zeros
  EXPECT_TRUE(Rejected(parse_exact(b), {"metadata #1"}));
}

TEST(MalformedGguf, G05_HugeKeyAndStringLengths) {
  for (uint64_t length : {kU64Max, uint64_t{1} << 63, (uint64_t{1} << 30) + 1, uint64_t{1000}}) {
    Bytes key = header(0, 1);
    key.u64(length).raw("abcd").zeros(16);  // 20 bytes where `length` are announced
    EXPECT_TRUE(Rejected(parse_exact(key), {"metadata #0 key", "length " + std::to_string(length), "exceeds"}));

    Bytes value = header(0, 1);
    value.str("general.name").u32(vt(ValueType::string)).u64(length).raw("abcd");
    EXPECT_TRUE(Rejected(parse_exact(value), {"metadata general.name", "length " + std::to_string(length)}));

    Bytes element = header(0, 1);
    element.str("tokenizer.ggml.tokens").u32(vt(ValueType::array)).u32(vt(ValueType::string)).u64(1);
    element.u64(length).raw("abcd");
    EXPECT_TRUE(Rejected(parse_exact(element), {"metadata tokenizer.ggml.tokens", "length " + std::to_string(length)}));
  }
}

TEST(MalformedGguf, G06_EmptyAndDuplicateKeys) {
  Bytes empty = header(0, 1);
  empty.kv_u32("", 1);
  EXPECT_TRUE(Rejected(parse_exact(empty), {"metadata #0", "empty key"}));
  Bytes twice = header(0, 2);
  twice.kv_string("general.architecture", "qwen3").kv_u32("general.architecture", 3);
  EXPECT_TRUE(Rejected(parse_exact(twice), {"general.architecture", "appears twice"}));
  // Keys are quoted in error lines: a newline or a terminal escape in one is refused.
  for (std::string_view key :
       {std::string_view("general.name\nfake: line"), std::string_view("a\x1b[2Jb"), std::string_view("nul\0key", 7)}) {
    Bytes b = header(0, 1);
    b.kv_u32(key, 1);
    EXPECT_TRUE(Rejected(parse_exact(b), {"metadata #0", "key contains control bytes"}));
  }
}

TEST(MalformedGguf, G07_BadValueTypes) {
  for (uint32_t type : {gguf::kValueTypeCount, 0x7fffffffu, 0xffffffffu}) {
    Bytes b = header(0, 1);
    b.str("general.name").u32(type).u32(0);
    EXPECT_TRUE(
        Rejected(parse_exact(b), {"general.name", "value type " + std::to_string(type), "not a GGUF value type"}));
    Bytes element = header(0, 1);
    element.str("general.tags").u32(vt(ValueType::array)).u32(type).u64(0);
    EXPECT_TRUE(Rejected(parse_exact(element), {"general.tags", "array element type " + std::to_string(type)}));
  }
  Bytes nested = header(0, 1);
  nested.str("general.tags").u32(vt(ValueType::array)).u32(vt(ValueType::array)).u64(1);
  nested.u32(vt(ValueType::u8)).u64(1).u8(0);
  EXPECT_TRUE(Rejected(parse_exact(nested), {"general.tags", "arrays of arrays"}));
  // A boolean must be 0 or 1, alone or in an array.
  Bytes flag = header(0, 1);
  flag.str("tokenizer.ggml.add_bos_token").u32(vt(ValueType::boolean)).u8(2);
  EXPECT_TRUE(Rejected(parse_exact(flag), {"tokenizer.ggml.add_bos_token", "boolean"}));
  Bytes flags = header(0, 1);
  flags.str("general.flags").u32(vt(ValueType::array)).u32(vt(ValueType::boolean)).u64(2).u8(1).u8(7);
  EXPECT_TRUE(Rejected(parse_exact(flags), {"general.flags", "boolean element is 7"}));
}

TEST(MalformedGguf, G08_ArrayCountsBeyondTheFile) {
  auto array = [](ValueType element, uint64_t count) {
    Bytes b = header(0, 1);
    b.str("general.values").u32(vt(ValueType::array)).u32(vt(element)).u64(count).zeros(16);
    return b;
  };
  EXPECT_TRUE(Rejected(parse_exact(array(ValueType::u64, uint64_t{1} << 40)),
                       {"general.values", "array of 1099511627776 x UINT64", "exceeds"}));
  // count x 8 wraps past 2^64: the bound must be a division, not a product.
  EXPECT_TRUE(Rejected(parse_exact(array(ValueType::u64, (uint64_t{1} << 61) + 1)), {"general.values", "exceeds"}));
  EXPECT_TRUE(Rejected(parse_exact(array(ValueType::f64, kU64Max)), {"general.values", "exceeds"}));
  EXPECT_TRUE(Rejected(parse_exact(array(ValueType::string, uint64_t{1} << 31)),
                       {"general.values", "array of 2147483648 strings", "cannot fit"}));
  EXPECT_TRUE(Rejected(parse_exact(array(ValueType::u32, 5)), {"general.values", "array of 5 x UINT32", "exceeds"}));
  // Just enough room by the minimum size, but the strings are longer than what is left.
  Bytes strings = header(0, 1);
  strings.str("general.values").u32(vt(ValueType::array)).u32(vt(ValueType::string)).u64(2);
  strings.str("x").u64(100).raw("yz");
  EXPECT_TRUE(Rejected(parse_exact(strings), {"general.values", "length 100"}));
}

TEST(MalformedGguf, G09_BadAlignment) {
  for (uint32_t alignment : {0u, 3u, 48u, 1u << 17, 1u << 31, 0xffffffffu}) {
    Bytes b = header(0, 1);
    b.kv_u32("general.alignment", alignment);
    EXPECT_TRUE(Rejected(parse_exact(b), {"general.alignment", std::to_string(alignment), "power of two"}));
  }
  Bytes as_i32 = header(0, 1);
  as_i32.str("general.alignment").u32(vt(ValueType::i32)).i32(32);
  EXPECT_TRUE(Rejected(parse_exact(as_i32), {"general.alignment", "expected UINT32, found INT32"}));
  Bytes as_string = header(0, 1);
  as_string.kv_string("general.alignment", "32");
  EXPECT_TRUE(Rejected(parse_exact(as_string), {"general.alignment", "expected UINT32, found STRING"}));
  Bytes as_u64 = header(0, 1);
  as_u64.str("general.alignment").u32(vt(ValueType::u64)).u64(32);
  EXPECT_TRUE(Rejected(parse_exact(as_u64), {"general.alignment", "expected UINT32, found UINT64"}));

  // A valid non-default alignment is honoured: the data section and the offsets follow it.
  Bytes aligned = header(2, 1);
  aligned.kv_u32("general.alignment", 64);
  aligned.tensor("a", {8}, tt(TensorType::f32), 0).tensor("b", {8}, tt(TensorType::f32), 64).pad_to(64).zeros(96);
  auto file = gguf::File::parse(aligned.data());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->alignment, 64u);
  EXPECT_EQ(file->data_offset % 64, 0u);
  Bytes default_offsets = header(2, 1);  // the same directory with the 32-byte default offsets
  default_offsets.kv_u32("general.alignment", 64);
  default_offsets.tensor("a", {8}, tt(TensorType::f32), 0)
      .tensor("b", {8}, tt(TensorType::f32), 32)
      .pad_to(64)
      .zeros(96);
  EXPECT_TRUE(Rejected(parse_exact(default_offsets), {"tensor b", "offset 32, expected 64", "64-byte alignment"}));
}

TEST(MalformedGguf, G10_BadTensorNames) {
  const std::string long_name(gguf::kMaxTensorNameBytes + 1, 'n');
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{long_name, {8}, 0, 0}}, 32)),
                       {"tensor #0", "name of 64 bytes", "63-byte limit"}));
  const std::string longest(gguf::kMaxTensorNameBytes, 'n');
  EXPECT_TRUE(gguf::File::parse(with_tensors({{longest, {8}, 0, 0}}, 32).data()).ok());
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"", {8}, 0, 0}}, 32)), {"tensor #0", "empty name"}));
  EXPECT_TRUE(
      Rejected(parse_exact(with_tensors({{"a", {8}, 0, 0}, {"a", {8}, 0, 32}}, 64)), {"tensor a", "appears twice"}));
  EXPECT_TRUE(
      Rejected(parse_exact(with_tensors({{"a\nb", {8}, 0, 0}}, 32)), {"tensor #0", "name contains control bytes"}));
  EXPECT_TRUE(
      Rejected(parse_exact(with_tensors({{"\x7f", {8}, 0, 0}}, 32)), {"tensor #0", "name contains control bytes"}));

  Bytes huge = header(1, 0);
  huge.u64(uint64_t{1} << 63).raw("blk.0.attn_q.weight").zeros(32);
  EXPECT_TRUE(Rejected(parse_exact(huge), {"tensor #0 name", "length 9223372036854775808", "exceeds"}));
}

TEST(MalformedGguf, G11_BadDimensionCount) {
  for (uint32_t n_dims : {0u, 5u, 0xffffffffu}) {
    Bytes b = header(1, 0);
    b.str("t").u32(n_dims);
    for (int i = 0; i < 5; ++i) b.u64(1);
    b.u32(0).u64(0).pad_to(32).zeros(32);
    EXPECT_TRUE(Rejected(parse_exact(b), {"tensor t", std::to_string(n_dims) + " dimensions", "expected 1 to 4"}));
  }
}

TEST(MalformedGguf, G12_BadExtents) {
  const uint32_t f32 = tt(TensorType::f32);
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {uint64_t(-1)}, f32, 0}}, 32)),
                       {"tensor t", "dimension 0", "invalid extent -1"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {8, uint64_t(-5)}, f32, 0}}, 32)),
                       {"tensor t", "dimension 1", "invalid extent -5"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {8, 0}, f32, 0}}, 32)), {"tensor t", "invalid extent 0"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {uint64_t{1} << 32, uint64_t{1} << 32}, f32, 0}}, 32)),
                       {"tensor t", "element count overflows"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {1 << 16, 1 << 16, 1 << 16, 1 << 16}, f32, 0}}, 32)),
                       {"tensor t", "element count overflows", "dimension 3"}));
  // PR#18674's shape: no int64 overflow, but far more bytes than the file holds.
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {1152, (uint64_t{1} << 42) + 1}, f32, 0}}, 32)),
                       {"truncated file", "tensor t"}));
}

TEST(MalformedGguf, G13_UnknownTensorTypes) {
  // -1, the removed Q4_2/Q4_3 ids, the IQ types Kipp cannot describe, and ids past the table.
  for (uint32_t type : {0xffffffffu, 4u, 5u, 16u, 29u, 31u, 39u, 1000u}) {
    const std::string shown = std::to_string(int32_t(type));
    EXPECT_TRUE(
        Rejected(parse_exact(with_tensors({{"t", {256}, type, 0}}, 1024)), {"tensor t", "unknown ggml type " + shown}));
  }
}

TEST(MalformedGguf, G14_FirstDimensionNotAWholeBlock) {
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {33}, tt(TensorType::q8_0), 0}}, 64)),
                       {"tensor t", "first dimension 33", "Q8_0 block size 32"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {33, 2}, tt(TensorType::q4_0), 0}}, 64)),
                       {"tensor t", "Q4_0 block size 32"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {48}, tt(TensorType::q4_1), 0}}, 64)),
                       {"tensor t", "Q4_1 block size 32"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {32}, tt(TensorType::q4_k), 0}}, 256)),
                       {"tensor t", "Q4_K block size 256"}));
}

TEST(MalformedGguf, G15_ByteSizeBeyondMemoryOrFile) {
  // 2^62 F64 elements fit int64, but 2^65 bytes do not fit size_t.
  EXPECT_TRUE(
      Rejected(parse_exact(with_tensors({{"t", {uint64_t{1} << 31, uint64_t{1} << 31}, tt(TensorType::f64), 0}}, 32)),
               {"tensor t", "byte size overflows"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"t", {1024}, tt(TensorType::f32), 0}}, 32)),
                       {"truncated file", "tensor t", "needs bytes"}));
}

TEST(MalformedGguf, G16_OffsetsNotPackedInOrder) {
  const uint32_t f32 = tt(TensorType::f32);
  // Valid: 8 F32 (32 bytes) at 0, the next at 32.
  EXPECT_TRUE(gguf::File::parse(with_tensors({{"a", {8}, f32, 0}, {"b", {8}, f32, 32}}, 64).data()).ok());
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"a", {8}, f32, 0}, {"b", {8}, f32, 64}}, 96)),
                       {"tensor b", "data offset 64, expected 32"}));  // a gap
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"a", {8}, f32, 0}, {"b", {8}, f32, 0}}, 64)),
                       {"tensor b", "data offset 0, expected 32"}));  // overlapping
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"a", {8}, f32, 0}, {"b", {8}, f32, 16}}, 64)),
                       {"tensor b", "data offset 16, expected 32"}));  // overlapping, 16-byte aligned
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"a", {8}, f32, 1}}, 64)),
                       {"tensor a", "data offset 1, expected 0"}));  // misaligned
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"a", {6}, f32, 0}, {"b", {8}, f32, 24}}, 64)),
                       {"tensor b", "data offset 24, expected 32"}));  // packed but not aligned
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"a", {8}, f32, uint64_t{1} << 40}}, 64)),
                       {"tensor a", "data offset 1099511627776"}));  // past the end
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"a", {8}, f32, kU64Max - 7}}, 64)), {"tensor a", "data offset"}));
  EXPECT_TRUE(Rejected(parse_exact(with_tensors({{"b", {8}, f32, 32}, {"a", {8}, f32, 0}}, 64)),
                       {"tensor b", "directory order"}));  // swapped
}

TEST(MalformedGguf, G17_TruncatedAnywhere) {
  const Bytes b = small_valid();
  EXPECT_TRUE(Rejected(parse_exact(b.prefix(b.size() - 1)), {"truncated file", "tensor b"}));
  EXPECT_TRUE(Rejected(parse_exact(b.prefix(b.size() - 68)), {"truncated file", "tensor b"}));
  // Every strict prefix is rejected, and none is read past its end.
  for (size_t n = 0; n < b.size(); ++n) {
    auto parsed = parse_exact(b.prefix(n));
    ASSERT_FALSE(parsed.ok()) << "a " << n << "-byte prefix of a " << b.size() << "-byte file was accepted";
    EXPECT_FALSE(parsed.error().message.empty());
  }
  // The directory ends but the file stops before the aligned start of the data section.
  Bytes early = header(1, 1);
  early.kv_string("general.architecture", "qwen3").tensor("t", {8}, tt(TensorType::f32), 0);
  ASSERT_NE(early.size() % 32, 0u);  // the directory ends unaligned, so the data would start later
  EXPECT_TRUE(Rejected(parse_exact(early), {"truncated file", "tensor data section"}));
}

TEST(MalformedGguf, G18_TensorCountTimesOverheadWraps) {
  // Counts whose product with any per-tensor overhead wraps 64 bits: refused before anything is
  // sized by them (under ASan an attempt to allocate would abort the test).
  for (uint64_t n : {kU64Max / 8 + 1, kU64Max / sizeof(gguf::TensorInfo) + 1, uint64_t{1} << 59}) {
    const int64_t count = int64_t(n & uint64_t(kI64Max));
    EXPECT_TRUE(Rejected(parse_exact(header(count, 0)), {"tensor count", "impossible"}));
  }
  // Many real tensors are fine: the directory bound is the file, not a fixed limit.
  Bytes many = header(2000, 0);
  for (int i = 0; i < 2000; ++i) many.tensor("t" + std::to_string(i), {8}, tt(TensorType::f32), uint64_t(i) * 32);
  many.pad_to(32).zeros(2000 * 32);
  auto file = gguf::File::parse(many.data());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->tensors.size(), 2000u);
  ASSERT_NE(file->find_tensor("t1999"), nullptr);
  EXPECT_EQ(file->find_tensor("t1999")->offset, 1999u * 32);
}

TEST(MalformedGguf, TypedAccessorsNameKeyAndTypes) {
  const Bytes b = small_valid();
  auto file = gguf::File::parse(b.data());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_TRUE(
      Rejected(file->get_u32("general.architecture"), {"general.architecture", "expected UINT32, found STRING"}));
  EXPECT_TRUE(Rejected(file->get_string("general.alignment"), {"general.alignment", "expected STRING, found UINT32"}));
  EXPECT_TRUE(Rejected(file->get_u32("qwen3.block_count"), {"qwen3.block_count", "missing"}));
  EXPECT_TRUE(Rejected(file->get_array("general.architecture", ValueType::string), {"general.architecture", "ARRAY"}));
}

// ---------------------------------------------------------------------------------------------
// The artifact re-serializer

template <class T>
std::string pod(T value) {
  return std::string(reinterpret_cast<const char*>(&value), sizeof(T));
}
std::string enc_string(std::string_view text) { return pod<uint64_t>(text.size()) + std::string(text); }
template <class Range>
std::string enc_string_array(const Range& items) {
  std::string out = pod<uint32_t>(vt(ValueType::string)) + pod<uint64_t>(std::size(items));
  for (std::string_view item : items) out += enc_string(item);
  return out;
}
std::string enc_array(ValueType element, uint64_t count, std::string_view raw) {
  return pod<uint32_t>(vt(element)) + pod<uint64_t>(count) + std::string(raw);
}
template <class T>
std::string enc_pod_array(ValueType element, const std::vector<T>& values) {
  return enc_array(element, values.size(),
                   std::string_view(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

// The payload of a parsed value, exactly as GGUF encodes it after the type tag.
std::string encode(const gguf::Value& v) {
  switch (v.type) {
    case ValueType::u8: return pod<uint8_t>(uint8_t(v.as_unsigned));
    case ValueType::i8: return pod<int8_t>(int8_t(v.as_signed));
    case ValueType::u16: return pod<uint16_t>(uint16_t(v.as_unsigned));
    case ValueType::i16: return pod<int16_t>(int16_t(v.as_signed));
    case ValueType::u32: return pod<uint32_t>(uint32_t(v.as_unsigned));
    case ValueType::i32: return pod<int32_t>(int32_t(v.as_signed));
    case ValueType::u64: return pod<uint64_t>(v.as_unsigned);
    case ValueType::i64: return pod<int64_t>(v.as_signed);
    case ValueType::f32: return pod<float>(float(v.as_float));
    case ValueType::f64: return pod<double>(v.as_float);
    case ValueType::boolean: return pod<uint8_t>(uint8_t(v.as_unsigned));
    case ValueType::string: return enc_string(v.as_string);
    case ValueType::array:
      if (v.element_type == ValueType::string) return enc_string_array(v.strings);
      return enc_array(v.element_type, v.count,
                       std::string_view(reinterpret_cast<const char*>(v.raw.data()), v.raw.size()));
  }
  throw std::logic_error("unreachable value type");
}

// Where re-emitted images live: one anonymous mapping reused for every emission (a fresh 90 MB
// block per case costs more in page faults than the case itself). The data section starts at a
// fixed page-aligned address with the header right before it, and a PROT_NONE guard page follows
// the page the image ends in, so reading past the end faults. Each emission overwrites the
// previous image, except that a tensor whose bytes the last emission already put at the same
// place (same source, offset and size) is not copied again.
class ImageArena {
 public:
  struct Piece {  // one tensor's bytes in the data section
    const uint8_t* source;
    uint64_t source_bytes;
    uint64_t offset;
    uint64_t bytes;
    bool operator==(const Piece&) const = default;
  };

  ImageArena() = default;
  ImageArena(const ImageArena&) = delete;
  ImageArena& operator=(const ImageArena&) = delete;
  ~ImageArena() { release(); }

  std::span<const uint8_t> write(const std::vector<uint8_t>& header, const std::vector<Piece>& pieces,
                                 uint64_t data_bytes) {
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    const auto round_up = [page](size_t n) { return (n + page - 1) / page * page; };
    if (header.size() > header_room_ || round_up(header_room_ + data_bytes) + page > capacity_) {
      release();
      header_room_ = round_up(std::max<size_t>(header.size() * 2, size_t{16} << 20));
      capacity_ = round_up(header_room_ + data_bytes + data_bytes / 4) + page;
      void* region =
          ::mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (region == MAP_FAILED) throw std::runtime_error("test harness: cannot map an image arena");
      base_ = static_cast<uint8_t*>(region);
    }
    if (guard_ && ::mprotect(guard_, page, PROT_READ | PROT_WRITE) != 0)
      throw std::runtime_error("test harness: mprotect");
    uint8_t* data = base_ + header_room_;
    uint64_t written = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Piece& piece = pieces[i];
      std::memset(data + written, 0, piece.offset - written);  // alignment padding
      if (i >= kept_.size() || !(kept_[i] == piece)) {
        const uint64_t copied = std::min(piece.bytes, piece.source_bytes);
        if (copied) std::memcpy(data + piece.offset, piece.source, copied);
        std::memset(data + piece.offset + copied, 0, piece.bytes - copied);
      }
      written = piece.offset + piece.bytes;
    }
    kept_ = pieces;
    uint8_t* start = data - header.size();
    std::memcpy(start, header.data(), header.size());
    guard_ = base_ + round_up(header_room_ + data_bytes);
    if (::mprotect(guard_, page, PROT_NONE) != 0) throw std::runtime_error("test harness: no guard page");
    return {start, header.size() + data_bytes};
  }

 private:
  void release() {
    if (base_) ::munmap(base_, capacity_);
    base_ = guard_ = nullptr;
    capacity_ = header_room_ = 0;
    kept_.clear();
  }
  uint8_t* base_ = nullptr;
  uint8_t* guard_ = nullptr;
  size_t capacity_ = 0;
  size_t header_room_ = 0;
  std::vector<Piece> kept_;  // what the data section holds now
};

ImageArena& arena() {
  static ImageArena instance;
  return instance;
}

struct KvRecord {
  std::string key;
  uint32_t type;
  std::shared_ptr<const std::string> payload;  // shared, so copying a recipe is cheap
};

struct TensorRecord {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type;
  std::span<const uint8_t> data;  // source bytes; the emitted tensor is cut or zero-extended to its size
};

uint64_t tensor_bytes(const TensorRecord& t) {
  auto info = gguf::tensor_type_info(t.type);
  if (!info) throw std::logic_error("test recipe uses an unknown tensor type");
  uint64_t elements = 1;
  for (uint64_t d : t.dims) elements *= d;
  return elements / info->block_elements * info->block_bytes;
}

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

class Recipe {
 public:
  std::vector<KvRecord> kvs;
  std::vector<TensorRecord> tensors;

  KvRecord& kv(std::string_view key) {
    for (KvRecord& r : kvs)
      if (r.key == key) return r;
    throw std::logic_error("the fixture has no metadata key " + std::string(key));
  }
  // Replaces the value of an existing key in place (same position), or appends a new key.
  Recipe& set(std::string_view key, ValueType type, std::string payload) {
    for (KvRecord& r : kvs)
      if (r.key == key) {
        r.type = vt(type);
        r.payload = std::make_shared<const std::string>(std::move(payload));
        return *this;
      }
    kvs.push_back({std::string(key), vt(type), std::make_shared<const std::string>(std::move(payload))});
    return *this;
  }
  Recipe& set_u32(std::string_view key, uint32_t v) { return set(key, ValueType::u32, pod(v)); }
  Recipe& set_i32(std::string_view key, int32_t v) { return set(key, ValueType::i32, pod(v)); }
  Recipe& set_u64(std::string_view key, uint64_t v) { return set(key, ValueType::u64, pod(v)); }
  Recipe& set_f32(std::string_view key, float v) { return set(key, ValueType::f32, pod(v)); }
  Recipe& set_bool(std::string_view key, bool v) { return set(key, ValueType::boolean, pod<uint8_t>(v ? 1 : 0)); }
  Recipe& set_string(std::string_view key, std::string_view v) { return set(key, ValueType::string, enc_string(v)); }
  Recipe& erase_kv(std::string_view key) {
    kv(key);
    std::erase_if(kvs, [&](const KvRecord& r) { return r.key == key; });
    return *this;
  }

  TensorRecord& tensor(std::string_view name) {
    for (TensorRecord& t : tensors)
      if (t.name == name) return t;
    throw std::logic_error("the fixture has no tensor " + std::string(name));
  }
  Recipe& erase_tensor(std::string_view name) {
    tensor(name);
    std::erase_if(tensors, [&](const TensorRecord& t) { return t.name == name; });
    return *this;
  }

  uint64_t alignment() const {
    for (const KvRecord& r : kvs)
      if (r.key == keys::alignment && r.type == vt(ValueType::u32) && r.payload->size() == 4) {
        uint32_t value;
        std::memcpy(&value, r.payload->data(), 4);
        if (value != 0 && (value & (value - 1)) == 0) return value;
      }
    return gguf::kDefaultAlignment;
  }

  // Writes the GGUF image the way the converter lays one out: metadata in order, the tensor
  // directory with packed aligned offsets, zero padding, then each tensor's bytes. The image
  // lives in arena() until the next emission.
  std::span<const uint8_t> emit() const {
    const uint64_t align = alignment();
    Bytes head = header(int64_t(tensors.size()), int64_t(kvs.size()));
    size_t header_bytes = head.size() + align;
    for (const KvRecord& r : kvs) header_bytes += 12 + r.key.size() + r.payload->size();
    for (const TensorRecord& t : tensors) header_bytes += 24 + t.name.size() + 8 * t.dims.size();
    head.reserve(header_bytes);
    for (const KvRecord& r : kvs) head.str(r.key).u32(r.type).raw(*r.payload);
    std::vector<ImageArena::Piece> pieces;
    uint64_t end = 0;
    for (const TensorRecord& t : tensors) {
      const uint64_t offset = align_up(end, align);
      head.str(t.name).u32(uint32_t(t.dims.size()));
      for (uint64_t d : t.dims) head.u64(d);
      head.u32(t.type).u64(offset);
      pieces.push_back({t.data.data(), t.data.size(), offset, tensor_bytes(t)});
      end = offset + tensor_bytes(t);
    }
    head.pad_to(align);

    return arena().write(head.data(), pieces, end);
  }
};

std::string artifact_path() { return testing::test_models_dir() + "/qwen3-tiny.bf16.gguf"; }

// The fixture, mapped and decomposed once per process.
struct Fixture {
  MappedFile mapping;
  gguf::File file;
  Recipe recipe;
};

const Fixture& fixture() {
  static std::unique_ptr<Fixture> loaded;
  if (loaded) return *loaded;
  auto f = std::make_unique<Fixture>();
  auto mapping = MappedFile::open(artifact_path());
  if (!mapping)
    throw std::runtime_error("fixture missing (run the fixture.test_models test): " + mapping.error().message);
  f->mapping = std::move(mapping).value();
  auto parsed = gguf::File::parse(f->mapping.bytes());
  if (!parsed) throw std::runtime_error("fixture does not parse: " + parsed.error().message);
  f->file = std::move(parsed).value();
  for (const gguf::KeyValue& kv : f->file.metadata)
    f->recipe.kvs.push_back(
        {std::string(kv.key), vt(kv.value.type), std::make_shared<const std::string>(encode(kv.value))});
  for (const gguf::TensorInfo& t : f->file.tensors)
    f->recipe.tensors.push_back({std::string(t.name), {t.dims.begin(), t.dims.begin() + t.n_dims}, t.type, t.data});
  loaded = std::move(f);
  return *loaded;
}

// A fresh copy of the fixture's recipe to change in one place.
Recipe base() { return fixture().recipe; }

// Re-emits, parses and validates; the error is prefixed "parse: " when the container is refused.
Status verdict(const Recipe& recipe) {
  auto file = gguf::File::parse(recipe.emit());
  if (!file) return fail("parse: ", file.error().message);
  auto artifact = validate_artifact(*file);
  if (!artifact) return artifact.error();
  return {};
}

// The fixture's token texts and merges, for building changed arrays.
std::vector<std::string_view> fixture_strings(std::string_view key) {
  const gguf::Value* value = fixture().file.find(key);
  if (!value) throw std::logic_error("the fixture has no " + std::string(key));
  return value->strings;
}
std::vector<int32_t> fixture_token_types() {
  const gguf::Value* value = fixture().file.find(keys::token_type);
  if (!value) throw std::logic_error("the fixture has no token types");
  std::vector<int32_t> types(value->count);
  std::memcpy(types.data(), value->raw.data(), value->raw.size());
  return types;
}

// ---------------------------------------------------------------------------------------------
// Positive controls

TEST(MalformedArtifact, ReemittedFixtureIsByteIdenticalAndValid) {
  const Fixture& f = fixture();
  const std::span<const uint8_t> image = f.recipe.emit();
  ASSERT_EQ(image.size(), f.mapping.bytes().size());
  EXPECT_EQ(std::memcmp(image.data(), f.mapping.bytes().data(), image.size()), 0)
      << "the re-serializer does not reproduce the fixture";
  auto file = gguf::File::parse(image);
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto artifact = validate_artifact(*file);
  ASSERT_TRUE(artifact.ok()) << artifact.error().message;
  EXPECT_EQ(artifact->checkpoint->id, "kipp-test/qwen3-tiny");
  EXPECT_EQ(artifact->scheme, QuantScheme::bf16);
  EXPECT_EQ(artifact->tokenizer.tokens.size(), family::vocab);
  EXPECT_EQ(artifact->weights.layers.size(), 2u);
  EXPECT_EQ(artifact->weights.lm_head.data, artifact->weights.token_embedding.data);  // tied
}

TEST(MalformedArtifact, HarmlessChangesStillValidate) {
  // The harness must not reject what the loader accepts: a changed name, an extra unrelated
  // key, a different but valid tokenizer detail.
  EXPECT_TRUE(verdict(base().set_string(keys::name, "renamed")).ok());
  EXPECT_TRUE(verdict(base().set_string("general.description", "an extra key")).ok());
  EXPECT_TRUE(verdict(base().erase_kv(keys::bos_token_id)).ok());
  EXPECT_TRUE(verdict(base().set_u32(keys::padding_token_id, 0)).ok());
}

TEST(MalformedArtifact, FixtureOpensThroughModelFile) {
  auto model = ModelFile::open(artifact_path());
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->checkpoint().id, "kipp-test/qwen3-tiny");
}

// ---------------------------------------------------------------------------------------------
// Registry match and identity

TEST(MalformedArtifact, CheckpointNotInRegistry) {
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_repository, "Qwen/Qwen3-999B")),
                       {"Qwen/Qwen3-999B@0000000000000000000000000000000000000001", "not in the Kipp registry"}));
  // A known repository at a revision the registry does not pin.
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_revision, "00000000000000000000000000000000000000ff")),
                       {"kipp-test/qwen3-tiny@00000000000000000000000000000000000000ff", "not in the Kipp registry"}));
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_revision, "")), {"not in the Kipp registry"}));
}

TEST(MalformedArtifact, RegistryMismatch) {
  // The source names another entry than kipp.checkpoint does.
  const Checkpoint* untied = find_checkpoint("kipp-test/qwen3-tiny-untied");
  ASSERT_NE(untied, nullptr);
  EXPECT_TRUE(
      Rejected(verdict(base().set_string(keys::kipp_revision, untied->revision)), {"not in the Kipp registry"}));
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_checkpoint, "kipp-test/qwen3-tiny-untied")),
                       {"kipp.checkpoint", "\"kipp-test/qwen3-tiny-untied\"", "expected \"kipp-test/qwen3-tiny\""}));
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::architecture, "llama")),
                       {"general.architecture", "\"llama\"", "expected \"qwen3\""}));
  EXPECT_TRUE(
      Rejected(verdict(base().set_u32(keys::kipp_format_version, 2)), {"kipp.format_version is 2", "expected 1"}));
  // Values from the file are quoted with control bytes masked, so the error stays one line.
  EXPECT_TRUE(
      Rejected(verdict(base().set_string(keys::architecture, "qwen3\nok")), {"general.architecture", "\"qwen3?ok\""}));
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_repository, "x\x1b]0;title\x07")),
                       {"checkpoint x?]0;title?@", "not in the Kipp registry"}));
}

TEST(MalformedArtifact, IdentityKeysMissingOrMistyped) {
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::kipp_repository)), {"kipp.source.repository", "missing"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::kipp_revision)), {"kipp.source.revision", "missing"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::architecture)), {"general.architecture", "missing"}));
  EXPECT_TRUE(Rejected(verdict(base().set_u32(keys::kipp_revision, 1)),
                       {"kipp.source.revision", "expected STRING, found UINT32"}));
}

// ---------------------------------------------------------------------------------------------
// G23: Qwen3 hyper-parameters must equal the registry entry

TEST(MalformedArtifact, G23_HyperparametersMustEqualTheEntry) {
  struct Case {
    std::string_view key;
    uint32_t value;
  };
  for (const Case& c : {Case{keys::head_count, 0}, Case{keys::head_count, 16}, Case{keys::head_count_kv, 3},
                        Case{keys::head_count_kv, 0}, Case{keys::block_count, 3}, Case{keys::block_count, 1},
                        Case{keys::embedding_length, 512}, Case{keys::key_length, 64}, Case{keys::value_length, 256},
                        Case{keys::rope_dimension_count, 64}, Case{keys::feed_forward_length, 0},
                        Case{keys::context_length, 0}, Case{keys::context_length, 0xffffffffu}}) {
    SCOPED_TRACE(std::string(c.key));
    EXPECT_TRUE(
        Rejected(verdict(base().set_u32(c.key, c.value)),
                 {"metadata " + std::string(c.key) + " is " + std::to_string(c.value), "kipp-test/qwen3-tiny"}));
  }
  for (float theta : {0.0f, -1e6f, 1e4f}) {
    EXPECT_TRUE(
        Rejected(verdict(base().set_f32(keys::rope_freq_base, theta)), {"qwen3.rope.freq_base is", "expected 1e+06"}));
  }
  EXPECT_TRUE(
      Rejected(verdict(base().set_f32(keys::rms_epsilon, 1e-5f)), {"layer_norm_rms_epsilon", "expected 1e-06"}));
}

TEST(MalformedArtifact, G23_HyperparametersOfTheWrongType) {
  EXPECT_TRUE(Rejected(verdict(base().set_u64(keys::context_length, uint64_t{1} << 40)),
                       {"qwen3.context_length", "expected UINT32, found UINT64"}));
  EXPECT_TRUE(Rejected(verdict(base().set_i32(keys::embedding_length, 256)),
                       {"qwen3.embedding_length", "expected UINT32, found INT32"}));
  EXPECT_TRUE(Rejected(verdict(base().set_u32(keys::rope_freq_base, 1000000)),
                       {"qwen3.rope.freq_base", "expected FLOAT32, found UINT32"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::head_count)), {"qwen3.attention.head_count", "missing"}));
}

TEST(MalformedArtifact, NonDefaultAlignment) {
  // A valid GGUF (the parser honours 64) that is still not a Kipp artifact.
  EXPECT_TRUE(Rejected(verdict(base().set_u32(keys::alignment, 64)), {"general.alignment is 64", "use 32"}));
  EXPECT_TRUE(Rejected(verdict(base().set_u32(keys::alignment, 48)), {"parse: ", "general.alignment", "power of two"}));
}

// ---------------------------------------------------------------------------------------------
// G24: the exact tensor set

TEST(MalformedArtifact, G24_MissingTensors) {
  for (std::string_view name : {"output_norm.weight", "blk.1.attn_q_norm.weight", "token_embd.weight",
                                "blk.0.ffn_down.weight", "blk.1.attn_k.weight"}) {
    EXPECT_TRUE(Rejected(verdict(base().erase_tensor(name)), {"missing tensor " + std::string(name)}));
  }
}

TEST(MalformedArtifact, G24_UnknownTensors) {
  const auto extra = [](std::string name, std::vector<uint64_t> dims, TensorType type) {
    Recipe r = base();
    r.tensors.push_back({std::move(name), std::move(dims), tt(type), {}});
    return verdict(r);
  };
  // A tied artifact carries no output.weight (the name is refused before its shape is looked at,
  // so a short one keeps the image small); a 2-layer one no blk.2.
  EXPECT_TRUE(Rejected(extra("output.weight", {256, 16}, TensorType::bf16),
                       {"unknown tensor output.weight", "kipp-test/qwen3-tiny"}));
  EXPECT_TRUE(
      Rejected(extra("blk.2.attn_norm.weight", {256}, TensorType::f32), {"unknown tensor blk.2.attn_norm.weight"}));
  EXPECT_TRUE(Rejected(extra("rope_freqs.weight", {64}, TensorType::f32), {"unknown tensor rope_freqs.weight"}));
  // Renaming one tensor: unknown name and a missing one.
  Recipe renamed = base();
  renamed.tensor("blk.0.attn_q.weight").name = "blk.0.attn_qkv.weight";
  EXPECT_TRUE(Rejected(verdict(renamed), {"blk.0.attn_qkv.weight"}));
}

TEST(MalformedArtifact, G24_DuplicateTensor) {
  Recipe r = base();
  r.tensors.push_back(r.tensor("blk.0.attn_norm.weight"));
  EXPECT_TRUE(Rejected(verdict(r), {"parse: ", "tensor blk.0.attn_norm.weight appears twice"}));
}

TEST(MalformedArtifact, WrongShapes) {
  const auto shaped = [](std::string_view name, std::vector<uint64_t> dims) {
    Recipe r = base();
    r.tensor(name).dims = std::move(dims);
    return verdict(r);
  };
  EXPECT_TRUE(Rejected(shaped("blk.0.attn_norm.weight", {128}),
                       {"tensor blk.0.attn_norm.weight", "shape [128], expected [256]"}));
  EXPECT_TRUE(Rejected(shaped("blk.0.attn_norm.weight", {256, 1}), {"shape [256, 1], expected [256]"}));
  // Transposed: the same bytes, the wrong layout.
  EXPECT_TRUE(Rejected(shaped("blk.1.attn_q.weight", {1024, 256}),
                       {"tensor blk.1.attn_q.weight", "shape [1024, 256], expected [256, 1024]"}));
  // G21/G23: fewer embedding rows than tokens, and an embedding width other than hidden.
  EXPECT_TRUE(
      Rejected(shaped("token_embd.weight", {256, 151935}), {"tensor token_embd.weight", "expected [256, 151936]"}));
  EXPECT_TRUE(
      Rejected(shaped("token_embd.weight", {128, 151936}), {"tensor token_embd.weight", "expected [256, 151936]"}));
  EXPECT_TRUE(
      Rejected(shaped("blk.0.attn_k_norm.weight", {64}), {"tensor blk.0.attn_k_norm.weight", "expected [128]"}));
}

// ---------------------------------------------------------------------------------------------
// G25 and the quant scheme: tensor types must follow the scheme

TEST(MalformedArtifact, G25_UnsupportedTensorTypes) {
  const auto typed = [](std::string_view name, TensorType type) {
    Recipe r = base();
    r.tensor(name).type = tt(type);
    return verdict(r);
  };
  EXPECT_TRUE(Rejected(typed("blk.0.attn_q.weight", TensorType::q4_k),
                       {"tensor blk.0.attn_q.weight", "type Q4_K", "expected BF16"}));
  EXPECT_TRUE(Rejected(typed("blk.0.ffn_up.weight", TensorType::q6_k), {"tensor blk.0.ffn_up.weight", "type Q6_K"}));
  EXPECT_TRUE(
      Rejected(typed("token_embd.weight", TensorType::f16), {"tensor token_embd.weight", "type F16", "expected BF16"}));
  EXPECT_TRUE(Rejected(typed("output_norm.weight", TensorType::f64),
                       {"tensor output_norm.weight", "type F64", "expected F32"}));
  EXPECT_TRUE(Rejected(typed("blk.1.ffn_norm.weight", TensorType::bf16),
                       {"tensor blk.1.ffn_norm.weight", "type BF16", "expected F32"}));
  EXPECT_TRUE(Rejected(typed("blk.1.attn_v.weight", TensorType::i16), {"tensor blk.1.attn_v.weight", "type I16"}));
}

TEST(MalformedArtifact, WrongQuantScheme) {
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_quant_scheme, "q4_k_m")),
                       {"kipp.quant.scheme", "\"q4_k_m\"", "expected bf16, q8_0 or affine4_gs32"}));
  // The scheme says q8_0 but the file type is still BF16's.
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_quant_scheme, "q8_0")),
                       {"general.file_type is 32", "expected 7", "q8_0"}));
  EXPECT_TRUE(Rejected(verdict(base().set_u32(keys::file_type, gguf::kFileTypeMostlyQ4_1)),
                       {"general.file_type is 3", "expected 32", "bf16"}));
  // Scheme and file type agree on q8_0, the tensors are BF16.
  Recipe r = base();
  r.set_string(keys::kipp_quant_scheme, "q8_0").set_u32(keys::file_type, gguf::kFileTypeMostlyQ8_0);
  EXPECT_TRUE(Rejected(verdict(r), {"tensor blk.0.attn_q.weight", "type BF16", "expected Q8_0", "scheme q8_0"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::kipp_quant_scheme)), {"kipp.quant.scheme", "missing"}));
}

TEST(MalformedArtifact, WrongHeadScheme) {
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_quant_head, "q4_0")),
                       {"kipp.quant.head", "\"q4_0\"", "expected bf16 or q8_0"}));
  // The key says q8_0, the tied embedding (the head) is BF16.
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::kipp_quant_head, "q8_0")),
                       {"tensor token_embd.weight", "type BF16", "expected Q8_0", "with head q8_0"}));
  // A BF16 head may say so.
  EXPECT_TRUE(verdict(base().set_string(keys::kipp_quant_head, "bf16")).ok());
}

// ---------------------------------------------------------------------------------------------
// G19-G22: tokenizer data

TEST(MalformedArtifact, G19_TokenTypeWrongElementTypeOrLength) {
  std::vector<int32_t> types = fixture_token_types();
  std::vector<uint8_t> narrow(types.begin(), types.end());
  EXPECT_TRUE(Rejected(verdict(base().set(keys::token_type, ValueType::array, enc_pod_array(ValueType::u8, narrow))),
                       {"tokenizer.ggml.token_type", "expected an array of INT32, found an array of UINT8"}));
  std::vector<std::string> as_text(types.size(), "1");
  EXPECT_TRUE(Rejected(verdict(base().set(keys::token_type, ValueType::array, enc_string_array(as_text))),
                       {"tokenizer.ggml.token_type", "found an array of STRING"}));
  EXPECT_TRUE(Rejected(verdict(base().set_i32(keys::token_type, 1)), {"tokenizer.ggml.token_type", "found INT32"}));

  std::vector<int32_t> shorter(types.begin(), types.end() - 1);
  EXPECT_TRUE(Rejected(verdict(base().set(keys::token_type, ValueType::array, enc_pod_array(ValueType::i32, shorter))),
                       {"tokenizer.ggml.token_type has 151935 entries", "expected 151936"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::token_type)), {"tokenizer.ggml.token_type", "missing"}));
  for (int32_t bad : {0, 7, -1}) {
    std::vector<int32_t> changed = types;
    changed[1000] = bad;
    EXPECT_TRUE(
        Rejected(verdict(base().set(keys::token_type, ValueType::array, enc_pod_array(ValueType::i32, changed))),
                 {"tokenizer.ggml.token_type", "token 1000 has type " + std::to_string(bad)}));
  }
}

TEST(MalformedArtifact, G19_ScoresWrongElementTypeOrLength) {
  // Kipp writes no scores (BPE needs none), but one present must be what llama.cpp reads.
  const size_t n = family::vocab;
  EXPECT_TRUE(verdict(base().set("tokenizer.ggml.scores", ValueType::array,
                                 enc_pod_array(ValueType::f32, std::vector<float>(n, 0.0f))))
                  .ok());
  EXPECT_TRUE(Rejected(verdict(base().set("tokenizer.ggml.scores", ValueType::array,
                                          enc_pod_array(ValueType::u8, std::vector<uint8_t>(n, 0)))),
                       {"tokenizer.ggml.scores", "expected an array of FLOAT32, found an array of UINT8"}));
  EXPECT_TRUE(Rejected(verdict(base().set("tokenizer.ggml.scores", ValueType::array,
                                          enc_string_array(std::vector<std::string>(n, "0")))),
                       {"tokenizer.ggml.scores", "found an array of STRING"}));
  EXPECT_TRUE(Rejected(verdict(base().set("tokenizer.ggml.scores", ValueType::array,
                                          enc_pod_array(ValueType::f32, std::vector<float>(n - 1, 0.0f)))),
                       {"tokenizer.ggml.scores has 151935 entries", "expected 151936"}));
}

TEST(MalformedArtifact, G20_SpecialTokenIdsOutOfRange) {
  for (std::string_view key : {keys::bos_token_id, keys::eos_token_id, keys::padding_token_id}) {
    for (uint32_t id : {0xffffffffu, family::vocab, 1u << 31}) {
      EXPECT_TRUE(
          Rejected(verdict(base().set_u32(key, id)),
                   {"metadata " + std::string(key) + " is " + std::to_string(id), "outside the vocabulary of 151936"}));
    }
    EXPECT_TRUE(Rejected(verdict(base().set_i32(key, -1)), {std::string(key), "expected UINT32, found INT32"}));
  }
  // In range, but not the entry's end-of-sequence token.
  EXPECT_TRUE(Rejected(verdict(base().set_u32(keys::eos_token_id, family::token_endoftext)),
                       {"tokenizer.ggml.eos_token_id is 151643", "expected 151645", "kipp-test/qwen3-tiny"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::eos_token_id)), {"tokenizer.ggml.eos_token_id", "missing"}));
}

TEST(MalformedArtifact, AddBosTrue) {
  EXPECT_TRUE(Rejected(verdict(base().set_bool(keys::add_bos_token, true)),
                       {"tokenizer.ggml.add_bos_token is true", "no BOS"}));
  EXPECT_TRUE(
      Rejected(verdict(base().set_u32(keys::add_bos_token, 0)), {"tokenizer.ggml.add_bos_token", "expected BOOL"}));
}

TEST(MalformedArtifact, G21_TokenArrayCounts) {
  std::vector<std::string_view> tokens = fixture_strings(keys::tokens);
  const auto with_tokens = [](const std::vector<std::string_view>& list) {
    return verdict(base().set(keys::tokens, ValueType::array, enc_string_array(list)));
  };
  EXPECT_TRUE(Rejected(with_tokens({}), {"tokenizer.ggml.tokens has 0 entries", "expected 151936"}));
  std::vector<std::string_view> fewer(tokens.begin(), tokens.end() - 1);
  EXPECT_TRUE(Rejected(with_tokens(fewer), {"tokenizer.ggml.tokens has 151935 entries", "expected 151936"}));
  std::vector<std::string_view> more = tokens;
  more.push_back("extra");
  EXPECT_TRUE(Rejected(with_tokens(more), {"tokenizer.ggml.tokens has 151937 entries"}));
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::tokens, "a")),
                       {"tokenizer.ggml.tokens", "expected ARRAY, found STRING"}));
  EXPECT_TRUE(Rejected(verdict(base().set(keys::tokens, ValueType::array,
                                          enc_pod_array(ValueType::u32, std::vector<uint32_t>(family::vocab)))),
                       {"tokenizer.ggml.tokens", "expected an array of STRING, found an array of UINT32"}));
}

TEST(MalformedArtifact, G21_TokenTextTooLongEmptyOrInvalidUtf8) {
  const std::vector<std::string_view> tokens = fixture_strings(keys::tokens);
  const auto with_token = [&](size_t id, std::string_view text) {
    std::vector<std::string_view> changed = tokens;
    changed[id] = text;
    return verdict(base().set(keys::tokens, ValueType::array, enc_string_array(changed)));
  };
  const std::string huge(1 << 20, 'a');  // a 1 MiB token (the CVE-2025-49847 class; 100 MB adds nothing)
  EXPECT_TRUE(Rejected(with_token(500, huge), {"tokenizer.ggml.tokens", "token 500 has 1048576 bytes"}));
  EXPECT_TRUE(Rejected(with_token(7, ""), {"tokenizer.ggml.tokens", "token 7 has 0 bytes"}));
  for (std::string_view bad :
       {std::string_view("\xff"), std::string_view("ab\xc0\xaf"), std::string_view("\xed\xa0\x80"),
        std::string_view("\xe4\xb8"), std::string_view("\xf4\x90\x80\x80"), std::string_view("\x80"),
        std::string_view("a\0\xfe", 3)}) {
    EXPECT_TRUE(Rejected(with_token(1234, bad), {"tokenizer.ggml.tokens", "token 1234 is not valid UTF-8"}));
  }
  // Multi-byte text that is valid stays accepted.
  EXPECT_TRUE(verdict(base().set(keys::tokens, ValueType::array,
                                 [&] {
                                   std::vector<std::string_view> changed = tokens;
                                   changed[151900] = "\xe4\xb8\xad\xf0\x9f\x98\x80";  // U+4E2D U+1F600
                                   return enc_string_array(changed);
                                 }()))
                  .ok());
}

TEST(MalformedArtifact, G22_MergesMalformed) {
  const std::vector<std::string_view> merges = fixture_strings(keys::merges);
  ASSERT_GT(merges.size(), 100u);
  const auto with_merge = [&](size_t rank, std::string_view text) {
    std::vector<std::string_view> changed = merges;
    changed[rank] = text;
    return verdict(base().set(keys::merges, ValueType::array, enc_string_array(changed)));
  };
  for (std::string_view bad : {"Ġthe", " the", "Ġ ", "Ġ t he", "Ġ  t", ""})
    EXPECT_TRUE(
        Rejected(with_merge(42, bad), {"tokenizer.ggml.merges", "merge 42", "two pieces separated by one space"}));
  EXPECT_TRUE(
      Rejected(verdict(base().set(keys::merges, ValueType::array, enc_string_array(std::vector<std::string>{}))),
               {"tokenizer.ggml.merges is empty"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::merges)), {"tokenizer.ggml.merges", "missing"}));
}

TEST(MalformedArtifact, G22_MergesOfAnotherVocabulary) {
  // Byte-level BPE as the Qwen vocabulary was built: merge r joins two pieces into token 256 + r.
  const std::vector<std::string_view> merges = fixture_strings(keys::merges);
  const auto with_merges = [&](const std::vector<std::string_view>& changed) {
    return verdict(base().set(keys::merges, ValueType::array, enc_string_array(changed)));
  };
  std::vector<std::string_view> foreign = merges;
  foreign[42] = "\xc4\xa0 zzzqqqxxx";  // "Ġ zzzqqqxxx": a piece that is no token
  EXPECT_TRUE(Rejected(with_merges(foreign),
                       {"tokenizer.ggml.merges", "merge 42", "zzzqqqxxx", "does not join into token 298"}));
  std::vector<std::string_view> swapped = merges;
  std::swap(swapped[42], swapped[43]);  // out of rank order
  EXPECT_TRUE(Rejected(with_merges(swapped), {"tokenizer.ggml.merges", "merge 42", "does not join into token 298"}));
  // Not checked here: the same joined text split at another byte (the pieces are then looked up,
  // and must be found, when the tokenizer maps each merge to a pair of token ids).
  std::vector<std::string_view> extra = merges;
  extra.push_back("a b");
  EXPECT_TRUE(Rejected(with_merges(extra),
                       {"tokenizer.ggml.merges", "merge " + std::to_string(merges.size()), "does not join"}));
  std::vector<std::string_view> too_many(family::vocab - 255, "a b");
  EXPECT_TRUE(Rejected(with_merges(too_many), {"tokenizer.ggml.merges has 151681 entries", "more than the 151680"}));
}

TEST(MalformedArtifact, TokenizerModelAndTemplateTypes) {
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::tokenizer_model, "llama")),
                       {"tokenizer.ggml.model", "\"llama\"", "expected \"gpt2\""}));
  EXPECT_TRUE(Rejected(verdict(base().set_string(keys::tokenizer_pre, "llama-bpe")),
                       {"tokenizer.ggml.pre", "expected \"qwen2\""}));
  EXPECT_TRUE(
      Rejected(verdict(base().set_u32(keys::chat_template, 1)), {"tokenizer.chat_template", "expected STRING"}));
}

TEST(MalformedArtifact, ProvenanceMalformed) {
  EXPECT_TRUE(Rejected(verdict(base().set(keys::kipp_source_sha256, ValueType::array,
                                          enc_string_array(std::vector<std::string>{}))),
                       {"kipp.source.sha256 has 0 entries"}));
  const std::vector<std::string_view> hashes = fixture_strings(keys::kipp_source_sha256);
  ASSERT_FALSE(hashes.empty());
  std::vector<std::string_view> short_hash = hashes;
  short_hash[0] = "abc";
  EXPECT_TRUE(Rejected(verdict(base().set(keys::kipp_source_sha256, ValueType::array, enc_string_array(short_hash))),
                       {"kipp.source.sha256", "entry 0 is not a SHA-256"}));
  EXPECT_TRUE(Rejected(verdict(base().erase_kv(keys::kipp_converter)), {"kipp.converter.version", "missing"}));
}

// ---------------------------------------------------------------------------------------------
// Through ModelFile::open: the path leads the message

TEST(MalformedArtifact, G17_TruncatedFileOnDisk) {
  const Fixture& f = fixture();
  const std::string dir = testing::scratch_dir("MalformedArtifact.G17");
  const std::string path = dir + "/truncated.gguf";
  {
    // Cut inside the first tensor (token_embd.weight).
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(f.mapping.bytes().data()), std::streamsize(f.file.data_offset + 4096));
  }
  EXPECT_TRUE(Rejected(ModelFile::open(path), {path + ": ", "truncated file", "token_embd.weight"}));

  const std::string empty = dir + "/empty.gguf";
  std::ofstream(empty, std::ios::binary).close();
  EXPECT_TRUE(Rejected(ModelFile::open(empty), {empty + ": ", "not a GGUF file"}));
  EXPECT_TRUE(Rejected(ModelFile::open(dir + "/absent.gguf"), {dir + "/absent.gguf", "cannot open"}));
  EXPECT_TRUE(Rejected(ModelFile::open(dir), {dir, "not a regular file"}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kipp
