// The CUDA backend: the backend contract on one NVIDIA GPU. Weights are copied to device memory
// at model creation, in the artifact's own formats split into aligned planes (weight_planes.h);
// Q, K and V share one device weight, as do gate and up, so each is one product. KV stores
// (private or the shared pool) live on the device. An eval call packs every token of every item
// into one batch (so the weights are read once per step), runs the forward pass as one sequence
// of kernels on one stream, and only the requested FP32 logit rows come back to the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/batch_layout.h"
#include "backend/cuda/device_graph.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/weight_planes.h"
#include "backend/eval_checks.h"
#include "backend/positioned_session.h"
#include "model/model_file.h"
#include "util/invariant.h"

namespace kipp::cuda {
namespace {

// K and V of `blocks` 32-position blocks for every layer, on the device.
struct DeviceKvStore {
  DeviceBuffer k, v;
  uint32_t blocks = 0;
};

Result<std::shared_ptr<DeviceKvStore>> allocate_store(const Checkpoint& c, uint32_t blocks) {
  auto store = std::make_shared<DeviceKvStore>();
  const size_t bytes = size_t(c.layers) * blocks * kKvBlockTokens * c.kv_width() * sizeof(uint16_t);
  const std::string what = "a KV store of " + std::to_string(blocks) + " blocks";
  KIPP_ASSIGN(store->k, DeviceBuffer::allocate(bytes, what));
  KIPP_ASSIGN(store->v, DeviceBuffer::allocate(bytes, what));
  store->blocks = blocks;
  return store;
}

// The batch's integers in one array, laid out so that every offset depends only on the batch's
// shape (rows, items, logit rows): the block tables, whose length grows with the context, last.
struct BatchInts {
  struct Offsets {
    size_t ids, positions, row_item, table_offset, logit_rows, tables;
  };
  static Offsets offsets(uint32_t rows, uint32_t items, uint32_t logit_rows) {
    const size_t r = rows;
    return {0, r, 2 * r, 3 * r, 3 * r + items, 3 * r + items + logit_rows};
  }
  static size_t fixed(uint32_t rows, uint32_t items, uint32_t logit_rows) {
    return offsets(rows, items, logit_rows).tables;
  }

  explicit BatchInts(const BatchLayout& batch) {
    for (const std::vector<int32_t>* part : {&batch.token_ids, &batch.positions, &batch.row_item, &batch.table_offset,
                                             &batch.logit_rows, &batch.block_tables})
      values.insert(values.end(), part->begin(), part->end());
  }
  std::vector<int32_t> values;
};

class Session final : public PositionedSession {
 public:
  Session(std::shared_ptr<DeviceKvStore> store, uint32_t capacity, bool pooled, std::shared_ptr<const int> token)
      : PositionedSession(capacity, pooled, std::move(token)), store_(std::move(store)) {}
  uint32_t store_blocks() const override { return store_->blocks; }
  const void* store_id() const override { return store_.get(); }
  KvStoreView view() const { return {store_->k.as<uint16_t>(), store_->v.as<uint16_t>(), store_->blocks}; }

 private:
  std::shared_ptr<DeviceKvStore> store_;
};

// The session of an item given to eval, which this backend created (the eval checks made sure it
// is this model's).
Session& session_of(const EvalItem& item) {
  KIPP_INVARIANT(dynamic_cast<Session*>(item.session) != nullptr);
  return static_cast<Session&>(*item.session);
}

// Activations for `rows` batch rows, grown when a larger batch arrives.
struct Activations {
  DeviceBuffer x, x_norm, qkv, attention, attention_scratch, swiglu, ints, stores, final_rows, logits;
};

class Model final : public BackendModel {
 public:
  static Result<std::unique_ptr<BackendModel>> create(const ModelFile& file, bool graphs) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
      return fail("the cuda backend needs an NVIDIA GPU: no CUDA device is visible");
    KIPP_TRY(check(cudaSetDevice(0), "selecting device 0"));
    std::unique_ptr<Model> model(new Model(file, graphs));
    KIPP_TRY(model->upload_weights());
    KIPP_TRY(check(cudaStreamCreateWithFlags(&model->stream_, cudaStreamNonBlocking), "creating a stream"));
    cudaDeviceProp properties{};
    cudaGetDeviceProperties(&properties, 0);
    model->device_name_ = properties.name;
    return std::unique_ptr<BackendModel>(std::move(model));
  }

  ~Model() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (pinned_logits_) cudaFreeHost(pinned_logits_);
  }

  std::string name() const override { return "cuda"; }
  std::string describe() const override {
    return "cuda (" + device_name_ + ", " + std::to_string(copied_bytes_ >> 20) + " MiB of weights)";
  }
  uint64_t copied_weight_bytes() const override { return copied_bytes_; }
  std::optional<DeviceMemory> device_memory() const override {
    DeviceMemory memory{device_name_, device_bytes().peak};
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      memory.used_bytes = total_bytes - free_bytes;
      memory.total_bytes = total_bytes;
    }
    return memory;
  }
  bool batch_invariant() const override { return false; }
  // Steps the kernels keep in memory of their own: the embedding, Q and K after RoPE, attention,
  // the residual stream after each block, and logits. The norms are fused into the products that
  // read them, and the FFN's output into the residual add, so those steps are not recorded.
  Status record_steps(StepRecorder* recorder) override {
    recorder_ = recorder;
    return {};
  }
  uint32_t live_sessions() const override { return uint32_t(token_.use_count() - 1); }

  Result<std::unique_ptr<BackendSession>> create_session(uint32_t capacity) override {
    KIPP_TRY(check_session_capacity(c_, capacity));
    KIPP_ASSIGN(auto store, allocate_store(c_, kv_blocks_for(capacity)));
    return std::unique_ptr<BackendSession>(new Session(std::move(store), capacity, false, token_));
  }

  Status create_kv_pool(uint32_t blocks) override {
    if (pool_) return fail("the model already has a KV pool");
    if (blocks == 0) return fail("a KV pool needs at least one block");
    KIPP_ASSIGN(pool_, allocate_store(c_, blocks));
    return {};
  }

  Result<std::unique_ptr<BackendSession>> create_pooled_session(uint32_t capacity) override {
    if (!pool_) return fail("create_kv_pool first: the model has no shared KV pool");
    KIPP_TRY(check_session_capacity(c_, capacity));
    return std::unique_ptr<BackendSession>(new Session(pool_, capacity, true, token_));
  }

  // Each layer's rows are contiguous within a block ([layer][block][slot][kv_width]): one copy
  // per layer for K and one for V. Evaluation is synchronous, so nothing on the stream is using
  // either block.
  Status copy_pool_rows(uint32_t from, uint32_t to, uint32_t rows) override {
    if (!pool_) return fail("create_kv_pool first: the model has no shared KV pool");
    KIPP_TRY(check_pool_copy(pool_->blocks, from, to, rows));
    const size_t row_bytes = size_t(c_.kv_width()) * sizeof(uint16_t), block_bytes = kKvBlockTokens * row_bytes;
    for (uint32_t layer = 0; layer < c_.layers; ++layer)
      for (DeviceBuffer* buffer : {&pool_->k, &pool_->v}) {
        uint8_t* base = buffer->as<uint8_t>() + size_t(layer) * pool_->blocks * block_bytes;
        KIPP_TRY(check(cudaMemcpy(base + to * block_bytes, base + from * block_bytes, rows * row_bytes,
                                  cudaMemcpyDeviceToDevice),
                       "copying KV rows"));
      }
    return {};
  }

  Status eval(std::span<EvalItem> items) override {
    KIPP_TRY(checker_.check(items));
    const BatchLayout batch = layout_batch(items, c_.vocab());
    if (batch.rows() > 0) KIPP_TRY(forward(items, batch));
    for (EvalItem& item : items) session_of(item).set_length(item.start_position + uint32_t(item.tokens.size()));
    return {};
  }

 private:
  Model(const ModelFile& file, bool graphs)
      : file_(file), c_(file.checkpoint()), checker_(c_), graphs_enabled_(graphs) {}

  // Each tensor once (a tied head is the embedding's copy), in the planes of weight_planes.h; Q, K
  // and V stacked into one device weight, gate and up interleaved row by row into another.
  Status upload_weights() {
    const ModelWeights& w = file_.weights();
    KIPP_ASSIGN(embedding_, upload({&w.token_embedding}));
    KIPP_ASSIGN(output_norm_, upload({&w.output_norm}));
    if (w.lm_head.data == w.token_embedding.data) {
      lm_head_ = embedding_;
    } else {
      KIPP_ASSIGN(lm_head_, upload({&w.lm_head}));
    }
    layers_.resize(w.layers.size());
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const LayerWeights& from = w.layers[l];
      DeviceLayer& to = layers_[l];
      KIPP_ASSIGN(to.attn_norm, upload({&from.attn_norm}));
      KIPP_ASSIGN(to.attn_qkv, upload({&from.attn_q, &from.attn_k, &from.attn_v}));
      KIPP_ASSIGN(to.attn_q_norm, upload({&from.attn_q_norm}));
      KIPP_ASSIGN(to.attn_k_norm, upload({&from.attn_k_norm}));
      KIPP_ASSIGN(to.attn_output, upload({&from.attn_output}));
      KIPP_ASSIGN(to.ffn_norm, upload({&from.ffn_norm}));
      KIPP_ASSIGN(to.ffn_gate_up, upload({&from.ffn_gate, &from.ffn_up}, Stacking::row_by_row));
      KIPP_ASSIGN(to.ffn_down, upload({&from.ffn_down}));
    }
    return {};
  }

  // `parts` stacked into one device weight.
  Result<DeviceWeight> upload(std::initializer_list<const WeightView*> parts,
                              Stacking stacking = Stacking::one_after_another) {
    const std::span<const WeightView* const> list(parts.begin(), parts.size());
    KIPP_ASSIGN(const PlaneBytes total, stacked_plane_bytes(list));
    std::vector<uint8_t> staged(total.values + total.scales);
    KIPP_TRY(stack_into_planes(list, stacking, staged.data(), staged.data() + total.values));
    KIPP_ASSIGN(DeviceBuffer buffer, DeviceBuffer::allocate(staged.size(), "model weights"));
    KIPP_TRY(
        check(cudaMemcpy(buffer.as<void>(), staged.data(), staged.size(), cudaMemcpyHostToDevice), "copying weights"));
    uint32_t rows = 0;
    for (const WeightView* part : list) rows += uint32_t(part->rows);
    const uint8_t* values = buffer.as<const uint8_t>();
    const DeviceWeight weight{values, total.scales ? reinterpret_cast<const uint16_t*>(values + total.values) : nullptr,
                              list[0]->format, rows, uint32_t(list[0]->cols)};
    copied_bytes_ += staged.size();
    weights_.push_back(std::move(buffer));
    return weight;
  }

  // Activation buffers for `rows` batch rows and `logit_rows` rows of logits. A buffer that grows
  // moves, so the captured graphs that point into it are dropped.
  Status reserve(uint32_t rows, uint32_t logit_rows, size_t ints, uint32_t items) {
    const size_t f = sizeof(float);
    auto grow = [this](DeviceBuffer& buffer, size_t bytes, const char* what) -> Status {
      if (bytes <= buffer.bytes()) return {};
      decode_graphs_.clear();
      return buffer.reserve(bytes, what);
    };
    KIPP_TRY(grow(a_.x, size_t(rows) * c_.hidden * f, "activations"));
    KIPP_TRY(grow(a_.x_norm, size_t(rows) * c_.hidden * f, "activations"));
    KIPP_TRY(grow(a_.qkv, size_t(rows) * qkv_width() * f, "activations"));
    KIPP_TRY(grow(a_.attention, size_t(rows) * c_.attention_width() * f, "activations"));
    KIPP_TRY(grow(a_.attention_scratch, attention_scratch_floats(c_.q_heads, c_.head_dim()) * f, "activations"));
    KIPP_TRY(grow(a_.swiglu, size_t(rows) * c_.ffn * f, "activations"));
    // Room for every item's whole block table, so that a growing context does not move it.
    const size_t table_room = size_t(items) * kv_blocks_for(c_.context);
    KIPP_TRY(grow(a_.ints, std::max(ints, BatchInts::fixed(rows, items, logit_rows) + table_room) * sizeof(int32_t),
                  "batch layout"));
    KIPP_TRY(grow(a_.stores, items * sizeof(KvStoreView), "batch layout"));
    KIPP_TRY(grow(a_.final_rows, size_t(logit_rows) * c_.hidden * f, "activations"));
    KIPP_TRY(grow(a_.logits, size_t(logit_rows) * c_.vocab() * f, "logits"));
    const size_t host_bytes = size_t(logit_rows) * c_.vocab() * f;
    if (host_bytes > pinned_bytes_) {
      if (pinned_logits_) cudaFreeHost(pinned_logits_);
      pinned_logits_ = nullptr;
      KIPP_TRY(check(cudaMallocHost(&pinned_logits_, host_bytes), "allocating pinned memory for logits"));
      pinned_bytes_ = host_bytes;
    }
    return {};
  }

  Status forward(std::span<EvalItem> items, const BatchLayout& batch) {
    const uint32_t rows = batch.rows(), logit_rows = uint32_t(batch.logit_rows.size());
    const BatchInts ints(batch);
    std::vector<KvStoreView> stores;
    for (const EvalItem& item : items) stores.push_back(session_of(item).view());
    KIPP_TRY(reserve(rows, logit_rows, ints.values.size(), uint32_t(items.size())));
    // One upload of every integer the kernels need, one of the per-item stores.
    KIPP_TRY(check(cudaMemcpyAsync(a_.ints.as<void>(), ints.values.data(), ints.values.size() * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream_),
                   "copying the batch layout"));
    KIPP_TRY(check(cudaMemcpyAsync(a_.stores.as<void>(), stores.data(), stores.size() * sizeof(KvStoreView),
                                   cudaMemcpyHostToDevice, stream_),
                   "copying the batch layout"));
    // A decode step (one token and one logit row per item) replays the graph captured for its
    // batch size; anything else is launched kernel by kernel.
    const bool decode_step = logit_rows == rows && rows == items.size();
    recording_ = recorder_ ? &batch : nullptr;  // recording runs step by step, never a graph
    if (decode_step && graphs_enabled_ && !recorder_) {
      auto found = decode_graphs_.find(rows);
      if (found == decode_graphs_.end()) {
        KIPP_ASSIGN(DeviceGraph graph,
                    DeviceGraph::capture(stream_, [&] { launch_forward(rows, logit_rows, uint32_t(items.size())); }));
        found = decode_graphs_.emplace(rows, std::move(graph)).first;
      }
      KIPP_TRY(found->second.launch(stream_));
    } else {
      launch_forward(rows, logit_rows, uint32_t(items.size()));
    }
    recording_ = nullptr;
    KIPP_TRY(std::exchange(recording_error_, Status{}));
    if (logit_rows == 0) return check(cudaStreamSynchronize(stream_), "evaluating the batch");
    const size_t row_bytes = size_t(c_.vocab()) * sizeof(float);
    KIPP_TRY(check(cudaMemcpyAsync(pinned_logits_, a_.logits.as<void>(), logit_rows * row_bytes, cudaMemcpyDeviceToHost,
                                   stream_),
                   "copying logits back"));
    KIPP_TRY(check(cudaStreamSynchronize(stream_), "evaluating the batch"));
    for (uint32_t r = 0; r < logit_rows; ++r)
      std::memcpy(batch.logit_targets[r], static_cast<const char*>(pinned_logits_) + r * row_bytes, row_bytes);
    return {};
  }

  // The forward pass as kernels on the stream, reading the uploaded batch: every argument depends
  // only on the batch's shape, so a captured graph of it serves every step of that shape.
  void launch_forward(uint32_t rows, uint32_t logit_rows, uint32_t items) {
    const int32_t* d_ints = a_.ints.as<const int32_t>();
    const BatchInts::Offsets at = BatchInts::offsets(rows, items, logit_rows);
    float* x = a_.x.as<float>();
    float* x_norm = a_.x_norm.as<float>();
    const float eps = c_.rms_norm_eps();
    embed_rows(embedding_, d_ints + at.ids, rows, c_.hidden, x, stream_);
    note(ForwardStep::embedding, 0, x, c_.hidden, c_.hidden, rows);
    PagedKv kv{d_ints + at.positions,
               d_ints + at.row_item,
               d_ints + at.table_offset,
               d_ints + at.tables,
               a_.stores.as<const KvStoreView>(),
               0,
               c_.kv_heads,
               c_.head_dim()};
    const QkvRows qkv{a_.qkv.as<float>(), qkv_width(), c_.q_heads, c_.kv_heads, c_.head_dim()};
    for (uint32_t l = 0; l < layers_.size(); ++l) {
      const DeviceLayer& layer = layers_[l];
      kv.layer = l;
      // Attention block: norm and Q/K/V, per-head norm and RoPE and store K/V, attend, project and add.
      normed_matmul(layer.attn_qkv, x, as_f32(layer.attn_norm), eps, x_norm, rows, qkv.base, Write::replace, stream_);
      prepare_heads(qkv, rows, as_f32(layer.attn_q_norm), as_f32(layer.attn_k_norm), eps, c_.rope_theta, kv, stream_);
      note(ForwardStep::q_rope, l, qkv.base, c_.attention_width(), qkv_width(), rows);
      note(ForwardStep::k_rope, l, qkv.base + c_.attention_width(), c_.kv_width(), qkv_width(), rows);
      attend(qkv, rows, kv, a_.attention_scratch.as<float>(), a_.attention.as<float>(), stream_);
      note(ForwardStep::attention, l, a_.attention.as<float>(), c_.attention_width(), c_.attention_width(), rows);
      matmul(layer.attn_output, a_.attention.as<float>(), rows, x, Write::add, stream_);
      note(ForwardStep::attn_residual, l, x, c_.hidden, c_.hidden, rows);
      // Feed-forward block: norm and gate/up with SiLU(gate) * up, down and add.
      normed_matmul(layer.ffn_gate_up, x, as_f32(layer.ffn_norm), eps, x_norm, rows, a_.swiglu.as<float>(),
                    Write::swiglu, stream_);
      matmul(layer.ffn_down, a_.swiglu.as<float>(), rows, x, Write::add, stream_);
      note(ForwardStep::residual, l, x, c_.hidden, c_.hidden, rows);
    }
    if (logit_rows == 0) return;
    // Logits only for the rows that want them.
    gather_rows(x, d_ints + at.logit_rows, logit_rows, c_.hidden, a_.final_rows.as<float>(), stream_);
    float* final_rows = a_.final_rows.as<float>();  // normalized in place where it must be
    normed_matmul(lm_head_, final_rows, as_f32(output_norm_), eps, final_rows, logit_rows, a_.logits.as<float>(),
                  Write::replace, stream_);
    note(ForwardStep::logits, 0, a_.logits.as<float>(), c_.vocab(), c_.vocab(), logit_rows);
  }

  // Hands `count` rows of a step (`width` values, `stride` apart on the device) to the recorder
  // once the stream has computed them: batch rows, or for logits the logit rows.
  void note(ForwardStep step, uint32_t layer, const float* rows, uint32_t width, uint32_t stride, uint32_t count) {
    if (!recording_ || !recording_error_) return;
    std::vector<float> host(size_t(count) * stride);
    recording_error_ =
        check(cudaMemcpyAsync(host.data(), rows, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_),
              "copying a step back");
    if (recording_error_) recording_error_ = check(cudaStreamSynchronize(stream_), "copying a step back");
    if (!recording_error_) return;
    const bool logits = step == ForwardStep::logits;
    for (uint32_t r = 0; r < count; ++r) {
      const int32_t batch_row = logits ? recording_->logit_rows[r] : int32_t(r);
      recorder_->record(step, layer, uint32_t(recording_->positions[batch_row]),
                        std::span(host.data() + size_t(r) * stride, width));
    }
  }

  uint32_t qkv_width() const { return c_.attention_width() + 2 * c_.kv_width(); }

  static const float* as_f32(const DeviceWeight& w) { return reinterpret_cast<const float*>(w.data); }

  struct DeviceLayer {
    DeviceWeight attn_norm, attn_qkv, attn_q_norm, attn_k_norm, attn_output, ffn_norm, ffn_gate_up, ffn_down;
  };

  const ModelFile& file_;
  const Checkpoint& c_;
  EvalChecker checker_;
  std::vector<DeviceBuffer> weights_;
  DeviceWeight embedding_, output_norm_, lm_head_;
  std::vector<DeviceLayer> layers_;
  uint64_t copied_bytes_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  Activations a_;
  void* pinned_logits_ = nullptr;
  size_t pinned_bytes_ = 0;
  std::shared_ptr<DeviceKvStore> pool_;
  // Captured decode steps by batch size (--no-cuda-graphs launches every kernel instead).
  std::map<uint32_t, DeviceGraph> decode_graphs_;
  const bool graphs_enabled_;
  StepRecorder* recorder_ = nullptr;
  const BatchLayout* recording_ = nullptr;  // the batch being recorded, during its forward pass
  Status recording_error_ = {};
  std::shared_ptr<const int> token_ = std::make_shared<const int>(0);
};

}  // namespace
}  // namespace kipp::cuda

namespace kipp {

Result<std::unique_ptr<BackendModel>> create_cuda_backend(const ModelFile& model, const BackendOptions& options) {
  return cuda::Model::create(model, options.cuda_graphs);
}

}  // namespace kipp
