// Facts of the GGUF v3 container (from its published specification) and of the ggml tensor
// types Kipp can describe. Kipp itself writes and binds only F32, BF16, Q8_0 and Q4_1.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kipp::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kVersion = 3;
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxAlignment = 1u << 16;
inline constexpr size_t kMaxTensorNameBytes = 63;  // ggml keeps 64 bytes including the NUL
inline constexpr uint32_t kMaxDims = 4;

enum class ValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

std::string_view value_type_name(ValueType type);
// Bytes per element for fixed-size value types; 0 for string and array.
uint32_t value_type_size(ValueType type);

// ggml tensor type ids that Kipp knows the storage of.
enum class TensorType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  bf16 = 30,
};

struct TensorTypeInfo {
  std::string_view name;
  uint32_t block_elements;  // elements per block along the first dimension
  uint32_t block_bytes;
};
std::optional<TensorTypeInfo> tensor_type_info(uint32_t type_id);

// llama.cpp's general.file_type values for the schemes Kipp writes.
inline constexpr uint32_t kFileTypeMostlyQ4_1 = 3;
inline constexpr uint32_t kFileTypeMostlyQ8_0 = 7;
inline constexpr uint32_t kFileTypeMostlyBF16 = 32;
inline constexpr uint32_t kQuantizationVersion = 2;

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

}  // namespace kipp::gguf
