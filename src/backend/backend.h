// The backend contract: what every backend (cpu-ref, cpu, cuda) implements. A backend owns
// its prepared weights, scratch and KV storage; callers see sessions, block tables and evaluation
// items, never device memory. Evaluation is synchronous; errors are values.
//
// KV storage is a run of 32-position blocks. A session's block table maps each logical block
// (position / 32) to a physical block of the store the session addresses: its own private store,
// or the model's shared pool (create_kv_pool), where full blocks may be shared read-only between
// sessions with the same prefix.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "backend/forward_steps.h"
#include "backend/kv_format.h"
#include "model/model_file.h"
#include "util/error.h"

namespace kipp {

// KV positions per block of the paged cache.
inline constexpr uint32_t kKvBlockTokens = 32;

inline uint32_t kv_blocks_for(uint32_t positions) { return (positions + kKvBlockTokens - 1) / kKvBlockTokens; }

// The physical block holding a logical block under an item's table (empty = identity).
inline uint32_t physical_block(std::span<const uint32_t> table, uint32_t logical) {
  return table.empty() ? logical : table[logical];
}

std::string_view kv_format_name(KvFormat format);

class BackendSession {
 public:
  virtual ~BackendSession() = default;
  virtual uint32_t capacity() const = 0;         // positions the session can hold
  virtual uint32_t length() const = 0;           // positions in its KV cache
  virtual void reset() = 0;                      // length 0; capacity kept
  virtual Status truncate(uint32_t length) = 0;  // keep the first `length` positions
  // A pooled, empty session takes on `length` positions that already sit in the shared pool under
  // the block table its next items will carry: a reused prefix (whole blocks adopted, and maybe
  // the first rows of the next one, copied).
  virtual Status adopt_prefix(uint32_t length) = 0;
  // Whether the session addresses the model's shared pool (its items must carry a block table)
  // rather than a private store of its own.
  virtual bool pooled() const = 0;
  // Physical blocks in the store this session addresses; every block table entry must be below it.
  virtual uint32_t store_blocks() const = 0;
  // Identifies that store, so one call can tell which items write the same memory.
  virtual const void* store_id() const = 0;
};

struct EvalItem {
  BackendSession* session = nullptr;
  std::span<const uint32_t> tokens;  // appended at start_position; none is a no-op
  uint32_t start_position = 0;       // must equal the session's length
  uint32_t logit_rows = 1;           // logits for the last logit_rows tokens of this item
  float* logits = nullptr;           // logit_rows x vocab FP32, row-major
  // Logical block -> physical block, covering at least start_position + tokens.size() positions.
  // Empty means the identity table, which only a private session may use. The blocks this item
  // writes must appear nowhere else in the call; the blocks it only reads may be shared.
  std::span<const uint32_t> block_table;
  // When set: the final-normed hidden state of the item's last token (hidden FP32 values). It is
  // the one output beside logits (../shared/REVIEW-QWEN3-MOE.md): an embedding is made of it, and
  // a reranker's score of it and two rows of the head. A checkpoint without a head (role embed)
  // offers only this.
  float* hidden = nullptr;
};

class BackendModel {
 public:
  virtual ~BackendModel() = default;
  virtual std::string name() const = 0;
  // The name plus what was chosen at load (kernel set, threads), for reports.
  virtual std::string describe() const { return name(); }
  // A session with a private store of `capacity` positions (1..context), allocated once.
  virtual Result<std::unique_ptr<BackendSession>> create_session(uint32_t capacity) = 0;
  // The model's shared KV pool of `blocks` 32-position blocks, allocated once; at most one.
  virtual Status create_kv_pool(uint32_t blocks) = 0;
  // A session of up to `capacity` positions that addresses the shared pool.
  virtual Result<std::unique_ptr<BackendSession>> create_pooled_session(uint32_t capacity) = 0;
  // Copies the first `rows` positions (1..32) of pool block `from`, every layer's K and V, into
  // block `to` (a block no session reads or writes meanwhile): the copy-on-write of a shared
  // block whose beginning a new sequence shares, which then goes on in its own block.
  virtual Status copy_pool_rows(uint32_t from, uint32_t to, uint32_t rows) = 0;
  // Evaluates every item; an invalid item fails the call before any session changes.
  virtual Status eval(std::span<EvalItem> items) = 0;
  // Bytes of weights the backend copied into memory of its own (0 when it reads the mapping).
  virtual uint64_t copied_weight_bytes() const { return 0; }
  // For a backend with a device of its own (weights and KV there, not in host memory): what it
  // holds there. Host backends have none.
  struct DeviceMemory {
    std::string device;
    uint64_t held_peak_bytes = 0;  // the most the backend's allocations (weights, KV, scratch) reached
    uint64_t used_bytes = 0;       // in use on the device now, everyone's (the runtime's context too)
    uint64_t total_bytes = 0;
  };
  virtual std::optional<DeviceMemory> device_memory() const { return std::nullopt; }
  // Whether a row's logits are bitwise the same whatever batch it is evaluated in (how many rows,
  // which other items). The CPU backends are; cuda is not, as it picks its product kernel by batch
  // size (tensor cores for large batches), and its rows agree within the gates' bounds instead.
  // Paging is bitwise on every backend: the same batch through any block table gives the same bits.
  virtual bool batch_invariant() const { return true; }
  // Sessions created by this model and not yet destroyed.
  virtual uint32_t live_sessions() const = 0;
  // From the next eval call on, hands `recorder` every token's named intermediates
  // (forward_steps.h); null stops. A backend that cannot record says so. Recording slows evaluation
  // (values are copied out step by step) but changes no result.
  virtual Status record_steps(StepRecorder* recorder);
};

// Destroys a model only when no session is alive; otherwise an error, and the model stays usable.
// (A model destroyed regardless leaves its sessions safe to inspect, reset and destroy.)
Status destroy_backend(std::unique_ptr<BackendModel>& model);

// The readable scalar oracle: FP32 activations, sequential FP32 accumulation, KV in `kv_cache`.
Result<std::unique_ptr<BackendModel>> create_cpu_ref_backend(const ModelFile& model,
                                                             KvFormat kv_cache = KvFormat::bf16);

struct BackendOptions {
  unsigned threads = 0;                // CPU threads; 0 = one per physical core
  bool int8_activations = false;       // cpu: Q4_1 products take 8-bit block activations (cpu/kernels.h)
  bool bf16_activations = false;       // cpu: BF16 products take x rounded to BF16 (the avx512bf16 set)
  KvFormat kv_cache = KvFormat::bf16;  // cpu and cpu-ref; cuda stores BF16 only
  // cpu: "portable", "avx2", "avx512", "avx512bf16" or "amx" runs that kernel set (one the
  // processor supports; on processors other than x86-64, only portable); empty runs the best it
  // supports, or avx512bf16 with bf16_activations (cpu/cpu_features.h).
  std::string cpu_isa = {};
  bool cuda_graphs = true;  // cuda: replay captured decode steps; false launches every kernel
};

// The CUDA backend (builds with -DKIPP_CUDA=ON only): weights and KV on the first NVIDIA GPU.
Result<std::unique_ptr<BackendModel>> create_cuda_backend(const ModelFile& model, const BackendOptions& options);

// The fast CPU backend: SIMD kernels chosen at load (options.cpu_isa forces a set) on
// options.threads threads.
Result<std::unique_ptr<BackendModel>> create_cpu_backend(const ModelFile& model, const BackendOptions& options);

// The threads a CPU backend runs when asked for 0: one per physical core.
unsigned default_cpu_threads();

// The backends this build offers, by the names the CLI's --backend takes; the first is the default.
std::span<const std::string_view> backend_names();
Result<std::unique_ptr<BackendModel>> create_backend(std::string_view name, const ModelFile& model,
                                                     const BackendOptions& options = {});

}  // namespace kipp
