#include "convert/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "util/files.h"
#include "util/json_fields.h"

namespace kipp {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the safetensors format's own limit

uint64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

Status pread_all(int fd, void* out, uint64_t size, uint64_t offset, const std::string& what) {
  auto* bytes = static_cast<uint8_t*>(out);
  while (size > 0) {
    ssize_t got = ::pread(fd, bytes, size, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      return fail(what, ": read failed at offset ", offset, got < 0 ? ": " : " (unexpected end of file)",
                  got < 0 ? std::strerror(errno) : "");
    bytes += got;
    size -= uint64_t(got);
    offset += uint64_t(got);
  }
  return {};
}

bool plain_file_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

}  // namespace

SafetensorsCheckpoint::SafetensorsCheckpoint(SafetensorsCheckpoint&& other) noexcept
    : tensors_(std::move(other.tensors_)),
      shard_files_(std::move(other.shard_files_)),
      source_files_(std::move(other.source_files_)),
      fds_(std::exchange(other.fds_, {})) {}

SafetensorsCheckpoint& SafetensorsCheckpoint::operator=(SafetensorsCheckpoint&& other) noexcept {
  std::swap(tensors_, other.tensors_);
  std::swap(shard_files_, other.shard_files_);
  std::swap(source_files_, other.source_files_);
  std::swap(fds_, other.fds_);
  return *this;
}

SafetensorsCheckpoint::~SafetensorsCheckpoint() {
  for (int fd : fds_) ::close(fd);
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::string& dir) {
  SafetensorsCheckpoint checkpoint;
  const std::string index_path = dir + "/model.safetensors.index.json";
  struct stat info {};
  if (::stat(index_path.c_str(), &info) != 0) {
    KIPP_TRY(checkpoint.add_shard(dir, "model.safetensors"));
    return checkpoint;
  }

  const std::string what = "model.safetensors.index.json";
  KIPP_ASSIGN(std::string text, read_text_file(index_path));
  KIPP_ASSIGN(json::Json index, json::parse(text, what));
  KIPP_ASSIGN(const json::Json* weight_map, json::field(index, "weight_map", what));
  if (!weight_map->is_object() || weight_map->empty()) return fail(what, ": weight_map must be a non-empty object");
  checkpoint.source_files_.push_back(what);

  std::map<std::string, std::string> shard_of;
  std::vector<std::string> shards;
  for (const auto& [name, file] : weight_map->items()) {
    if (!file.is_string() || !plain_file_name(file.get<std::string>()))
      return fail(what, ": weight_map entry ", name, " must name a file in the same directory");
    shard_of[name] = file.get<std::string>();
    if (std::find(shards.begin(), shards.end(), file.get<std::string>()) == shards.end())
      shards.push_back(file.get<std::string>());
  }
  std::sort(shards.begin(), shards.end());
  for (const auto& shard : shards) KIPP_TRY(checkpoint.add_shard(dir, shard));

  for (const auto& [name, tensor] : checkpoint.tensors_) {
    auto it = shard_of.find(name);
    if (it == shard_of.end())
      return fail(checkpoint.shard_files_[tensor.shard], ": tensor ", name, " is not in ", what);
    if (it->second != checkpoint.shard_files_[tensor.shard])
      return fail(what, ": tensor ", name, " is listed in ", it->second, " but stored in ",
                  checkpoint.shard_files_[tensor.shard]);
  }
  for (const auto& [name, file] : shard_of)
    if (!checkpoint.tensors_.count(name)) return fail(what, ": tensor ", name, " is not in ", file);
  return checkpoint;
}

Status SafetensorsCheckpoint::add_shard(const std::string& dir, const std::string& file_name) {
  const std::string path = dir + "/" + file_name;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(path, ": cannot open: ", std::strerror(errno));
  fds_.push_back(fd);
  const size_t shard = shard_files_.size();
  shard_files_.push_back(file_name);
  source_files_.push_back(file_name);

  struct stat info {};
  if (::fstat(fd, &info) != 0) return fail(path, ": cannot stat");
  const uint64_t file_size = uint64_t(info.st_size);
  uint64_t header_size = 0;
  if (file_size < 8) return fail(file_name, ": too short for a safetensors header");
  KIPP_TRY(pread_all(fd, &header_size, 8, 0, file_name));
  if (header_size > kMaxHeaderBytes || header_size > file_size - 8)
    return fail(file_name, ": header length ", header_size, " exceeds the file or the 100 MiB limit");
  std::string header(header_size, '\0');
  KIPP_TRY(pread_all(fd, header.data(), header_size, 8, file_name));
  KIPP_ASSIGN(json::Json parsed, json::parse(header, file_name + " header"));
  if (!parsed.is_object()) return fail(file_name, ": header is not a JSON object");

  const uint64_t data_start = 8 + header_size;
  const uint64_t data_size = file_size - data_start;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const auto& [name, entry] : parsed.items()) {
    if (name == "__metadata__") continue;
    const std::string what = file_name + ": tensor " + name;
    SafetensorsTensor tensor;
    tensor.name = name;
    tensor.shard = shard;
    KIPP_ASSIGN(tensor.dtype, json::get_string(entry, "dtype", what));
    KIPP_ASSIGN(const json::Json* shape, json::field(entry, "shape", what));
    KIPP_ASSIGN(const json::Json* offsets, json::field(entry, "data_offsets", what));
    if (!shape->is_array()) return fail(what, ": shape must be an array");
    uint64_t elements = 1;
    for (const auto& extent : *shape) {
      if (!extent.is_number_unsigned()) return fail(what, ": shape entries must be non-negative integers");
      const uint64_t value = extent.get<uint64_t>();
      if (value != 0 && elements > (uint64_t(1) << 62) / value) return fail(what, ": shape overflows");
      elements *= value;
      tensor.shape.push_back(value);
    }
    if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      return fail(what, ": data_offsets must be two non-negative integers");
    const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    if (begin > end || end > data_size)
      return fail(what, ": data_offsets [", begin, ", ", end, "] lie outside the ", data_size, " data bytes");
    const uint64_t element_bytes = dtype_bytes(tensor.dtype);
    if (element_bytes == 0) return fail(what, ": unknown dtype ", tensor.dtype);
    if (end - begin != elements * element_bytes)
      return fail(what, ": holds ", end - begin, " bytes, its shape and dtype need ", elements * element_bytes);
    tensor.file_offset = data_start + begin;
    tensor.bytes = end - begin;
    extents.emplace_back(begin, end);
    if (tensors_.count(name)) return fail(what, ": appears in two shards");
    tensors_.emplace(name, std::move(tensor));
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i].first < extents[i - 1].second) return fail(file_name, ": tensor data regions overlap");
  return {};
}

const SafetensorsTensor* SafetensorsCheckpoint::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Status SafetensorsCheckpoint::read(const SafetensorsTensor& tensor, uint64_t offset, void* out, uint64_t size) const {
  if (offset > tensor.bytes || size > tensor.bytes - offset) return fail(tensor.name, ": read beyond the tensor");
  return pread_all(fds_[tensor.shard], out, size, tensor.file_offset + offset, shard_files_[tensor.shard]);
}

}  // namespace kipp
