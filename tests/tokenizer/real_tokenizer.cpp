// Converter output kept alive for the process: the TokenizerData views point into it.
#include "real_tokenizer.h"

#include <optional>
#include <string_view>
#include <vector>

#include "convert/hf_tokenizer.h"
#include "registry/registry.h"
#include "util/files.h"

namespace kipp::testing {
namespace {

struct Loaded {
  ConvertedTokenizer converted;
  std::vector<std::string_view> tokens;
  std::vector<std::string_view> merges;
  TokenizerData data;
  std::optional<Tokenizer> tokenizer;
  std::optional<Error> error;

  Loaded() {
    if (auto status = load(); !status) error = status.error();
  }

  Status load() {
    const std::string dir = real_tokenizer_dir();
    KIPP_ASSIGN(std::string json, read_text_file(dir + "/tokenizer.json"));
    KIPP_ASSIGN(std::string config, read_text_file(dir + "/tokenizer_config.json"));
    const Checkpoint* checkpoint = find_checkpoint("kipp-test/qwen3-tiny");
    if (!checkpoint) return fail("registry has no kipp-test/qwen3-tiny");
    KIPP_ASSIGN(converted, convert_hf_tokenizer(json, config, *checkpoint));
    tokens.assign(converted.tokens.begin(), converted.tokens.end());
    merges.assign(converted.merges.begin(), converted.merges.end());
    data.tokens = tokens;
    data.token_types = converted.token_types;
    data.merges = merges;
    data.eos_id = converted.eos_id;
    data.padding_id = converted.padding_id;
    KIPP_ASSIGN(Tokenizer built, Tokenizer::create(data));
    tokenizer.emplace(std::move(built));
    return {};
  }
};

}  // namespace

std::string real_tokenizer_dir() { return KIPP_TOKENIZER_DIR; }

static const Loaded& loaded() {
  static const Loaded instance;
  return instance;
}

Result<const Tokenizer*> real_tokenizer() {
  if (loaded().error) return *loaded().error;
  return &*loaded().tokenizer;
}

Result<const TokenizerData*> real_tokenizer_data() {
  if (loaded().error) return *loaded().error;
  return &loaded().data;
}

}  // namespace kipp::testing
