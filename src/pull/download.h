// One file from the hub into the download directory: FILE.part grows across attempts and runs
// (Range requests), dropped connections are retried, and only when size and hashes agree with
// what the hub stated is FILE.part renamed to FILE. A mismatch removes that .part and nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "pull/http_fetch.h"
#include "pull/hub.h"
#include "util/progress.h"
#include "util/error.h"

namespace kipp::pull {

struct DownloadContext {
  HttpClient* http = nullptr;
  HubRepo repo;
  std::string dir;                               // where FILE and FILE.part live
  ProgressDisplay* progress = nullptr;           // optional
  std::function<void(const std::string&)> note;  // one-line messages; optional
  RetryPolicy retry;
};

struct FileOutcome {
  std::string name;
  std::string path;  // the verified file, dir/name
  uint64_t size = 0;
  std::string sha256;         // of the bytes on disk (always computed)
  bool reused = false;        // complete from an earlier pull, not transferred again
  bool in_hf_cache = false;   // found in the Hugging Face cache, used where it is
  uint64_t transferred = 0;   // bytes received in this run
  uint64_t resumed_from = 0;  // > 0: an earlier .part was continued from this byte
  bool verified = false;      // a hub-stated hash was checked
  std::string verification;   // how: "SHA-256 1a2b3c4d5e6f… = hub LFS id (tree listing)", or why not
};

// What comparing a file on disk with the statements about it (size, SHA-256, git blob id) found.
struct FileCheck {
  bool matches = true;
  std::string mismatch;  // names both values when !matches
  std::string sha256;    // of the bytes on disk
  uint64_t size = 0;
  bool verified = false;     // a stated hash was checked
  std::string verification;  // how, or why not
};
Result<FileCheck> check_file(const std::string& path, const HubFile& file, ProgressDisplay* progress);

// Brings `file` to dir/name, verified. Already-complete files that still verify are kept as they
// are; a complete file that no longer verifies is fetched again (both live in Kipp's own
// download directory).
Result<FileOutcome> fetch_file(DownloadContext& context, HubFile file);

}  // namespace kipp::pull
