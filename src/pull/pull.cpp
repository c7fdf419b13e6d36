#include "pull/pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "pull/hf_cache.h"
#include "pull/hub.h"
#include "pull/http_fetch.h"
#include "util/files.h"

namespace kipp::pull {
namespace {

// Holds an exclusive flock on the download directory, so two pulls of one checkpoint never write
// the same .part. The lock lives on the directory itself: nothing is left behind.
class DirectoryLock {
 public:
  static Result<DirectoryLock> acquire(const std::string& dir) {
    DirectoryLock lock;
    lock.fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock.fd_ < 0) return fail(dir, ": cannot open: ", std::strerror(errno));
    if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK)
        return fail(dir, ": another kipp pull is downloading this checkpoint; wait for it to finish");
      return fail(dir, ": cannot lock: ", std::strerror(errno));
    }
    return lock;
  }
  DirectoryLock(DirectoryLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  DirectoryLock(const DirectoryLock&) = delete;
  ~DirectoryLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }

 private:
  DirectoryLock() = default;
  int fd_ = -1;
};

Result<std::string> normalize_endpoint(std::string endpoint) {
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const bool http = endpoint.rfind("http://", 0) == 0 && endpoint.size() > 7;
  const bool https = endpoint.rfind("https://", 0) == 0 && endpoint.size() > 8;
  if (!http && !https) return fail("--endpoint \"", endpoint, "\": expected an http:// or https:// URL");
  return endpoint;
}

Status make_directory(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return fail(dir, ": cannot create the directory: ", error.message());
  return {};
}

std::optional<uint64_t> size_on_disk(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(info.st_size);
}

// Refuses to start transfers that cannot fit: the bytes still to come against the free space.
Status check_free_space(const std::string& dir, const std::vector<HubFile>& files) {
  uint64_t needed = 0;
  for (const HubFile& file : files) {
    if (!file.size) continue;
    const std::string path = dir + "/" + file.name;
    if (size_on_disk(path)) continue;
    needed += *file.size - std::min(*file.size, size_on_disk(path + ".part").value_or(0));
  }
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) != 0) return {};  // unknown: the writes themselves will tell
  const uint64_t free_bytes = uint64_t(info.f_bavail) * uint64_t(info.f_frsize);
  if (needed > free_bytes)
    return fail(dir, ": the download needs ", format_bytes(needed), " more, only ", format_bytes(free_bytes),
                " is free");
  return {};
}

// What the hub holds at the revision: from the listing when it serves one, else by HEAD probes.
class HubView {
 public:
  HubView(HubClient client, HubRepo repo, HubListing listing)
      : client_(std::move(client)), repo_(std::move(repo)), listing_(std::move(listing)) {}

  // A file at the root, or in a folder (1_Pooling/config.json), whose listing is fetched the first
  // time a file in it is asked for.
  Result<std::optional<HubFile>> find(const std::string& name) const {
    if (!listing_.available) return probe_file(client_, repo_, name);
    const size_t slash = name.rfind('/');
    const HubListing* listing = &listing_;
    if (slash != std::string::npos) {
      const std::string folder = name.substr(0, slash);
      auto it = folders_.find(folder);
      if (it == folders_.end()) {
        KIPP_ASSIGN(HubListing fetched, fetch_listing(client_, repo_, folder));
        it = folders_.emplace(folder, std::move(fetched)).first;
      }
      listing = &it->second;
    }
    auto it = listing->files.find(name);
    if (it == listing->files.end()) return std::optional<HubFile>();
    return std::optional<HubFile>(it->second);
  }

  Result<HubFile> require(const std::string& name, const std::string& why) const {
    KIPP_ASSIGN(std::optional<HubFile> file, find(name));
    if (!file) return missing(name, why);
    return *file;
  }

  Error missing(const std::string& name, const std::string& why) const {
    return fail(name, why.empty() ? "" : " (" + why + ")", ": not found in ", repo_.repository, " at revision ",
                repo_.revision, listing_.available ? " (per the hub listing)" : "");
  }

 private:
  HubClient client_;
  HubRepo repo_;
  HubListing listing_;
  mutable std::map<std::string, HubListing> folders_;  // the listings of folders, by folder
};

// On a failed pull, removes the directories it created that stayed empty (rmdir refuses any
// other), so a pull that never got a byte leaves nothing behind.
class EmptyDirectoryCleanup {
 public:
  explicit EmptyDirectoryCleanup(std::vector<std::string> innermost_first) : dirs_(std::move(innermost_first)) {}
  EmptyDirectoryCleanup(const EmptyDirectoryCleanup&) = delete;
  EmptyDirectoryCleanup& operator=(const EmptyDirectoryCleanup&) = delete;
  ~EmptyDirectoryCleanup() {
    if (!armed_) return;
    for (const std::string& dir : dirs_)
      if (::rmdir(dir.c_str()) != 0) break;
  }
  void disarm() { armed_ = false; }

 private:
  std::vector<std::string> dirs_;
  bool armed_ = true;
};

std::string describe(const FileOutcome& file) {
  std::string line = file.name + ": ";
  if (file.in_hf_cache) {
    line += "in the Hugging Face cache";
  } else if (file.reused) {
    line += "already downloaded";
  } else {
    line += "downloaded " + format_bytes(file.transferred);
    if (file.resumed_from > 0) line += " (resumed at " + format_bytes(file.resumed_from) + ")";
  }
  line += "; " + std::string(file.verified ? "verified: " : "") + file.verification;
  return line;
}

// Who hears a pull's progress lines.
using Say = std::function<void(const std::string&)>;

// Step 4 of a pull: the artifact, written under a temporary name and renamed when complete.
Status convert_pulled(const PullOptions& options, const Checkpoint& c, std::map<std::string, std::string> known_sha256,
                      PullReport& report, const Say& say) {
  say("converting to " + std::string(quant_scheme_name(options.scheme)) + " -> " + report.artifact_path);
  ConvertOptions convert;
  convert.checkpoint_id = std::string(c.id);
  convert.source_dir = report.download_dir;
  convert.scheme = options.scheme;
  convert.head = options.head;
  convert.out_path = report.artifact_path;
  convert.known_sha256 = std::move(known_sha256);
  if (options.progress) convert.on_progress = show_progress_on(*options.progress);
  Result<ConvertReport> converted = convert_checkpoint(convert);
  if (options.progress) options.progress->finish();
  if (!converted) return converted.error();
  report.conversion = *converted;
  if (auto line = describe_stored_tied_head(converted->stored_tied_head, c.id); !line.empty()) say(line);
  if (converted->long_context_config_beside) say(describe_long_context_config(c.id));
  return {};
}

// Step 0 of a pull: a complete snapshot in the Hugging Face cache is verified and converted where
// it lies. False, having done nothing, when the cache does not hold all of it.
Result<bool> convert_from_hf_cache(const PullOptions& options, const Checkpoint& c, PullReport& report,
                                   const Say& say) {
  KIPP_ASSIGN(CacheLookup cached, find_cached_snapshot(options.hf_cache_dir, c, options.progress));
  if (!cached.snapshot) {
    if (!cached.missing.empty())
      say("the Hugging Face cache holds part of this snapshot (missing " + cached.missing + "); downloading");
    return false;
  }
  say("using the Hugging Face cache: " + cached.snapshot->dir + " (nothing is downloaded or copied)");
  std::map<std::string, std::string> known_sha256;
  for (FileOutcome& file : cached.snapshot->files) {
    say(describe(file));
    known_sha256[file.name] = file.sha256;
    report.files.push_back(std::move(file));
  }
  report.download_dir = cached.snapshot->dir;
  KIPP_TRY(convert_pulled(options, c, std::move(known_sha256), report, say));
  return true;
}

// Step 1 of a pull: what the revision holds; nothing is written before this is known.
Result<HubListing> list_revision(const HubClient& client, const HubRepo& repo) {
  Result<HubListing> listing = fetch_listing(client, repo);
  if (!listing && client.http->last_error_was_unreachable()) {
    Error offline = fail(listing.error().message,
                         " (offline? `kipp convert` builds an artifact from a local checkpoint directory)");
    offline.unreachable = true;
    return offline;
  }
  return listing;
}

// The files a pull fetches, in two rounds: the metadata files and the weights index first, then
// the weights (the single file at once; the shards once the index names them).
struct PullFiles {
  std::vector<HubFile> first;
  std::vector<HubFile> weights;
  bool indexed = false;  // the weights are shards named by kWeightsIndex
};

Result<PullFiles> files_to_pull(const HubView& hub, const HubRepo& repo, const Checkpoint& checkpoint, const Say& say) {
  PullFiles files;
  for (const WantedFile& wanted : wanted_files(checkpoint)) {
    const std::string name(wanted.name);
    KIPP_ASSIGN(std::optional<HubFile> file, hub.find(name));
    if (file) files.first.push_back(std::move(*file));
    else if (wanted.required) return hub.missing(name, "");
    else say(name + ": not in the repository at this revision; skipped");
  }
  KIPP_ASSIGN(std::optional<HubFile> long_context, hub.find(kLongContextConfig));
  if (long_context)
    say(std::string(kLongContextConfig) +
        ": in the repository, not fetched (its million-token settings are not supported; config.json's context is "
        "used)");
  KIPP_ASSIGN(std::optional<HubFile> index, hub.find(kWeightsIndex));
  if (index) {
    files.first.push_back(std::move(*index));
    files.indexed = true;
    return files;
  }
  KIPP_ASSIGN(std::optional<HubFile> single, hub.find(kSingleWeights));
  if (!single)
    return fail("neither ", kSingleWeights, " nor ", kWeightsIndex, " is in ", repo.repository, " at revision ",
                repo.revision);
  files.weights.push_back(std::move(*single));
  return files;
}

// Step 3 of a pull: small files first; the index then names the shards. Returns the SHA-256 of
// every file fetched, by name.
Result<std::map<std::string, std::string>> fetch_files(DownloadContext& context, const HubView& hub, PullFiles files,
                                                       PullReport& report, const Say& say) {
  KIPP_TRY(check_free_space(report.download_dir, files.first));
  std::map<std::string, std::string> known_sha256;
  auto fetch = [&](const HubFile& file) -> Status {
    KIPP_ASSIGN(FileOutcome outcome, fetch_file(context, file));
    say(describe(outcome));
    known_sha256[outcome.name] = outcome.sha256;
    report.files.push_back(std::move(outcome));
    return {};
  };
  for (const HubFile& file : files.first) KIPP_TRY(fetch(file));
  if (files.indexed) {
    KIPP_ASSIGN(std::string index_text, read_text_file(report.download_dir + "/" + kWeightsIndex));
    KIPP_ASSIGN(std::vector<std::string> shards, index_shard_names(index_text));
    for (const std::string& shard : shards) {
      KIPP_ASSIGN(HubFile file, hub.require(shard, std::string("named by ") + kWeightsIndex));
      files.weights.push_back(std::move(file));
    }
  }
  KIPP_TRY(check_free_space(report.download_dir, files.weights));
  for (const HubFile& file : files.weights) KIPP_TRY(fetch(file));
  return known_sha256;
}

}  // namespace

std::string flat_id(std::string_view checkpoint_id) {
  std::string flat(checkpoint_id);
  for (char& c : flat)
    if (c == '/') c = '_';
  return flat;
}

std::string artifact_path(const std::string& models_dir, std::string_view checkpoint_id, QuantScheme scheme,
                          HeadScheme head) {
  const std::string head_part = head == HeadScheme::bf16 ? "" : ".head-" + std::string(head_scheme_name(head));
  return models_dir + "/" + flat_id(checkpoint_id) + "." + std::string(quant_scheme_name(scheme)) + head_part + ".gguf";
}

std::string download_dir(const std::string& models_dir, const Checkpoint& checkpoint) {
  return models_dir + "/.downloads/" + flat_id(checkpoint.id) + "/" + std::string(checkpoint.revision);
}

Result<PullReport> pull_checkpoint(const PullOptions& options) {
  const Checkpoint* checkpoint = find_checkpoint(options.checkpoint_id);
  if (!checkpoint)
    return fail("unknown checkpoint \"", options.checkpoint_id, "\": not in the Kipp registry (see `kipp registry`)");
  const Checkpoint& c = *checkpoint;
  if (c.synthetic && options.endpoint.empty())
    return fail(
        c.id,
        " is a synthetic test checkpoint generated by Kipp's tests, not published on the hub; "
        "pull serves it only from a test server named with --endpoint (or use `kipp convert` on a local source)");
  KIPP_ASSIGN(std::string endpoint, normalize_endpoint(options.endpoint.empty() ? kDefaultEndpoint : options.endpoint));
  const Say say = [&](const std::string& line) {
    if (options.progress) options.progress->clear_line();
    if (options.note) options.note(line);
  };

  PullReport report;
  report.artifact_path = artifact_path(options.models_dir, c.id, options.scheme, options.head);
  if (!options.hf_cache_dir.empty()) {
    KIPP_ASSIGN(bool converted, convert_from_hf_cache(options, c, report, say));
    if (converted) return report;
  }
  if (options.offline)
    return fail(c.id, " (", c.repository, " at ", c.revision, ") is not in the Hugging Face cache",
                options.hf_cache_dir.empty() ? std::string() : " (" + options.hf_cache_dir + ")",
                " and HF_HUB_OFFLINE forbids downloading it");

  report.download_dir = download_dir(options.models_dir, c);
  HttpClient http;
  if (!options.token.empty()) http.set_token(url_origin(endpoint), options.token);
  const HubRepo repo{endpoint, std::string(c.repository), std::string(c.revision)};
  const HubClient client{&http, options.retry, say};
  say("pulling " + std::string(c.id) + " (" + repo.repository + " at " + repo.revision + ") from " + endpoint);
  KIPP_ASSIGN(HubListing listing, list_revision(client, repo));
  if (!listing.available)
    say("the hub serves no file listing for this revision; probing each file (files outside git-LFS cannot be verified)");
  const HubView hub(client, repo, std::move(listing));
  KIPP_ASSIGN(PullFiles files, files_to_pull(hub, repo, c, say));

  // Step 2: the download folder, locked against a second pull of the same checkpoint.
  const std::filesystem::path dl(report.download_dir);
  std::error_code ignored;
  const bool models_dir_existed = std::filesystem::exists(options.models_dir, ignored);
  EmptyDirectoryCleanup cleanup({dl.string(), dl.parent_path().string(), dl.parent_path().parent_path().string(),
                                 models_dir_existed ? std::string() : options.models_dir});
  KIPP_TRY(make_directory(report.download_dir));
  KIPP_ASSIGN(DirectoryLock lock, DirectoryLock::acquire(report.download_dir));
  DownloadContext context;
  context.http = &http;
  context.repo = repo;
  context.dir = report.download_dir;
  context.progress = options.progress;
  context.note = options.note;
  context.retry = options.retry;
  KIPP_ASSIGN(auto known_sha256, fetch_files(context, hub, std::move(files), report, say));
  KIPP_TRY(convert_pulled(options, c, std::move(known_sha256), report, say));
  cleanup.disarm();
  return report;
}
}  // namespace kipp::pull
