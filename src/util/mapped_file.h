// A read-only memory mapping of a whole file. Weights are views into it; nothing is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "util/error.h"

namespace kipp {

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release();

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Drops this process's page mappings for the whole pages inside [data, data + bytes) of a
// read-only file mapping: they leave the resident set, stay in the page cache, and fault back in
// if touched again. For data that was copied elsewhere.
void release_pages(const void* data, size_t bytes);

}  // namespace kipp
