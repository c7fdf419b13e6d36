#include "test_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace kipp::testing {
namespace {

std::string from_env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// Scratch directories are removed when the test process exits: converted checkpoints and
// truncated copies run to hundreds of MiB per test, and a full suite that kept them filled
// the CI machine's disk. KIPP_KEEP_SCRATCH=1 keeps them for a post-mortem.
struct ScratchRegistry {
  std::vector<std::string> dirs;
  ~ScratchRegistry() {
    if (std::getenv("KIPP_KEEP_SCRATCH")) return;
    for (const std::string& dir : dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
};

ScratchRegistry& scratch_registry() {
  static ScratchRegistry registry;
  return registry;
}

}  // namespace

std::string tokenizer_dir() { return KIPP_TOKENIZER_DIR; }
PublishedSources published_sources() { return {KIPP_TOKENIZER_DIR, KIPP_FACT_SHEET, KIPP_LICENSE_TEXT}; }
std::string test_models_dir() { return from_env_or("KIPP_TEST_MODELS", KIPP_TEST_MODELS); }

std::string scratch_dir(const std::string& test_name) {
  const std::string dir =
      from_env_or("KIPP_TEST_TMP", KIPP_TEST_TMP) + "/" + test_name + "." + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratch_registry().dirs.push_back(dir);
  return dir;
}

}  // namespace kipp::testing
