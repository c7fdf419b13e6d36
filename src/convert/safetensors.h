// Reads BF16 tensors from a Hugging Face safetensors checkpoint, single-file or sharded with
// model.safetensors.index.json. Reads are positioned (pread) into caller buffers, so converting
// never maps or holds a whole file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/error.h"

namespace kipp {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;            // "BF16", "F32", ...
  std::vector<uint64_t> shape;  // row-major, outermost first
  size_t shard = 0;             // index into SafetensorsCheckpoint::shard_files()
  uint64_t file_offset = 0;     // absolute offset of the first byte in its shard
  uint64_t bytes = 0;
};

class SafetensorsCheckpoint {
 public:
  // Opens dir/model.safetensors.index.json and its shards if the index exists, else dir/model.safetensors.
  static Result<SafetensorsCheckpoint> open(const std::string& dir);
  SafetensorsCheckpoint(SafetensorsCheckpoint&&) noexcept;
  SafetensorsCheckpoint& operator=(SafetensorsCheckpoint&&) noexcept;
  ~SafetensorsCheckpoint();

  const SafetensorsTensor* find(const std::string& name) const;
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  // Every file read: the index (if any), then the shards, as names relative to the directory.
  const std::vector<std::string>& source_files() const { return source_files_; }
  const std::vector<std::string>& shard_files() const { return shard_files_; }

  // Reads `size` bytes starting `offset` bytes into the tensor's data.
  Status read(const SafetensorsTensor& tensor, uint64_t offset, void* out, uint64_t size) const;

 private:
  SafetensorsCheckpoint() = default;
  Status add_shard(const std::string& dir, const std::string& file_name);

  std::map<std::string, SafetensorsTensor> tensors_;
  std::vector<std::string> shard_files_;
  std::vector<std::string> source_files_;
  std::vector<int> fds_;
};

}  // namespace kipp
