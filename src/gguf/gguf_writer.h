// Writes a GGUF v3 file as a stream: metadata and tensor directory first, then each
// tensor's bytes in directory order, so a converter never holds more than one chunk.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_format.h"
#include "util/error.h"
#include "util/files.h"

namespace kipp::gguf {

class Writer {
 public:
  void add_string(std::string_view key, std::string_view value);
  void add_u32(std::string_view key, uint32_t value);
  void add_f32(std::string_view key, float value);
  void add_bool(std::string_view key, bool value);
  void add_string_array(std::string_view key, const std::vector<std::string>& values);
  void add_i32_array(std::string_view key, const std::vector<int32_t>& values);

  // dims[0] is the contiguous dimension (columns of a row-major matrix).
  Status add_tensor(std::string_view name, std::vector<uint64_t> dims, TensorType type);

  // Streaming phase: header, then every tensor's bytes in the order they were added.
  Status write_header(AtomicFile& out);
  Status append_tensor_bytes(AtomicFile& out, std::span<const uint8_t> bytes);
  Status finish(AtomicFile& out);  // checks every tensor is complete, then commits

 private:
  struct PendingTensor {
    std::string name;
    std::vector<uint64_t> dims;
    TensorType type;
    uint64_t bytes;
    uint64_t offset;
  };
  void put_key(std::string_view key, ValueType type);
  void put_string(std::string_view text);
  template <class T>
  void put(T value);
  Status pad_to_alignment(AtomicFile& out);

  std::string metadata_;
  uint64_t metadata_count_ = 0;
  std::vector<PendingTensor> tensors_;
  uint64_t data_size_ = 0;
  size_t current_ = 0;            // tensor being streamed
  uint64_t current_written_ = 0;  // its bytes so far
};

}  // namespace kipp::gguf
