// Small file-system helpers: whole-file reads and the write-to-temporary-then-rename
// discipline that keeps a half-written artifact from ever carrying its final name.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "util/error.h"

namespace kipp {

Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes = 64ull << 20);

// A file written under "<final>.tmp.<pid>" and renamed onto <final> by commit().
// Destroying it uncommitted removes the temporary; the final path is never touched. Creating one
// also removes temporaries of the same final path left by processes that no longer exist.
class AtomicFile {
 public:
  static Result<AtomicFile> create(const std::string& final_path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  Status write(const void* data, size_t size);
  uint64_t written() const { return written_; }
  Status commit();  // flush, fsync, rename
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFile() = default;
  std::string final_path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;
};

// Peak resident set size of this process so far, in bytes (VmHWM).
uint64_t peak_rss_bytes();
// Private anonymous memory of this process now (heap, stacks, allocations; not mapped files).
uint64_t anonymous_memory_bytes();

}  // namespace kipp
