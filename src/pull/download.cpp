#include "pull/download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "util/files.h"
#include "util/sha256.h"

namespace kipp::pull {
namespace {

constexpr uint64_t kHashProgressBytes = 64ull << 20;  // files at least this big show a progress line while hashed

std::optional<uint64_t> file_size(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(info.st_size);
}

std::string short_hash(const std::string& hex) { return hex.substr(0, 12) + "…"; }

// The SHA-256 of a file, with a progress line for big ones.
Result<std::string> hash_file(const std::string& path, const std::string& name, uint64_t size,
                              ProgressDisplay* progress) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return fail(path, ": cannot open for verification: ", std::strerror(errno));
  const bool show = progress && size >= kHashProgressBytes;
  if (show) progress->start("verifying " + name, size, 0);
  Sha256 hash;
  std::vector<char> buffer(4 << 20);
  uint64_t done = 0;
  size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) {
    hash.update(buffer.data(), got);
    done += got;
    if (show) progress->update(done);
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (show) progress->finish();
  if (failed) return fail(path, ": read error while verifying");
  return hash.hex_digest();
}

}  // namespace

Result<FileCheck> check_file(const std::string& path, const HubFile& file, ProgressDisplay* progress) {
  FileCheck check;
  const std::optional<uint64_t> size = file_size(path);
  if (!size) return fail(path, ": missing after download");
  check.size = *size;
  KIPP_ASSIGN(check.sha256, hash_file(path, file.name, *size, progress));
  std::vector<std::string> problems, ways;
  if (file.size && *file.size != *size)
    problems.push_back("size " + std::to_string(*size) + " bytes, the hub says " + std::to_string(*file.size));
  if (!file.sha256.empty()) {
    if (check.sha256 != file.sha256)
      problems.push_back("SHA-256 mismatch: got " + check.sha256 + ", the hub says " + file.sha256 + " (" +
                         file.sha256_source + ")");
    ways.push_back("SHA-256 " + short_hash(file.sha256) + " = hub LFS id (" + file.sha256_source + ")");
  }
  if (!file.git_sha1.empty()) {
    KIPP_ASSIGN(std::string blob, git_blob_sha1_file(path));
    if (blob != file.git_sha1)
      problems.push_back("git blob SHA-1 mismatch: got " + blob + ", the hub says " + file.git_sha1 + " (" +
                         file.git_sha1_source + ")");
    ways.push_back("git blob SHA-1 " + short_hash(file.git_sha1) + " = hub git id (" + file.git_sha1_source + ")");
  }
  check.matches = problems.empty();
  for (size_t i = 0; i < problems.size(); ++i) check.mismatch += (i ? "; " : "") + problems[i];
  check.verified = !ways.empty();
  if (check.verified) {
    for (size_t i = 0; i < ways.size(); ++i) check.verification += (i ? ", " : "") + ways[i];
  } else {
    check.verification =
        std::string("NOT verified: the hub stated no hash for it") + (file.size ? " (size checked)" : "");
  }
  return check;
}

namespace {

// Appends a 2xx body to FILE.part: continues at `have` for a 206 whose Content-Range starts
// there, starts over for a 200 (a server that ignores Range), and never writes past the size the
// hub stated.
class PartSink : public BodySink {
 public:
  PartSink(std::string path, std::string name, uint64_t have, std::optional<uint64_t> expected,
           ProgressDisplay* progress)
      : path_(std::move(path)), name_(std::move(name)), have_(have), expected_(expected), progress_(progress) {}
  ~PartSink() override {
    if (file_) std::fclose(file_);
  }
  PartSink(const PartSink&) = delete;
  PartSink& operator=(const PartSink&) = delete;

  Status begin(const HttpResponse& response) override {
    std::optional<uint64_t> total = expected_;
    if (response.status == 206) {
      const std::string header = response.header("content-range");
      const auto range = parse_content_range(header);
      if (!range || !range->start || *range->start != have_)
        return fail(name_, ": asked the server to resume at byte ", have_, ", it answered with Content-Range \"",
                    header, "\"");
      if (range->total && expected_ && *range->total != *expected_)
        return fail(name_, ": the server has ", *range->total, " bytes, the hub listing says ", *expected_);
      if (!total) total = range->total;
      file_ = std::fopen(path_.c_str(), "ab");
    } else {
      if (have_ > 0) {
        restarted_ = true;
        have_ = 0;
      }
      if (const std::string length = response.header("content-length");
          !length.empty() && expected_ && length != std::to_string(*expected_))
        return fail(name_, ": the server is sending ", length, " bytes, the hub listing says ", *expected_);
      file_ = std::fopen(path_.c_str(), "wb");
    }
    if (!file_) return fail(path_, ": cannot open for writing: ", std::strerror(errno));
    if (progress_) progress_->start(name_, total.value_or(0), have_);
    return {};
  }

  Status write(const char* data, size_t size) override {
    if (expected_ && have_ + size > *expected_)
      return fail(name_, ": the server sent more than the ", *expected_, " bytes the hub lists");
    if (std::fwrite(data, 1, size, file_) != size) return fail(path_, ": write failed: ", std::strerror(errno));
    have_ += size;
    written_ += size;
    if (progress_) progress_->update(have_);
    return {};
  }

  // Flushes to disk and closes; the file keeps every byte written so far either way.
  Status close() {
    if (progress_) progress_->finish();
    if (!file_) return {};
    bool ok = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
    const int saved = errno;
    ok = std::fclose(std::exchange(file_, nullptr)) == 0 && ok;
    if (!ok) return fail(path_, ": write failed: ", std::strerror(saved ? saved : errno));
    return {};
  }

  uint64_t written() const { return written_; }
  bool restarted() const { return restarted_; }

 private:
  std::string path_, name_;
  uint64_t have_;
  std::optional<uint64_t> expected_;
  ProgressDisplay* progress_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;
  bool restarted_ = false;
};

void say(DownloadContext& context, const std::string& line) {
  if (context.progress) context.progress->clear_line();
  if (context.note) context.note(line);
}

// Moves bytes into `part` until the server has sent the whole file (or says it has).
Status transfer(DownloadContext& context, HubFile& file, const std::string& part, FileOutcome& outcome) {
  const std::string url = context.repo.resolve_url(file.name);
  uint64_t have = file_size(part).value_or(0);
  if (file.size && have > *file.size) {
    say(context, file.name + ": the earlier partial download is longer than the hub's file; starting over");
    std::remove(part.c_str());
    have = 0;
  }
  outcome.resumed_from = have;
  if (have > 0) say(context, file.name + ": resuming an earlier download at " + format_bytes(have));
  int failures = 0;
  double delay = context.retry.first_delay_s;
  while (!(file.size && have == *file.size)) {
    const uint64_t had = have;
    PartSink sink(part, file.name, have, file.size, context.progress);
    Result<HttpResponse> got = context.http->download(url, have, sink);
    Status closed = sink.close();
    outcome.transferred += sink.written();
    if (!got) return got.error();
    KIPP_TRY(closed);
    const HttpResponse& response = *got;
    if (sink.restarted())
      say(context, file.name + ": the server ignored the range request; downloading from the start");
    KIPP_TRY(merge_linked_etag(file, response.linked_etag));
    have = file_size(part).value_or(0);

    const bool from_hub = url_origin(response.url) == url_origin(url);
    std::string retry_reason;
    if (!response.dropped.empty()) {
      retry_reason = "connection dropped at " + format_bytes(have) + " (" + response.dropped + ")";
    } else if (is_transient_status(response.status)) {
      retry_reason = "the server answered " + describe_status(response.status);
    } else if (!from_hub && (is_refusal(response.status) || response.status == 410)) {
      // The CDN refused the signed URL the hub redirected to (it expires): the next attempt starts
      // at the hub again, which signs a fresh one.
      retry_reason = "the download server refused the hub's signed URL (" + describe_status(response.status) +
                     ", expired?); asking the hub for a fresh one";
    } else if (is_refusal(response.status)) {
      return refused_by_hub(url, response.status, context.http->sends_token_to(url));
    } else if (response.success()) {
      return {};  // a whole answer; verification judges it
    } else if (response.status == 416 && have > 0) {
      const auto range = parse_content_range(response.header("content-range"));
      if (range && range->total && *range->total == have) return {};  // the .part was already whole
      return fail(file.name, ": the server refused to resume at byte ", have, " (", describe_status(416),
                  range && range->total ? ", it has " + std::to_string(*range->total) + " bytes" : std::string(),
                  "); delete ", part, " to download it from the start");
    } else if (response.status == 404) {
      return fail(file.name, ": not found on the hub at revision ", context.repo.revision, " (", url, ": ",
                  describe_status(404), ")");
    } else {
      return fail(url, ": ", describe_status(response.status));
    }
    if (have > had) {  // the file grew: the count of failures in a row starts again
      failures = 0;
      delay = context.retry.first_delay_s;
    }
    if (++failures > context.retry.attempts)
      return fail(file.name, ": ", retry_reason, "; gave up after ", context.retry.attempts,
                  " retries, run the same command again to resume");
    const double wait = retry_delay(delay, response, retry_reason);
    say(context, file.name + ": " + retry_reason + "; retrying (" + std::to_string(failures) + " of " +
                     std::to_string(context.retry.attempts) + ")");
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    delay = std::min(delay * 2, context.retry.max_delay_s);
  }
  return {};
}

}  // namespace

Result<FileOutcome> fetch_file(DownloadContext& context, HubFile file) {
  FileOutcome outcome;
  outcome.name = file.name;
  outcome.path = context.dir + "/" + file.name;
  const std::string part = outcome.path + ".part";
  if (file.name.find('/') != std::string::npos) {  // a file in a folder: 1_Pooling/config.json
    std::error_code error;
    std::filesystem::create_directories(std::filesystem::path(outcome.path).parent_path(), error);
    if (error) return fail(outcome.path, ": cannot create its folder: ", error.message());
  }

  // A complete file from an earlier pull: kept if it still verifies.
  if (file_size(outcome.path)) {
    KIPP_ASSIGN(FileCheck check, check_file(outcome.path, file, context.progress));
    if (check.matches) {
      outcome.reused = true;
      outcome.size = check.size;
      outcome.sha256 = check.sha256;
      outcome.verified = check.verified;
      outcome.verification = check.verification;
      return outcome;
    }
    say(context,
        file.name + ": the earlier download no longer matches the hub (" + check.mismatch + "); downloading it again");
  }

  KIPP_TRY(transfer(context, file, part, outcome));
  KIPP_ASSIGN(FileCheck check, check_file(part, file, context.progress));
  if (!check.matches && outcome.resumed_from > 0) {
    // The bytes an earlier run left are trusted only until the whole file is checked: a .part torn
    // by a power loss (a tail the disk never received reads as zeros) fails here, and costs one
    // fresh transfer rather than a failed pull.
    say(context, file.name + ": the download resumed from an earlier partial file does not verify (" + check.mismatch +
                     "); downloading it from the start");
    std::remove(part.c_str());
    outcome.resumed_from = 0;
    KIPP_TRY(transfer(context, file, part, outcome));
    KIPP_ASSIGN(check, check_file(part, file, context.progress));
  }
  if (!check.matches) {
    std::remove(part.c_str());
    return fail(file.name, ": ", check.mismatch, "; removed the bad download ", part);
  }
  KIPP_TRY(rename_durably(part, outcome.path));
  outcome.size = check.size;
  outcome.sha256 = check.sha256;
  outcome.verified = check.verified;
  outcome.verification = check.verification;
  return outcome;
}

}  // namespace kipp::pull
