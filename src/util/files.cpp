#include "util/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace kipp {

Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return fail(path, ": cannot open: ", std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    if (text.size() + got > max_bytes) {
      std::fclose(file);
      return fail(path, ": larger than the ", max_bytes, "-byte limit for this file");
    }
    text.append(buffer, got);
  }
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return fail(path, ": read error");
  return text;
}

Result<AtomicFile> AtomicFile::create(const std::string& final_path) {
  AtomicFile out;
  out.final_path_ = final_path;
  out.temp_path_ = final_path + ".tmp." + std::to_string(::getpid());
  out.file_ = std::fopen(out.temp_path_.c_str(), "wb");
  if (!out.file_) return fail(out.temp_path_, ": cannot create: ", std::strerror(errno));
  return out;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : final_path_(std::move(other.final_path_)), temp_path_(std::move(other.temp_path_)),
      file_(std::exchange(other.file_, nullptr)), written_(other.written_) {}

AtomicFile::~AtomicFile() {
  if (file_) {
    std::fclose(file_);
    std::remove(temp_path_.c_str());
  }
}

Status AtomicFile::write(const void* data, size_t size) {
  if (size && std::fwrite(data, 1, size, file_) != size)
    return fail(temp_path_, ": write failed: ", std::strerror(errno));
  written_ += size;
  return {};
}

Status AtomicFile::commit() {
  bool ok = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  ok = (std::fclose(std::exchange(file_, nullptr)) == 0) && ok;
  if (!ok) {
    std::remove(temp_path_.c_str());
    return fail(temp_path_, ": could not flush to disk: ", std::strerror(errno));
  }
  if (std::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    int saved = errno;
    std::remove(temp_path_.c_str());
    return fail(final_path_, ": cannot rename the finished file into place: ", std::strerror(saved));
  }
  return {};
}

uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

}  // namespace kipp
