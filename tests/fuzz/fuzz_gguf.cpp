// libFuzzer target: arbitrary bytes through the GGUF parser and the strict loader, as a Kipp
// artifact would go through them. Nothing may crash, leak, hang or trip ASan/UBSan, and every
// rejection must be one non-empty line without control bytes (errors are printed to terminals).
//
// A small input cannot hold the 151,936 token texts the loader requires, so validate_artifact
// stops at the tokenizer for anything libFuzzer makes; the tensor-directory rules are fuzzed by
// binding the weights directly for the entry the input names (or the tiny test entry).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string_view>

#include "gguf/gguf_reader.h"
#include "model/artifact_layout.h"
#include "model/model_file.h"
#include "model/weights.h"
#include "registry/registry.h"

namespace {

using kipp::gguf::ValueType;

[[noreturn]] void die(const char* what, std::string_view detail) {
  std::fprintf(stderr, "kipp_fuzz_gguf: %s: [%.*s]\n", what, int(detail.size()), detail.data());
  std::abort();
}

void check_message(const kipp::Error& error) {
  if (error.message.empty()) die("empty error message", "");
  for (unsigned char c : error.message)
    if (c < 0x20 || c == 0x7f) die("error message is not one printable line", error.message);
}

template <class T>
void expect_result(const kipp::Result<T>& result) {
  if (!result) check_message(result.error());
}

struct AlignedFree {
  void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size copy aligned like a mapping, so aligned tensor data binds as it would from a file.
  std::unique_ptr<uint8_t[], AlignedFree> image(
      static_cast<uint8_t*>(::operator new[](size ? size : 1, std::align_val_t{64})));
  if (size) std::memcpy(image.get(), data, size);
  const std::span<const uint8_t> bytes(image.get(), size);

  auto parsed = kipp::gguf::File::parse(bytes);
  if (!parsed) {
    check_message(parsed.error());
    return 0;
  }
  const kipp::gguf::File& file = parsed.value();

  // Whatever parses is self-consistent: every view lies inside the image, tensors are packed in
  // order at the alignment, and lookups find what the directory lists.
  const uint8_t* begin = image.get();
  const uint8_t* end = begin + size;
  if (file.data_offset % file.alignment != 0) die("unaligned data section", "");
  uint64_t expected_offset = 0;
  for (const auto& tensor : file.tensors) {
    if (tensor.offset != expected_offset || tensor.offset % file.alignment != 0) die("tensor offset", tensor.name);
    if (tensor.data.size() != tensor.bytes) die("tensor byte count", tensor.name);
    if (tensor.bytes && (tensor.data.data() < begin || tensor.data.data() + tensor.bytes > end))
      die("tensor data outside the image", tensor.name);
    if (file.find_tensor(tensor.name) != &tensor) die("tensor lookup", tensor.name);
    expected_offset = (tensor.offset + tensor.bytes + file.alignment - 1) / file.alignment * file.alignment;
  }
  for (const auto& kv : file.metadata) {
    if (file.find(kv.key) != &kv.value) die("metadata lookup", kv.key);
    for (std::string_view text : kv.value.strings)
      if (!text.empty() && (reinterpret_cast<const uint8_t*>(text.data()) < begin ||
                            reinterpret_cast<const uint8_t*>(text.data()) + text.size() > end))
        die("string outside the image", kv.key);
    expect_result(file.get_u32(kv.key));
    expect_result(file.get_f32(kv.key));
    expect_result(file.get_bool(kv.key));
    expect_result(file.get_string(kv.key));
    expect_result(file.get_array(kv.key, ValueType::string));
    expect_result(file.get_array(kv.key, ValueType::i32));
  }

  auto artifact = kipp::validate_artifact(file);
  if (!artifact) check_message(artifact.error());

  // The tensor-directory rules, for the entry the input names or else the tiny tied one.
  const kipp::Checkpoint* checkpoint = nullptr;
  auto repository = file.get_string(kipp::keys::kipp_repository);
  auto revision = file.get_string(kipp::keys::kipp_revision);
  if (repository && revision) checkpoint = kipp::find_checkpoint_by_source(*repository, *revision);
  if (!checkpoint) checkpoint = kipp::find_checkpoint("kipp-test/qwen3-tiny");
  kipp::QuantScheme scheme = kipp::QuantScheme::bf16;
  if (auto name = file.get_string(kipp::keys::kipp_quant_scheme))
    if (auto parsed_scheme = kipp::parse_quant_scheme(*name)) scheme = *parsed_scheme;
  if (checkpoint && !file.tensors.empty()) expect_result(kipp::bind_weights(file, *checkpoint, scheme));
  return 0;
}
