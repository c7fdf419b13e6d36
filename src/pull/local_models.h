// The artifacts in a models folder, as `kipp pull` names them ({flat id}.{quant}[.head-q8_0].gguf):
// what `kipp list` shows, `kipp rm` removes, and a registry id given where a file is expected
// (`kipp run`, `kipp serve --model`) resolves to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/artifact_layout.h"
#include "registry/registry.h"
#include "util/error.h"

namespace kipp::pull {

struct LocalArtifact {
  std::string path;
  const Checkpoint* checkpoint = nullptr;  // what the file holds; null when no valid artifact says
  QuantScheme scheme = QuantScheme::bf16;
  HeadScheme head = HeadScheme::bf16;
  uint64_t bytes = 0;
  // Named as `kipp pull` names it ({flat id}.{quant}[.head-q8_0].gguf): what an id resolves to.
  bool pull_named = false;
  // Why the file is not a valid artifact (of the entry its name says), or empty.
  std::string problem;
};

// Every *.gguf directly in `models_dir` (none when it does not exist), by path, each opened and
// checked as the loader does: the entry and scheme it holds, whatever its name.
Result<std::vector<LocalArtifact>> list_local_artifacts(const std::string& models_dir);

// The artifacts of `checkpoint` among `artifacts` named as `kipp pull` names them, of `scheme`
// (and `head`) where given.
std::vector<LocalArtifact> artifacts_of(const std::vector<LocalArtifact>& artifacts, const Checkpoint& checkpoint,
                                        std::optional<QuantScheme> scheme = std::nullopt,
                                        std::optional<HeadScheme> head = std::nullopt);

// A --model value: a path to a file (as it is, also when it does not exist: the loader says so),
// or a registry id, which names its one valid artifact in `models_dir`. An error names what to do:
// `kipp pull ID` when there is none, the paths when there are several.
Result<std::string> resolve_model(const std::string& value, const std::string& models_dir);

}  // namespace kipp::pull
