#include "test_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace kipp::testing {
namespace {

std::string from_env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

}  // namespace

std::string tokenizer_dir() { return KIPP_TOKENIZER_DIR; }
std::string test_models_dir() { return from_env_or("KIPP_TEST_MODELS", KIPP_TEST_MODELS); }

std::string scratch_dir(const std::string& test_name) {
  const std::string dir =
      from_env_or("KIPP_TEST_TMP", KIPP_TEST_TMP) + "/" + test_name + "." + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace kipp::testing
