#include "pull/local_models.h"

#include <algorithm>
#include <filesystem>

#include "model/model_file.h"
#include "pull/pull.h"

namespace kipp::pull {
namespace {

namespace fs = std::filesystem;

// The entry, scheme and head a file name stands for, as artifact_path() writes it.
bool parse_artifact_name(std::string name, LocalArtifact& artifact) {
  constexpr std::string_view gguf = ".gguf", head = ".head-q8_0";
  if (!name.ends_with(gguf)) return false;
  name.resize(name.size() - gguf.size());
  if (name.ends_with(head)) {
    artifact.head = HeadScheme::q8_0;
    name.resize(name.size() - head.size());
  }
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  const std::optional<QuantScheme> scheme = parse_quant_scheme(std::string_view(name).substr(dot + 1));
  if (!scheme) return false;
  artifact.scheme = *scheme;
  const std::string flat = name.substr(0, dot);
  for (const Checkpoint& c : all_checkpoints())
    if (flat_id(c.id) == flat) artifact.checkpoint = &c;
  return artifact.checkpoint != nullptr;
}

}  // namespace

Result<std::vector<LocalArtifact>> list_local_artifacts(const std::string& models_dir) {
  std::vector<LocalArtifact> artifacts;
  std::error_code error;
  if (!fs::is_directory(models_dir, error)) return artifacts;
  for (const auto& entry : fs::directory_iterator(models_dir, error)) {
    if (!entry.is_regular_file(error) || entry.path().extension() != ".gguf") continue;
    LocalArtifact artifact;
    artifact.path = entry.path().string();
    artifact.bytes = entry.file_size(error);
    artifact.pull_named = parse_artifact_name(entry.path().filename().string(), artifact);
    auto file = ModelFile::open(artifact.path);
    if (!file) {
      artifact.problem = file.error().message;
    } else if (artifact.pull_named && ((*file)->checkpoint().id != artifact.checkpoint->id ||
                                       (*file)->scheme() != artifact.scheme || (*file)->head() != artifact.head)) {
      artifact.problem = "holds " + std::string((*file)->checkpoint().id) + " in " +
                         std::string(quant_scheme_name((*file)->scheme())) + ", not what its name says";
    } else {
      artifact.checkpoint = &(*file)->checkpoint();
      artifact.scheme = (*file)->scheme();
      artifact.head = (*file)->head();
    }
    artifacts.push_back(std::move(artifact));
  }
  if (error) return fail(models_dir, ": cannot list: ", error.message());
  std::sort(artifacts.begin(), artifacts.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return artifacts;
}

std::vector<LocalArtifact> artifacts_of(const std::vector<LocalArtifact>& artifacts, const Checkpoint& checkpoint,
                                        std::optional<QuantScheme> scheme, std::optional<HeadScheme> head) {
  std::vector<LocalArtifact> found;
  for (const LocalArtifact& artifact : artifacts)
    if (artifact.pull_named && artifact.checkpoint == &checkpoint && (!scheme || artifact.scheme == *scheme) &&
        (!head || artifact.head == *head))
      found.push_back(artifact);
  return found;
}

Result<std::string> resolve_model(const std::string& value, const std::string& models_dir) {
  std::error_code error;
  const Checkpoint* checkpoint = find_checkpoint(value);
  // A file, or what is not a registry id: a path, which the loader opens (or says why it cannot).
  if (fs::exists(value, error) || !checkpoint) return value;
  KIPP_ASSIGN(std::vector<LocalArtifact> all, list_local_artifacts(models_dir));
  std::vector<LocalArtifact> valid;
  for (const LocalArtifact& artifact : artifacts_of(all, *checkpoint))
    if (artifact.problem.empty()) valid.push_back(artifact);
  if (valid.empty())
    return fail(value, " is not in ", models_dir, ": `kipp pull ", value, "` downloads and converts it");
  if (valid.size() > 1) {
    std::string paths;
    for (const LocalArtifact& artifact : valid) paths += (paths.empty() ? "" : ", ") + artifact.path;
    return fail(value, " has several artifacts in ", models_dir, " (", paths, "): give the file");
  }
  return valid.front().path;
}

}  // namespace kipp::pull
