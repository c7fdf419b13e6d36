#include "gguf/gguf_writer.h"

#include <cstring>

namespace kipp::gguf {

template <class T>
void Writer::put(T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  metadata_.append(bytes, sizeof(T));
}

void Writer::put_string(std::string_view text) {
  put<uint64_t>(text.size());
  metadata_.append(text);
}

void Writer::put_key(std::string_view key, ValueType type) {
  put_string(key);
  put<uint32_t>(static_cast<uint32_t>(type));
  ++metadata_count_;
}

void Writer::add_string(std::string_view key, std::string_view value) {
  put_key(key, ValueType::string);
  put_string(value);
}

void Writer::add_u32(std::string_view key, uint32_t value) {
  put_key(key, ValueType::u32);
  put(value);
}

void Writer::add_f32(std::string_view key, float value) {
  put_key(key, ValueType::f32);
  put(value);
}

void Writer::add_bool(std::string_view key, bool value) {
  put_key(key, ValueType::boolean);
  put<uint8_t>(value ? 1 : 0);
}

void Writer::add_string_array(std::string_view key, const std::vector<std::string>& values) {
  put_key(key, ValueType::array);
  put<uint32_t>(static_cast<uint32_t>(ValueType::string));
  put<uint64_t>(values.size());
  for (const auto& value : values) put_string(value);
}

void Writer::add_i32_array(std::string_view key, const std::vector<int32_t>& values) {
  put_key(key, ValueType::array);
  put<uint32_t>(static_cast<uint32_t>(ValueType::i32));
  put<uint64_t>(values.size());
  for (int32_t value : values) put(value);
}

Status Writer::add_tensor(std::string_view name, std::vector<uint64_t> dims, TensorType type) {
  auto info = tensor_type_info(static_cast<uint32_t>(type));
  if (!info) return fail("tensor ", name, ": unknown type");
  if (dims.empty() || dims.size() > kMaxDims) return fail("tensor ", name, ": bad rank ", dims.size());
  if (name.size() > kMaxTensorNameBytes) return fail("tensor ", name, ": name too long");
  if (dims[0] % info->block_elements != 0)
    return fail("tensor ", name, ": ", dims[0], " columns is not a multiple of ", info->block_elements);
  uint64_t elements = 1;
  for (uint64_t d : dims) elements *= d;
  const uint64_t bytes = elements / info->block_elements * info->block_bytes;
  tensors_.push_back({std::string(name), std::move(dims), type, bytes, data_size_});
  data_size_ = (data_size_ + bytes + kDefaultAlignment - 1) / kDefaultAlignment * kDefaultAlignment;
  return {};
}

Status Writer::pad_to_alignment(AtomicFile& out) {
  static const uint8_t zeros[kDefaultAlignment] = {};
  const uint64_t remainder = out.written() % kDefaultAlignment;
  return remainder ? out.write(zeros, kDefaultAlignment - remainder) : Status{};
}

Status Writer::write_header(AtomicFile& out) {
  std::string header;
  auto put_raw = [&header](const void* data, size_t size) { header.append(static_cast<const char*>(data), size); };
  const uint32_t magic = kMagic, version = kVersion;
  const uint64_t n_tensors = tensors_.size();
  put_raw(&magic, 4);
  put_raw(&version, 4);
  put_raw(&n_tensors, 8);
  put_raw(&metadata_count_, 8);
  header += metadata_;
  for (const PendingTensor& t : tensors_) {
    const uint64_t length = t.name.size();
    put_raw(&length, 8);
    header += t.name;
    const uint32_t n_dims = static_cast<uint32_t>(t.dims.size());
    put_raw(&n_dims, 4);
    for (uint64_t d : t.dims) put_raw(&d, 8);
    const uint32_t type = static_cast<uint32_t>(t.type);
    put_raw(&type, 4);
    put_raw(&t.offset, 8);
  }
  KIPP_TRY(out.write(header.data(), header.size()));
  return pad_to_alignment(out);
}

Status Writer::append_tensor_bytes(AtomicFile& out, std::span<const uint8_t> bytes) {
  if (current_ >= tensors_.size()) return fail("GGUF writer: data beyond the last tensor");
  const PendingTensor& t = tensors_[current_];
  if (bytes.size() > t.bytes - current_written_)
    return fail("GGUF writer: tensor ", t.name, " given more than its ", t.bytes, " bytes");
  KIPP_TRY(out.write(bytes.data(), bytes.size()));
  current_written_ += bytes.size();
  if (current_written_ == t.bytes) {
    ++current_;
    current_written_ = 0;
    KIPP_TRY(pad_to_alignment(out));
  }
  return {};
}

Status Writer::finish(AtomicFile& out) {
  if (current_ != tensors_.size()) return fail("GGUF writer: tensor ", tensors_[current_].name, " is incomplete");
  return out.commit();
}

}  // namespace kipp::gguf
