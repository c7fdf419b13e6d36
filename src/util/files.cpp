#include "util/files.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
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

namespace {

Status sync_to_disk(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) return fail(path, ": cannot open to flush it to disk: ", std::strerror(errno));
  const bool synced = ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!synced) return fail(path, ": could not flush to disk: ", std::strerror(saved));
  return {};
}

}  // namespace

Status rename_durably(const std::string& from, const std::string& to) {
  KIPP_TRY(sync_to_disk(from, 0));
  if (std::rename(from.c_str(), to.c_str()) != 0)
    return fail(to, ": cannot rename ", from, " onto it: ", std::strerror(errno));
  const std::filesystem::path parent = std::filesystem::path(to).parent_path();
  return sync_to_disk(parent.empty() ? "." : parent.string(), O_DIRECTORY);
}

namespace {

// Removes "<final>.tmp.<pid>" files whose writer is gone (a conversion ended by a signal or a
// crash never ran its cleanup), so interrupted runs do not pile up multi-gigabyte leftovers.
void remove_stale_temporaries(const std::string& final_path) {
  namespace fs = std::filesystem;
  const fs::path target(final_path);
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code error;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) fs::remove(it->path(), error);
  }
}

}  // namespace

Result<AtomicFile> AtomicFile::create(const std::string& final_path) {
  remove_stale_temporaries(final_path);
  AtomicFile out;
  out.final_path_ = final_path;
  out.temp_path_ = final_path + ".tmp." + std::to_string(::getpid());
  out.file_ = std::fopen(out.temp_path_.c_str(), "wb");
  if (!out.file_) return fail(out.temp_path_, ": cannot create: ", std::strerror(errno));
  return out;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : final_path_(std::move(other.final_path_)),
      temp_path_(std::move(other.temp_path_)),
      file_(std::exchange(other.file_, nullptr)),
      written_(other.written_) {}

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
  bool ok = std::fflush(file_) == 0;
  ok = (std::fclose(std::exchange(file_, nullptr)) == 0) && ok;
  if (!ok) {
    std::remove(temp_path_.c_str());
    return fail(temp_path_, ": write failed: ", std::strerror(errno));
  }
  Status renamed = rename_durably(temp_path_, final_path_);
  if (!renamed) std::remove(temp_path_.c_str());  // gone already if only the directory sync failed
  return renamed;
}

namespace {

// A "Name:   123 kB" line of a /proc file, in bytes; 0 when absent.
uint64_t proc_kib_field(const char* path, const std::string& name) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line))
    if (line.rfind(name, 0) == 0) return std::stoull(line.substr(name.size())) * 1024;
  return 0;
}

}  // namespace

uint64_t peak_rss_bytes() { return proc_kib_field("/proc/self/status", "VmHWM:"); }

uint64_t anonymous_memory_bytes() { return proc_kib_field("/proc/self/smaps_rollup", "Anonymous:"); }

}  // namespace kipp
