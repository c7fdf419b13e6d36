#include "gguf/gguf_format.h"

namespace kipp::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::u8: return "UINT8";
    case ValueType::i8: return "INT8";
    case ValueType::u16: return "UINT16";
    case ValueType::i16: return "INT16";
    case ValueType::u32: return "UINT32";
    case ValueType::i32: return "INT32";
    case ValueType::f32: return "FLOAT32";
    case ValueType::boolean: return "BOOL";
    case ValueType::string: return "STRING";
    case ValueType::array: return "ARRAY";
    case ValueType::u64: return "UINT64";
    case ValueType::i64: return "INT64";
    case ValueType::f64: return "FLOAT64";
  }
  return "INVALID";
}

uint32_t value_type_size(ValueType type) {
  switch (type) {
    case ValueType::u8:
    case ValueType::i8:
    case ValueType::boolean: return 1;
    case ValueType::u16:
    case ValueType::i16: return 2;
    case ValueType::u32:
    case ValueType::i32:
    case ValueType::f32: return 4;
    case ValueType::u64:
    case ValueType::i64:
    case ValueType::f64: return 8;
    case ValueType::string:
    case ValueType::array: return 0;
  }
  return 0;
}

std::optional<TensorTypeInfo> tensor_type_info(uint32_t type_id) {
  switch (static_cast<TensorType>(type_id)) {
    case TensorType::f32: return TensorTypeInfo{"F32", 1, 4};
    case TensorType::f16: return TensorTypeInfo{"F16", 1, 2};
    case TensorType::q4_0: return TensorTypeInfo{"Q4_0", 32, 18};
    case TensorType::q4_1: return TensorTypeInfo{"Q4_1", 32, 20};
    case TensorType::q5_0: return TensorTypeInfo{"Q5_0", 32, 22};
    case TensorType::q5_1: return TensorTypeInfo{"Q5_1", 32, 24};
    case TensorType::q8_0: return TensorTypeInfo{"Q8_0", 32, 34};
    case TensorType::q8_1: return TensorTypeInfo{"Q8_1", 32, 36};
    case TensorType::q2_k: return TensorTypeInfo{"Q2_K", 256, 84};
    case TensorType::q3_k: return TensorTypeInfo{"Q3_K", 256, 110};
    case TensorType::q4_k: return TensorTypeInfo{"Q4_K", 256, 144};
    case TensorType::q5_k: return TensorTypeInfo{"Q5_K", 256, 176};
    case TensorType::q6_k: return TensorTypeInfo{"Q6_K", 256, 210};
    case TensorType::q8_k: return TensorTypeInfo{"Q8_K", 256, 292};
    case TensorType::i8: return TensorTypeInfo{"I8", 1, 1};
    case TensorType::i16: return TensorTypeInfo{"I16", 1, 2};
    case TensorType::i32: return TensorTypeInfo{"I32", 1, 4};
    case TensorType::i64: return TensorTypeInfo{"I64", 1, 8};
    case TensorType::f64: return TensorTypeInfo{"F64", 1, 8};
    case TensorType::bf16: return TensorTypeInfo{"BF16", 1, 2};
  }
  return std::nullopt;
}

}  // namespace kipp::gguf
