// Reads Kipp artifacts with an independent GGUF parser (npm @huggingface/gguf) and checks what
// llama.cpp relies on: the qwen3 keys, llama.cpp tensor names, ggml type ids and shapes, tokenizer
// keys, and tensor offsets packed at the 32-byte alignment.
// Usage: node gguf_independent_check.mjs KIPP TEST_MODELS_DIR
import { gguf } from "@huggingface/gguf";
import { execFileSync } from "node:child_process";
import assert from "node:assert/strict";

const [kipp, models] = process.argv.slice(2);
const registry = JSON.parse(execFileSync(kipp, ["registry", "--json"], { encoding: "utf8" })).checkpoints;
const GGML = { F32: 0, BF16: 30, Q8_0: 8, Q4_1: 3 };
const projection = /^blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight$/;
let checked = 0;

for (const model of ["qwen3-tiny", "qwen3-tiny-untied"]) {
  const entry = registry.find((e) => e.id === `kipp-test/${model}`);
  for (const [scheme, projType] of [["bf16", GGML.BF16], ["q8_0", GGML.Q8_0], ["affine4_gs32", GGML.Q4_1]]) {
    const path = `${models}/${model}.${scheme}.gguf`;
    const { metadata, tensorInfos, tensorDataOffset } = await gguf(path, { allowLocalFile: true });
    assert.equal(metadata.version, 3);
    assert.equal(metadata["general.architecture"], "qwen3");
    assert.equal(metadata["qwen3.block_count"], entry.layers);
    assert.equal(metadata["qwen3.embedding_length"], entry.hidden);
    assert.equal(metadata["qwen3.feed_forward_length"], entry.ffn);
    assert.equal(metadata["qwen3.attention.head_count"], entry.q_heads);
    assert.equal(metadata["qwen3.attention.head_count_kv"], 8);
    assert.equal(metadata["qwen3.attention.key_length"], 128);
    assert.equal(metadata["qwen3.attention.value_length"], 128);
    assert.equal(metadata["qwen3.context_length"], entry.context);
    assert.equal(metadata["qwen3.rope.freq_base"], entry.rope_theta);
    assert.ok(Math.abs(metadata["qwen3.attention.layer_norm_rms_epsilon"] - 1e-6) < 1e-12);
    assert.equal(metadata["tokenizer.ggml.model"], "gpt2");
    assert.equal(metadata["tokenizer.ggml.pre"], "qwen2");
    assert.equal(metadata["tokenizer.ggml.tokens"].length, 151936);
    assert.equal(metadata["tokenizer.ggml.token_type"].length, 151936);
    assert.equal(metadata["tokenizer.ggml.tokens"][151667], "<think>");
    assert.equal(metadata["tokenizer.ggml.eos_token_id"], entry.eos_id);
    assert.equal(metadata["tokenizer.ggml.add_bos_token"], false);
    assert.equal(metadata["kipp.quant.scheme"], scheme);
    assert.equal(metadata["kipp.source.repository"], entry.repository);
    assert.equal(tensorInfos.length, entry.tensor_count);
    assert.equal(Number(tensorDataOffset) % 32, 0);

    let expectedOffset = 0n;
    for (const t of tensorInfos) {
      assert.equal(t.offset, expectedOffset, `${t.name} offset`);
      const dims = t.shape.map(Number);
      const elements = dims.reduce((a, b) => a * b, 1);
      let type, bytes;
      if (dims.length === 1) { type = GGML.F32; bytes = elements * 4; }
      else if (projection.test(t.name)) {
        type = projType;
        bytes = projType === GGML.BF16 ? elements * 2 : (elements / 32) * (projType === GGML.Q8_0 ? 34 : 20);
      } else { type = GGML.BF16; bytes = elements * 2; }
      assert.equal(t.dtype, type, `${path}: ${t.name} type`);
      if (t.name === "token_embd.weight" || t.name === "output.weight") assert.deepEqual(dims, [entry.hidden, 151936]);
      if (t.name === "blk.0.attn_q.weight") assert.deepEqual(dims, [entry.hidden, entry.attention_width]);
      if (t.name === "blk.0.attn_output.weight") assert.deepEqual(dims, [entry.attention_width, entry.hidden]);
      if (t.name === "blk.0.ffn_down.weight") assert.deepEqual(dims, [entry.ffn, entry.hidden]);
      expectedOffset = ((expectedOffset + BigInt(bytes) + 31n) / 32n) * 32n;
    }
    assert.equal(tensorInfos.some((t) => t.name === "output.weight"), !entry.tied);
    checked++;
  }
}
console.log(`${checked} artifacts read by @huggingface/gguf: all keys, names, types, shapes and offsets as expected`);
