#include "pull/hf_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "pull/hub.h"
#include "util/files.h"

namespace kipp::pull {
namespace {

constexpr const char* kBlobSource = "HF cache blob name";

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// The name of the blob a snapshot entry links to, or "" when it is not a symlink.
std::string blob_name(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_symlink(path, error)) return {};
  const std::filesystem::path target = std::filesystem::read_symlink(path, error);
  return error ? std::string() : target.filename().string();
}

// Verifies one snapshot file against the name of its blob.
Result<FileOutcome> verify_cached(const std::string& dir, const std::string& name, ProgressDisplay* progress) {
  const std::string path = dir + "/" + name;
  const std::string blob = blob_name(path);
  HubFile stated;
  stated.name = name;
  if (is_lower_hex(blob, 64)) {
    stated.sha256 = blob;
    stated.sha256_source = kBlobSource;
  } else if (is_lower_hex(blob, 40)) {
    stated.git_sha1 = blob;
    stated.git_sha1_source = kBlobSource;
  }
  KIPP_ASSIGN(FileCheck check, check_file(path, stated, progress));
  if (!check.matches)
    return fail(path, " -> blobs/", blob, ": the Hugging Face cache is damaged (", check.mismatch,
                "); delete that blob, or pull with --no-hf-cache");
  FileOutcome outcome;
  outcome.name = name;
  outcome.path = path;
  outcome.size = check.size;
  outcome.sha256 = check.sha256;
  outcome.reused = true;
  outcome.in_hf_cache = true;
  outcome.verified = check.verified;
  outcome.verification = check.verified ? check.verification : "NOT verified: not a link to a blob named by its hash";
  return outcome;
}

}  // namespace

std::string hf_snapshot_dir(const std::string& cache_dir, const Checkpoint& checkpoint) {
  const std::string_view repository = checkpoint.repository;  // "Org/Name" -> models--Org--Name
  const size_t slash = repository.find('/');
  const std::string folder =
      "models--" + std::string(repository.substr(0, slash)) + "--" + std::string(repository.substr(slash + 1));
  return cache_dir + "/" + folder + "/snapshots/" + std::string(checkpoint.revision);
}

Result<CacheLookup> find_cached_snapshot(const std::string& cache_dir, const Checkpoint& checkpoint,
                                         ProgressDisplay* progress) {
  CacheLookup lookup;
  const std::string dir = hf_snapshot_dir(cache_dir, checkpoint);
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return lookup;

  std::vector<std::string> needed, missing;
  for (const WantedFile& wanted : wanted_files(checkpoint)) {
    const std::string name(wanted.name);
    if (exists(dir + "/" + name)) needed.push_back(name);
    else if (wanted.required) missing.push_back(name);
  }
  if (exists(dir + "/" + kWeightsIndex)) {
    needed.push_back(kWeightsIndex);
    KIPP_ASSIGN(std::string index, read_text_file(dir + "/" + kWeightsIndex));
    KIPP_ASSIGN(std::vector<std::string> shards, index_shard_names(index));
    for (const std::string& shard : shards) (exists(dir + "/" + shard) ? needed : missing).push_back(shard);
  } else if (exists(dir + "/" + kSingleWeights)) {
    needed.push_back(kSingleWeights);
  } else {
    missing.push_back(std::string(kSingleWeights) + " or " + kWeightsIndex);
  }
  if (!missing.empty()) {
    for (size_t i = 0; i < missing.size(); ++i) lookup.missing += (i ? ", " : "") + missing[i];
    return lookup;
  }

  CachedSnapshot snapshot;
  snapshot.dir = dir;
  for (const std::string& name : needed) {
    KIPP_ASSIGN(FileOutcome outcome, verify_cached(dir, name, progress));
    snapshot.files.push_back(std::move(outcome));
  }
  lookup.snapshot = std::move(snapshot);
  return lookup;
}

}  // namespace kipp::pull
