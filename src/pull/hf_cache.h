// The Hugging Face cache as a source for `kipp pull`. huggingface_hub (and transformers, vLLM,
// llama.cpp's -hf) keep a repository at {cache}/models--{org}--{name}/: each file's bytes once in
// blobs/, named by the hub's ETag of the file (the LFS SHA-256, or the git blob id of a file in
// git), and snapshots/{revision}/{file} as relative symlinks to those blobs. A snapshot of the pinned
// revision that holds every file a conversion needs is verified where it lies (each blob's content
// against its name) and converted from there: no network, no second copy of the weights.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pull/download.h"
#include "registry/registry.h"
#include "util/error.h"
#include "util/progress.h"

namespace kipp::pull {

// {cache}/models--{org}--{name}/snapshots/{revision}
std::string hf_snapshot_dir(const std::string& cache_dir, const Checkpoint& checkpoint);

struct CachedSnapshot {
  std::string dir;                 // the snapshot folder, converted from directly
  std::vector<FileOutcome> files;  // every file used, verified against its blob name
};

struct CacheLookup {
  std::optional<CachedSnapshot> snapshot;  // set when the snapshot is complete
  std::string missing;                     // a snapshot exists but lacks these files ("" if none exists)
};

// Looks for a complete snapshot of the checkpoint's pinned revision. A blob whose content does not
// match its name is an error (a damaged cache); a file that is not a link to a content-named blob
// is used but reported as not verified.
Result<CacheLookup> find_cached_snapshot(const std::string& cache_dir, const Checkpoint& checkpoint,
                                         ProgressDisplay* progress);

}  // namespace kipp::pull
