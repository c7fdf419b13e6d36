// libFuzzer target: the converter's readers of what a downloaded checkpoint holds, files that come
// from whoever published it. The first byte picks the reader: '0' a whole model.safetensors (the
// 8-byte header length, the JSON header, the data; every tensor it lists is read back), '1'
// config.json, '2' tokenizer.json, then a NUL byte and tokenizer_config.json ("{}" without one),
// each checked against the tiny test checkpoint's entry as `kipp convert` would.
#include <stdlib.h>  // mkdtemp

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "convert/hf_config.h"
#include "convert/hf_tokenizer.h"
#include "convert/safetensors.h"
#include "fuzz_support.h"
#include "registry/registry.h"

namespace {

// The safetensors reader opens a checkpoint directory, not bytes: each process (libFuzzer's -jobs
// runs several) rewrites one model.safetensors in a directory of its own, removed at exit.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kipp_fuzz_convert.XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("kipp_fuzz_convert_readers: mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void read_safetensors(std::string_view file) {
  static const ScratchDirectory directory;
  {
    std::ofstream out(directory.path() + "/model.safetensors", std::ios::binary | std::ios::trunc);
    out.write(file.data(), std::streamsize(file.size()));
  }
  auto checkpoint = kipp::SafetensorsCheckpoint::open(directory.path());
  if (!checkpoint) return;
  std::vector<uint8_t> buffer;
  for (const auto& [name, tensor] : checkpoint->tensors()) {
    buffer.resize(tensor.bytes);
    (void)checkpoint->read(tensor, 0, buffer.data(), tensor.bytes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kipp::Checkpoint& checkpoint = *kipp::find_checkpoint("kipp-test/qwen3-tiny");
  const auto input = kipp::fuzz::split_route(data, size, 3);
  if (!input) return 0;
  const std::string_view body = input->body;
  switch (input->route) {
    case 0: read_safetensors(body); break;
    case 1: (void)kipp::check_hf_config(std::string(body), checkpoint); break;
    default: {
      const size_t split = body.find('\0');
      const std::string tokenizer(body.substr(0, split));
      const std::string config = split == std::string_view::npos ? "{}" : std::string(body.substr(split + 1));
      (void)kipp::convert_hf_tokenizer(tokenizer, config, checkpoint);
    }
  }
  return 0;
}
