// Round trip: synthetic source -> `kipp convert` (the fixture) -> strict loader. Every bound
// tensor is compared with the safetensors source read independently: bit for bit where the
// artifact stores BF16 or widened F32, within the scheme's error bound where it quantizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "convert/safetensors.h"
#include "model/model_file.h"
#include "quant/blocks.h"
#include "quant/float_formats.h"
#include "test_paths.h"

namespace kipp {
namespace {

struct Case {
  std::string model;
  QuantScheme scheme;
  HeadScheme head = HeadScheme::bf16;
};

std::string artifact_name(const Case& c) {
  return c.model + "." + std::string(quant_scheme_name(c.scheme)) + (c.head == HeadScheme::q8_0 ? ".head-q8_0" : "");
}

void PrintTo(const Case& c, std::ostream* out) { *out << artifact_name(c); }

std::string artifact_path(const Case& c) { return testing::test_models_dir() + "/" + artifact_name(c) + ".gguf"; }

std::vector<uint16_t> source_tensor(const SafetensorsCheckpoint& source, const std::string& name) {
  const SafetensorsTensor* tensor = source.find(name);
  EXPECT_NE(tensor, nullptr) << name;
  std::vector<uint16_t> values(tensor->bytes / 2);
  EXPECT_TRUE(source.read(*tensor, 0, values.data(), tensor->bytes).ok());
  return values;
}

const WeightView& view_for(const ModelWeights& w, const ExpectedTensor& t) {
  static const WeightView none;
  if (t.layer < 0) {
    if (t.role == TensorRole::token_embedding) return w.token_embedding;
    if (t.role == TensorRole::output_norm) return w.output_norm;
    if (t.role == TensorRole::output) return w.lm_head;
    return none;
  }
  const LayerWeights& l = w.layers[size_t(t.layer)];
  switch (t.role) {
    case TensorRole::attn_norm: return l.attn_norm;
    case TensorRole::attn_q: return l.attn_q;
    case TensorRole::attn_k: return l.attn_k;
    case TensorRole::attn_v: return l.attn_v;
    case TensorRole::attn_q_norm: return l.attn_q_norm;
    case TensorRole::attn_k_norm: return l.attn_k_norm;
    case TensorRole::attn_output: return l.attn_output;
    case TensorRole::ffn_norm: return l.ffn_norm;
    case TensorRole::ffn_gate: return l.ffn_gate;
    case TensorRole::ffn_up: return l.ffn_up;
    case TensorRole::ffn_down: return l.ffn_down;
    default: return none;
  }
}

// Normalized squared error of one quantized tensor against its BF16 source, checking every block
// against the scheme's bound: half a quantization step (plus fp16 rounding of the scale and min).
double check_quantized(const WeightView& view, const std::vector<uint16_t>& source, const std::string& name) {
  const uint64_t blocks = view.rows * view.cols / kBlockSize;
  double error = 0.0, energy = 0.0;
  float values[kBlockSize], decoded[kBlockSize];
  for (uint64_t b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < kBlockSize; ++i) values[i] = bf16_to_f32(source[b * kBlockSize + i]);
    float bound = 0.0f;
    if (view.format == WeightFormat::q8_0) {
      BlockQ8_0 block;
      std::memcpy(&block, view.data + b * sizeof block, sizeof block);
      dequantize_q8_0(block, decoded);
      bound = 0.5f * fp16_to_f32(block.scale_fp16) * 1.001f + 1e-7f;
    } else {
      BlockAffine4 block;
      std::memcpy(&block, view.data + b * sizeof block, sizeof block);
      dequantize_affine4(block, decoded);
      const float lo = *std::min_element(values, values + kBlockSize);
      const float hi = *std::max_element(values, values + kBlockSize);
      const float step = fp16_to_f32(block.scale_fp16);
      bound = 0.5f * step + std::fabs(fp16_to_f32(block.min_fp16) - lo) + 15.0f * std::fabs(step - (hi - lo) / 15.0f) +
              1e-6f;
    }
    for (size_t i = 0; i < kBlockSize; ++i) {
      const double diff = double(decoded[i]) - double(values[i]);
      if (std::fabs(diff) > bound) {
        ADD_FAILURE() << name << " block " << b << " element " << i << ": " << decoded[i] << " vs " << values[i];
        return 1.0;
      }
      error += diff * diff;
      energy += double(values[i]) * values[i];
    }
  }
  return error / energy;
}

class RoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(RoundTrip, EveryTensorMatchesItsSource) {
  const Case& c = GetParam();
  auto model = ModelFile::open(artifact_path(c));
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelFile& m = *model.value();
  EXPECT_EQ(m.checkpoint().id, "kipp-test/" + c.model);
  EXPECT_EQ(m.scheme(), c.scheme);
  EXPECT_EQ(m.head(), c.head);
  EXPECT_EQ(m.weights().lm_head.format, c.head == HeadScheme::q8_0 ? WeightFormat::q8_0 : WeightFormat::bf16);
  auto source = SafetensorsCheckpoint::open(testing::test_models_dir() + "/src/" + c.model);
  ASSERT_TRUE(source.ok()) << source.error().message;

  double worst_nmse = 0.0, head_nmse = 0.0;
  for (const ExpectedTensor& t : expected_tensors(m.checkpoint())) {
    const WeightView& view = view_for(m.weights(), t);
    ASSERT_NE(view.data, nullptr) << t.gguf_name;
    ASSERT_EQ(view.rows, t.rows);
    ASSERT_EQ(view.cols, t.cols);
    const std::vector<uint16_t> expected = source_tensor(source.value(), t.hf_name);
    switch (view.format) {
      case WeightFormat::bf16:
        ASSERT_EQ(std::memcmp(view.data, expected.data(), expected.size() * 2), 0) << t.gguf_name;
        break;
      case WeightFormat::f32:
        for (size_t i = 0; i < expected.size(); ++i) {
          float widened;
          std::memcpy(&widened, view.data + 4 * i, 4);
          ASSERT_EQ(std::bit_cast<uint32_t>(widened), uint32_t(expected[i]) << 16) << t.gguf_name << " " << i;
        }
        break;
      case WeightFormat::q8_0:
      case WeightFormat::affine4:
        ASSERT_TRUE(t.is_projection() || t.is_head) << t.gguf_name;
        {
          double& worst = t.is_head ? head_nmse : worst_nmse;
          worst = std::max(worst, check_quantized(view, expected, t.gguf_name));
          break;
        }
    }
  }
  // Per-tensor normalized squared error of the schemes on these (uniformly distributed) weights.
  if (c.scheme == QuantScheme::q8_0) {
    EXPECT_LT(worst_nmse, 3e-5);  // uniform weights: 1 / (4 * 127^2) = 1.55e-5 in theory
  }
  if (c.scheme == QuantScheme::affine4_gs32) {
    EXPECT_LT(worst_nmse, 6e-3);  // uniform weights: about 1/225 = 4.4e-3 in theory
  }
  if (c.head == HeadScheme::q8_0) {
    EXPECT_LT(head_nmse, 3e-5);  // the same Q8_0 rounding as the projections
  }
  if (m.checkpoint().tied) {
    EXPECT_EQ(m.weights().lm_head.data, m.weights().token_embedding.data);
  } else {
    EXPECT_NE(m.weights().lm_head.data, m.weights().token_embedding.data);
  }
  std::printf("%s: worst per-tensor NMSE of the projections %.3g\n", c.model.c_str(), worst_nmse);
}

TEST_P(RoundTrip, CarriesTokenizerAndProvenance) {
  auto model = ModelFile::open(artifact_path(GetParam()));
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelFile& m = *model.value();
  const TokenizerData& tok = m.tokenizer();
  EXPECT_EQ(tok.tokens.size(), 151936u);
  EXPECT_EQ(tok.merges.size(), 151387u);
  EXPECT_EQ(tok.tokens[151644], "<|im_start|>");
  EXPECT_EQ(tok.tokens[151667], "<think>");
  EXPECT_EQ(tok.eos_id, m.checkpoint().eos_id());
  EXPECT_FALSE(tok.add_bos);
  EXPECT_FALSE(tok.chat_template.empty());
  const auto& files = m.provenance().source_files;
  ASSERT_GE(files.size(), 4u);
  EXPECT_EQ(files[0].name, "config.json");
  for (const auto& f : files) EXPECT_EQ(f.sha256.size(), 64u);
}

INSTANTIATE_TEST_SUITE_P(Fixture, RoundTrip,
                         ::testing::Values(Case{"qwen3-tiny", QuantScheme::bf16}, Case{"qwen3-tiny", QuantScheme::q8_0},
                                           Case{"qwen3-tiny", QuantScheme::affine4_gs32},
                                           Case{"qwen3-tiny-untied", QuantScheme::bf16},
                                           Case{"qwen3-tiny-untied", QuantScheme::q8_0},
                                           Case{"qwen3-tiny-untied", QuantScheme::affine4_gs32},
                                           Case{"qwen3-tiny", QuantScheme::bf16, HeadScheme::q8_0},
                                           Case{"qwen3-tiny", QuantScheme::affine4_gs32, HeadScheme::q8_0},
                                           Case{"qwen3-tiny-untied", QuantScheme::bf16, HeadScheme::q8_0},
                                           Case{"qwen3-tiny-untied", QuantScheme::q8_0, HeadScheme::q8_0}),
                         [](const auto& test_info) {
                           std::string name = artifact_name(test_info.param);
                           std::replace(name.begin(), name.end(), '-', '_');
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

TEST(ModelFile, NamesTheFileInEveryError) {
  auto missing = ModelFile::open("/nonexistent/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/model.gguf"), std::string::npos);

  const std::string path = testing::scratch_dir("truncated") + "/t.gguf";
  {
    auto source = MappedFile::open(testing::test_models_dir() + "/qwen3-tiny.bf16.gguf");
    ASSERT_TRUE(source.ok());
    FILE* out = std::fopen(path.c_str(), "wb");
    std::fwrite(source->bytes().data(), 1, source->bytes().size() - 1000, out);
    std::fclose(out);
  }
  auto truncated = ModelFile::open(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find(path + ": truncated file: tensor output_norm.weight"), std::string::npos)
      << truncated.error().message;
}

}  // namespace
}  // namespace kipp
