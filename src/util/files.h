// Small file-system helpers: whole-file reads and the write-to-temporary-then-rename
// discipline that keeps a half-written artifact from ever carrying its final name.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "util/error.h"

namespace kipp {

Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes = 64ull << 20);

// Gives `from` the name `to` so that the result survives a power loss too: fsync of from's bytes,
// rename(2), fsync of the directory. The rename alone is atomic against a process killed at any
// instant (the old name or the new one, never half), but without the first sync a crash could
// leave the new name on bytes that never reached the disk, and without the second the rename
// itself could be undone after the caller reported success.
Status rename_durably(const std::string& from, const std::string& to);

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
  Status commit();  // flush, then rename_durably
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
