#include "gguf/gguf_reader.h"

#include <cstring>
#include <limits>

namespace kipp::gguf {
namespace {

// Smallest possible encodings, used to bound counts by the bytes that remain.
constexpr uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;            // key length, 1-byte key, type, u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name length, name, n_dims, 1 dim, type, offset
constexpr uint64_t kMinStringBytes = 8;

class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> image) : image_(image) {}

  uint64_t position() const { return position_; }
  uint64_t remaining() const { return image_.size() - position_; }

  template <class T>
  Result<T> read(const char* what) {
    if (remaining() < sizeof(T))
      return fail("truncated file: ", what, " at offset ", position_, " needs ", sizeof(T), " bytes, ", remaining(),
                  " remain");
    T value;
    std::memcpy(&value, image_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  Result<std::string_view> read_string(const char* what) {
    KIPP_ASSIGN(uint64_t length, read<uint64_t>(what));
    if (length > remaining())
      return fail(what, " at offset ", position_ - 8, ": length ", length, " exceeds the ", remaining(),
                  " bytes left in the file");
    std::string_view text(reinterpret_cast<const char*>(image_.data() + position_), length);
    position_ += length;
    return text;
  }

  Result<std::span<const uint8_t>> take(uint64_t size, const char* what) {
    if (size > remaining())
      return fail(what, " at offset ", position_, ": ", size, " bytes exceed the ", remaining(), " left in the file");
    auto span = image_.subspan(position_, size);
    position_ += size;
    return span;
  }

 private:
  std::span<const uint8_t> image_;
  uint64_t position_ = 0;
};

bool valid_value_type(uint32_t raw) { return raw < kValueTypeCount; }

// Keys and tensor names are quoted in error lines and listings, so control bytes (a newline, a
// terminal escape) are refused rather than printed.
bool has_control_bytes(std::string_view text) {
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

Status read_scalar(Cursor& in, ValueType type, Value& out, const std::string& where) {
  const char* what = where.c_str();
  switch (type) {
    case ValueType::u8: {
      KIPP_ASSIGN(out.as_unsigned, in.read<uint8_t>(what));
      break;
    }
    case ValueType::i8: {
      KIPP_ASSIGN(out.as_signed, in.read<int8_t>(what));
      break;
    }
    case ValueType::u16: {
      KIPP_ASSIGN(out.as_unsigned, in.read<uint16_t>(what));
      break;
    }
    case ValueType::i16: {
      KIPP_ASSIGN(out.as_signed, in.read<int16_t>(what));
      break;
    }
    case ValueType::u32: {
      KIPP_ASSIGN(out.as_unsigned, in.read<uint32_t>(what));
      break;
    }
    case ValueType::i32: {
      KIPP_ASSIGN(out.as_signed, in.read<int32_t>(what));
      break;
    }
    case ValueType::u64: {
      KIPP_ASSIGN(out.as_unsigned, in.read<uint64_t>(what));
      break;
    }
    case ValueType::i64: {
      KIPP_ASSIGN(out.as_signed, in.read<int64_t>(what));
      break;
    }
    case ValueType::f32: {
      KIPP_ASSIGN(out.as_float, in.read<float>(what));
      break;
    }
    case ValueType::f64: {
      KIPP_ASSIGN(out.as_float, in.read<double>(what));
      break;
    }
    case ValueType::boolean: {
      KIPP_ASSIGN(uint8_t flag, in.read<uint8_t>(what));
      if (flag > 1) return fail(where, ": boolean byte is ", unsigned{flag}, ", expected 0 or 1");
      out.as_unsigned = flag;
      break;
    }
    case ValueType::string: {
      KIPP_ASSIGN(out.as_string, in.read_string(what));
      break;
    }
    case ValueType::array: return fail(where, ": unexpected array");
  }
  return {};
}

Status read_value(Cursor& in, ValueType type, Value& out, const std::string& where) {
  out.type = type;
  if (type != ValueType::array) return read_scalar(in, type, out, where);

  KIPP_ASSIGN(uint32_t raw_element, in.read<uint32_t>(where.c_str()));
  if (!valid_value_type(raw_element))
    return fail(where, ": array element type ", raw_element, " is not a GGUF value type");
  out.element_type = static_cast<ValueType>(raw_element);
  if (out.element_type == ValueType::array) return fail(where, ": arrays of arrays are not supported");
  KIPP_ASSIGN(out.count, in.read<uint64_t>(where.c_str()));

  if (out.element_type == ValueType::string) {
    if (out.count > in.remaining() / kMinStringBytes)
      return fail(where, ": array of ", out.count, " strings cannot fit in the ", in.remaining(),
                  " bytes left in the file");
    out.strings.reserve(out.count);
    for (uint64_t i = 0; i < out.count; ++i) {
      KIPP_ASSIGN(std::string_view text, in.read_string(where.c_str()));
      out.strings.push_back(text);
    }
    return {};
  }
  const uint64_t element_size = value_type_size(out.element_type);
  if (out.count > in.remaining() / element_size)
    return fail(where, ": array of ", out.count, " x ", value_type_name(out.element_type), " exceeds the ",
                in.remaining(), " bytes left in the file");
  KIPP_ASSIGN(out.raw, in.take(out.count * element_size, where.c_str()));
  if (out.element_type == ValueType::boolean)
    for (uint8_t flag : out.raw)
      if (flag > 1) return fail(where, ": boolean element is ", unsigned{flag}, ", expected 0 or 1");
  return {};
}

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

Status read_tensor_info(Cursor& in, TensorInfo& info, uint64_t index) {
  const std::string where = "tensor #" + std::to_string(index);
  KIPP_ASSIGN(info.name, in.read_string((where + " name").c_str()));
  if (info.name.empty()) return fail(where, ": empty name");
  if (has_control_bytes(info.name)) return fail(where, ": name contains control bytes");
  if (info.name.size() > kMaxTensorNameBytes)
    return fail(where, ": name of ", info.name.size(), " bytes exceeds the ", kMaxTensorNameBytes, "-byte limit");
  const std::string named = "tensor " + std::string(info.name);
  KIPP_ASSIGN(info.n_dims, in.read<uint32_t>(named.c_str()));
  if (info.n_dims == 0 || info.n_dims > kMaxDims)
    return fail(named, ": ", info.n_dims, " dimensions, expected 1 to ", kMaxDims);
  info.elements = 1;
  for (uint32_t d = 0; d < info.n_dims; ++d) {
    KIPP_ASSIGN(uint64_t extent, in.read<uint64_t>(named.c_str()));
    if (extent == 0 || extent > uint64_t(std::numeric_limits<int64_t>::max()))
      return fail(named, ": dimension ", d, " has invalid extent ", static_cast<int64_t>(extent));
    if (info.elements > uint64_t(std::numeric_limits<int64_t>::max()) / extent)
      return fail(named, ": element count overflows (dimension ", d, " = ", extent, ")");
    info.dims[d] = extent;
    info.elements *= extent;
  }
  KIPP_ASSIGN(info.type, in.read<uint32_t>(named.c_str()));
  auto type_info = tensor_type_info(info.type);
  if (!type_info) return fail(named, ": unknown ggml type ", static_cast<int32_t>(info.type));
  if (info.dims[0] % type_info->block_elements != 0)
    return fail(named, ": first dimension ", info.dims[0], " is not a multiple of the ", type_info->name,
                " block size ", type_info->block_elements);
  const uint64_t blocks = info.elements / type_info->block_elements;
  if (blocks > std::numeric_limits<uint64_t>::max() / type_info->block_bytes)
    return fail(named, ": byte size overflows");
  info.bytes = blocks * type_info->block_bytes;
  KIPP_ASSIGN(info.offset, in.read<uint64_t>(named.c_str()));
  return {};
}

}  // namespace

Result<File> File::parse(std::span<const uint8_t> image) {
  Cursor in(image);
  if (image.size() < 4) return fail("not a GGUF file: ", image.size(), " bytes is too short for the magic");
  KIPP_ASSIGN(uint32_t magic, in.read<uint32_t>("magic"));
  if (magic != kMagic) return fail("not a GGUF file: bad magic");

  File file;
  KIPP_ASSIGN(file.version, in.read<uint32_t>("version"));
  if (file.version != kVersion) {
    if (file.version == __builtin_bswap32(kVersion))
      return fail("GGUF version is byte-swapped (", file.version, "): big-endian files are not supported");
    return fail("unsupported GGUF version ", file.version, ", expected ", kVersion);
  }
  KIPP_ASSIGN(int64_t n_tensors, in.read<int64_t>("tensor count"));
  KIPP_ASSIGN(int64_t n_kv, in.read<int64_t>("metadata count"));
  if (n_tensors < 0 || uint64_t(n_tensors) > in.remaining() / kMinTensorInfoBytes)
    return fail("tensor count ", n_tensors, " is impossible for a file of ", image.size(), " bytes");
  if (n_kv < 0 || uint64_t(n_kv) > in.remaining() / kMinKeyValueBytes)
    return fail("metadata count ", n_kv, " is impossible for a file of ", image.size(), " bytes");

  file.metadata.reserve(size_t(n_kv));
  for (int64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    const std::string where = "metadata #" + std::to_string(i);
    KIPP_ASSIGN(kv.key, in.read_string((where + " key").c_str()));
    if (kv.key.empty()) return fail(where, ": empty key");
    if (has_control_bytes(kv.key)) return fail(where, ": key contains control bytes");
    if (file.key_index_.count(kv.key)) return fail("metadata key ", kv.key, " appears twice");
    const std::string named = "metadata " + std::string(kv.key);
    KIPP_ASSIGN(uint32_t raw_type, in.read<uint32_t>(named.c_str()));
    if (!valid_value_type(raw_type)) return fail(named, ": value type ", raw_type, " is not a GGUF value type");
    KIPP_TRY(read_value(in, static_cast<ValueType>(raw_type), kv.value, named));
    file.key_index_.emplace(kv.key, file.metadata.size());
    file.metadata.push_back(std::move(kv));
  }

  if (const Value* alignment = file.find("general.alignment")) {
    if (alignment->type != ValueType::u32)
      return fail("metadata general.alignment: expected UINT32, found ", value_type_name(alignment->type));
    const uint64_t value = alignment->as_unsigned;
    if (value == 0 || (value & (value - 1)) != 0 || value > kMaxAlignment)
      return fail("metadata general.alignment: ", value, " is not a power of two up to ", kMaxAlignment);
    file.alignment = uint32_t(value);
  }

  file.tensors.resize(size_t(n_tensors));
  for (int64_t i = 0; i < n_tensors; ++i) {
    TensorInfo& info = file.tensors[size_t(i)];
    KIPP_TRY(read_tensor_info(in, info, uint64_t(i)));
    if (!file.tensor_index_.emplace(info.name, size_t(i)).second) return fail("tensor ", info.name, " appears twice");
  }

  file.data_offset = align_up(in.position(), file.alignment);
  if (file.data_offset > image.size() && n_tensors > 0)
    return fail("truncated file: the tensor data section would start at ", file.data_offset, " but the file has ",
                image.size(), " bytes");
  // Tensors must lie back to back in directory order, each at the next aligned offset:
  // this rules out overlap, gaps that hide data, misalignment and offsets past the end.
  uint64_t expected_offset = 0;
  for (TensorInfo& info : file.tensors) {
    if (info.offset != expected_offset)
      return fail("tensor ", info.name, ": data offset ", info.offset, ", expected ", expected_offset,
                  " (tensors must be packed in directory order at ", file.alignment, "-byte alignment)");
    const uint64_t available = image.size() - file.data_offset;
    if (info.offset > available || info.bytes > available - info.offset)
      return fail("truncated file: tensor ", info.name, " needs bytes ", file.data_offset + info.offset, "..",
                  file.data_offset + info.offset + info.bytes, " but the file has ", image.size());
    info.data = image.subspan(file.data_offset + info.offset, info.bytes);
    expected_offset = align_up(info.offset + info.bytes, file.alignment);
  }
  return file;
}

const Value* File::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata[it->second].value;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

Result<const Value*> File::get_typed(std::string_view key, ValueType type) const {
  const Value* value = find(key);
  if (!value) return fail("metadata ", key, " is missing");
  if (value->type != type)
    return fail("metadata ", key, ": expected ", value_type_name(type), ", found ", value_type_name(value->type));
  return value;
}

Result<uint32_t> File::get_u32(std::string_view key) const {
  KIPP_ASSIGN(const Value* value, get_typed(key, ValueType::u32));
  return uint32_t(value->as_unsigned);
}

Result<float> File::get_f32(std::string_view key) const {
  KIPP_ASSIGN(const Value* value, get_typed(key, ValueType::f32));
  return float(value->as_float);
}

Result<bool> File::get_bool(std::string_view key) const {
  KIPP_ASSIGN(const Value* value, get_typed(key, ValueType::boolean));
  return value->as_unsigned != 0;
}

Result<std::string_view> File::get_string(std::string_view key) const {
  KIPP_ASSIGN(const Value* value, get_typed(key, ValueType::string));
  return value->as_string;
}

Result<const Value*> File::get_array(std::string_view key, ValueType element_type) const {
  KIPP_ASSIGN(const Value* value, get_typed(key, ValueType::array));
  if (value->element_type != element_type)
    return fail("metadata ", key, ": expected an array of ", value_type_name(element_type), ", found an array of ",
                value_type_name(value->element_type));
  return value;
}

}  // namespace kipp::gguf
