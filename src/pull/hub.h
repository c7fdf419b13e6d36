// The hub's side of one pinned checkpoint: its resolve and tree URLs, what the tree listing (or,
// without one, a HEAD probe) says about each file — size and the hashes to verify against — and
// the shard names a safetensors index lists. It reads through HttpClient and writes no files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pull/http_fetch.h"
#include "registry/registry.h"
#include "util/error.h"

namespace kipp::pull {

// What the hub states about one file at the pinned revision.
struct HubFile {
  std::string name;
  std::optional<uint64_t> size;
  std::string sha256;                            // git-LFS object id (lower-case hex) when the file is in LFS
  std::string sha256_source;                     // where sha256 came from: "tree listing", "X-Linked-Etag", or both
  std::string git_sha1;                          // git blob id (lower-case hex) of a file stored in git itself
  std::string git_sha1_source = "tree listing";  // where git_sha1 came from
};

struct HubRepo {
  std::string endpoint;  // "https://huggingface.co", no trailing slash
  std::string repository;
  std::string revision;

  std::string resolve_url(const std::string& file) const;
  // The tree listing of the repository's root, or of one folder in it.
  std::string tree_url(std::string_view folder = {}) const;
};

// Files every checkpoint download includes; the optional ones are skipped when the hub lacks them.
struct WantedFile {
  std::string_view name;
  bool required;
};
inline constexpr WantedFile kMetadataFiles[] = {
    {"config.json", true}, {"generation_config.json", false}, {"tokenizer.json", true}, {"tokenizer_config.json", true},
    {"LICENSE", false},
};
// What a pull of `checkpoint` fetches besides the weights: kMetadataFiles, and for an embedding
// checkpoint its sentence-transformers files (which the converter checks), required.
std::vector<WantedFile> wanted_files(const Checkpoint& checkpoint);
inline constexpr const char* kSingleWeights = "model.safetensors";
inline constexpr const char* kWeightsIndex = "model.safetensors.index.json";

// A name that stays inside the download directory: no separators, not "." / "..", not hidden.
bool is_plain_file_name(std::string_view name);
// A plain file name, or one inside a plain folder ("1_Pooling/config.json"): the two levels a
// checkpoint's files take.
bool is_checkpoint_path(std::string_view name);
bool is_lower_hex(std::string_view text, size_t length);

// One page of the tree listing (a JSON array of {type, path, size, oid, lfs:{oid, size}}), merged
// into `files`; only the files directly in `folder` (the repository root when empty) are kept,
// by their path. `what` names the source in errors.
Status parse_tree_listing(const std::string& json_text, const std::string& what, std::map<std::string, HubFile>& files,
                          std::string_view folder = {});

// The URL of the next page from a `Link: <url>; rel="next"` header, if any.
std::optional<std::string> next_page_link(const std::string& link_header);

// The distinct shard file names of a model.safetensors.index.json weight_map, in order of first use.
Result<std::vector<std::string>> index_shard_names(const std::string& index_text);

struct HubListing {
  bool available = false;  // false: the hub serves no listing here (404, 401, 403)
  std::map<std::string, HubFile> files;
};
// How hub requests are made: the client, the retry policy for transient failures, and who hears
// about retries.
struct HubClient {
  HttpClient* http = nullptr;
  RetryPolicy retry;
  std::function<void(const std::string&)> note;  // optional
};

// GETs the tree listing (following pagination). A missing listing is not an error; a listing
// that is not what the hub serves (bad JSON, wrong fields) is.
Result<HubListing> fetch_listing(const HubClient& client, const HubRepo& repo, std::string_view folder = {});

// HEADs one file: nullopt when the hub answers 404; size from X-Linked-Size or Content-Length and
// sha256 from X-Linked-Etag when the hub sends them.
Result<std::optional<HubFile>> probe_file(const HubClient& client, const HubRepo& repo, const std::string& name);

// Folds an X-Linked-Etag seen on a download into `file`: a new SHA-256 is recorded, an agreeing
// one noted, a conflicting one is an error naming both values.
Status merge_linked_etag(HubFile& file, const std::string& linked_etag);

// "HTTP 404 Not Found" style words for an error status.
std::string describe_status(long status);

// The error for a 401 or 403 from the hub: the repository needs a token, or refused the one sent.
Error refused_by_hub(const std::string& url, long status, bool token_sent);
bool is_refusal(long status);  // 401 or 403

}  // namespace kipp::pull
