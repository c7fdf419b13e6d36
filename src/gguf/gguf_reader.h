// Parses a GGUF v3 image held in memory (normally a read-only mapping) into views.
// Every count, length and offset is checked against the bytes that remain before anything is
// sized by it, so a hostile file costs at most its own size. This layer knows GGUF, not Qwen3:
// model/model_file.h applies the registry's rules on top.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf_format.h"
#include "util/error.h"

namespace kipp::gguf {

struct Value {
  ValueType type = ValueType::u8;
  uint64_t as_unsigned = 0;  // u8..u64 and bool
  int64_t as_signed = 0;     // i8..i64
  double as_float = 0.0;     // f32, f64
  std::string_view as_string;
  // Arrays: element type and count; fixed-size elements stay raw little-endian bytes.
  ValueType element_type = ValueType::u8;
  uint64_t count = 0;
  std::span<const uint8_t> raw;
  std::vector<std::string_view> strings;
};

struct KeyValue {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  uint32_t n_dims = 0;
  std::array<uint64_t, kMaxDims> dims{1, 1, 1, 1};  // dims[0] is the contiguous dimension
  uint32_t type = 0;
  uint64_t offset = 0;  // relative to the data section
  uint64_t elements = 0;
  uint64_t bytes = 0;
  std::span<const uint8_t> data;
};

class File {
 public:
  static Result<File> parse(std::span<const uint8_t> image);

  uint32_t version = 0;
  uint32_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;  // file offset of the tensor data section
  std::vector<KeyValue> metadata;
  std::vector<TensorInfo> tensors;

  const Value* find(std::string_view key) const;
  const TensorInfo* find_tensor(std::string_view name) const;

  // Typed metadata access: a missing key or a value of another type is an error naming both.
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  Result<const Value*> get_array(std::string_view key, ValueType element_type) const;

 private:
  Result<const Value*> get_typed(std::string_view key, ValueType type) const;
  std::unordered_map<std::string_view, size_t> key_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace kipp::gguf
