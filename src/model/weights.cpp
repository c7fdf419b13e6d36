#include "model/weights.h"

#include <unordered_set>

#include "util/invariant.h"

namespace kipp {
namespace {

WeightFormat format_of(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::bf16: return WeightFormat::bf16;
    case gguf::TensorType::q8_0: return WeightFormat::q8_0;
    case gguf::TensorType::q4_1: return WeightFormat::affine4;
    default: return WeightFormat::f32;
  }
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

WeightView* slot_for(ModelWeights& weights, const ExpectedTensor& tensor) {
  if (tensor.layer < 0) {
    switch (tensor.role) {
      case TensorRole::token_embedding: return &weights.token_embedding;
      case TensorRole::output_norm: return &weights.output_norm;
      case TensorRole::output: return &weights.lm_head;
      default: return nullptr;
    }
  }
  LayerWeights& layer = weights.layers[size_t(tensor.layer)];
  switch (tensor.role) {
    case TensorRole::attn_norm: return &layer.attn_norm;
    case TensorRole::attn_q: return &layer.attn_q;
    case TensorRole::attn_k: return &layer.attn_k;
    case TensorRole::attn_v: return &layer.attn_v;
    case TensorRole::attn_q_norm: return &layer.attn_q_norm;
    case TensorRole::attn_k_norm: return &layer.attn_k_norm;
    case TensorRole::attn_output: return &layer.attn_output;
    case TensorRole::ffn_norm: return &layer.ffn_norm;
    case TensorRole::ffn_gate: return &layer.ffn_gate;
    case TensorRole::ffn_up: return &layer.ffn_up;
    case TensorRole::ffn_down: return &layer.ffn_down;
    case TensorRole::ffn_gate_inp: return &layer.ffn_gate_inp;
    case TensorRole::ffn_gate_exps: return &layer.ffn_gate_exps;
    case TensorRole::ffn_up_exps: return &layer.ffn_up_exps;
    case TensorRole::ffn_down_exps: return &layer.ffn_down_exps;
    default: return nullptr;
  }
}

}  // namespace

Result<ModelWeights> bind_weights(const gguf::File& file, const Checkpoint& checkpoint, QuantScheme scheme,
                                  HeadScheme head) {
  const std::vector<ExpectedTensor> expected = expected_tensors(checkpoint);
  std::unordered_set<std::string_view> expected_names;
  for (const auto& tensor : expected) expected_names.insert(tensor.gguf_name);
  for (const auto& info : file.tensors)
    if (!expected_names.count(info.name))
      return fail("unknown tensor ", info.name, " (not part of a ", checkpoint.id, " artifact)");

  ModelWeights weights;
  weights.layers.resize(checkpoint.layers);
  for (const ExpectedTensor& tensor : expected) {
    const gguf::TensorInfo* info = file.find_tensor(tensor.gguf_name);
    if (!info) return fail("missing tensor ", tensor.gguf_name);
    const gguf::TensorType type = expected_tensor_type(tensor, scheme, head);
    if (info->type != uint32_t(type))
      return fail("tensor ", tensor.gguf_name, ": type ", gguf::tensor_type_info(info->type)->name, ", expected ",
                  gguf::tensor_type_info(uint32_t(type))->name, " for scheme ", quant_scheme_name(scheme),
                  tensor.is_head ? std::string(" with head ") + std::string(head_scheme_name(head)) : std::string());
    const std::vector<uint64_t> dims = tensor.gguf_dims();
    const std::vector<uint64_t> found(info->dims.begin(), info->dims.begin() + info->n_dims);
    if (found != dims)
      return fail("tensor ", tensor.gguf_name, ": shape ", dims_text(found), ", expected ", dims_text(dims));
    if (reinterpret_cast<uintptr_t>(info->data.data()) % 32 != 0)
      return fail("tensor ", tensor.gguf_name, ": data is not 32-byte aligned");
    WeightView* slot = slot_for(weights, tensor);
    KIPP_INVARIANT(slot != nullptr);  // every role expected_tensors() names has its slot
    *slot = WeightView{info->data.data(), format_of(type), tensor.rows, tensor.cols, info->bytes, tensor.experts};
  }
  if (checkpoint.has_head() && checkpoint.tied) weights.lm_head = weights.token_embedding;
  weights.experts_per_token = checkpoint.experts.per_token;
  return weights;
}

uint64_t weight_bytes_per_token(const ModelWeights& w) {
  uint64_t bytes = w.output_norm.bytes + w.lm_head.bytes + w.token_embedding.bytes / w.token_embedding.rows;
  for (const LayerWeights& l : w.layers) {
    for (const WeightView* view : {&l.attn_norm, &l.attn_q, &l.attn_k, &l.attn_v, &l.attn_q_norm, &l.attn_k_norm,
                                   &l.attn_output, &l.ffn_norm, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.ffn_gate_inp})
      bytes += view->bytes;
    for (const WeightView* stack : {&l.ffn_gate_exps, &l.ffn_up_exps, &l.ffn_down_exps})
      if (stack->experts) bytes += stack->bytes / stack->experts * w.experts_per_token;
  }
  return bytes;
}

}  // namespace kipp
