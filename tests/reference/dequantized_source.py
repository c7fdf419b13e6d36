#!/usr/bin/python3
"""A Kipp artifact's own weights as a Hugging Face source directory, for the NumPy oracle.

    dequantized_source.py --artifact A.gguf --source DIR --out DIR

Reads the GGUF file independently of Kipp (header, metadata, tensor directory), widens every
tensor to float32 (BF16 and F32 as stored; Q8_0 blocks as scale x q; Q4_1 blocks as scale x q +
min, with FP16 scale and min) and writes it under its Hugging Face name, each stack of experts
as one tensor per expert, with the source's config.json, as F32 safetensors shards. The oracle
run on that directory computes with exactly the values the artifact holds.

Before writing, it checks that the quantization is faithful: every stored value against the BF16
source value it came from (DIR's safetensors), within what its block's rule allows (derived in
faithful_bound below); a BF16 or F32 tensor must hold the source values exactly. A failure names
the tensor, the element and the bound. Exit status 0 when faithful and written, 1 otherwise.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from qwen3_reference import Weights  # noqa: E402

F32, F16, Q4_1, Q8_0, BF16 = 0, 1, 3, 8, 30
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def string(self):
        n = self.take("<Q")
        self.at += n
        return bytes(self.data[self.at - n:self.at]).decode("utf-8")

    def value(self, kind):
        if kind == 8:
            return self.string()
        if kind == 9:
            item, count = self.take("<I"), self.take("<Q")
            return [self.value(item) for _ in range(count)]
        return self.take(SCALARS[kind])


def read_gguf(path):
    data = np.memmap(path, dtype=np.uint8, mode="r")
    r = Reader(memoryview(data))
    if bytes(data[:4]) != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.at = 4
    r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    metadata = {}
    for _ in range(n_kv):
        key = r.string()
        metadata[key] = r.value(r.take("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        kind, offset = r.take("<I"), r.take("<Q")
        tensors.append((name, dims, kind, offset))
    alignment = metadata.get("general.alignment", 32)
    start = (r.at + alignment - 1) // alignment * alignment
    return metadata, [(name, dims, kind, data[start + offset:]) for name, dims, kind, offset in tensors]


def widen(kind, raw, count):
    """The first `count` values of a tensor's bytes as float32, with the blocks' scales."""
    if kind == F32:
        return np.frombuffer(raw[:4 * count], dtype="<f4").astype(np.float32), None
    if kind == BF16:
        return (np.frombuffer(raw[:2 * count], dtype="<u2").astype(np.uint32) << 16).view(np.float32), None
    blocks = count // 32
    if kind == Q8_0:
        record = np.frombuffer(raw[:34 * blocks], dtype=np.uint8).reshape(blocks, 34)
        scale = record[:, :2].copy().view("<f2").astype(np.float32)
        q = record[:, 2:].view(np.int8).astype(np.float32)
        return (scale * q).reshape(-1), (scale, None)
    if kind == Q4_1:
        record = np.frombuffer(raw[:20 * blocks], dtype=np.uint8).reshape(blocks, 20)
        scale = record[:, :2].copy().view("<f2").astype(np.float32)
        low = record[:, 2:4].copy().view("<f2").astype(np.float32)
        nibbles = record[:, 4:]
        q = np.concatenate([nibbles & 15, nibbles >> 4], axis=1).astype(np.float32)
        return (scale * q + low).reshape(-1), (scale, low)
    raise ValueError(f"tensor type {kind} is not one Kipp writes")


def faithful_bound(kind, source, scales):
    """Per element, how far a faithful block may put a value from its source.

    Q8_0: round(x / d) to the nearest level, d = FP16(amax / 127): half a step, and at the largest
    magnitude the clamp to 127 when FP16 rounded d down, which the half step covers (127 x d x 2^-11
    < d / 2). Q4_1: levels d q + m with m = FP16(min) and d = FP16((max - min) / 15): half a step,
    plus how far FP16 moved m from the block's minimum and 15 d from its range (the clamps at 0
    and 15 take up exactly those)."""
    blocks = source.reshape(-1, 32)
    if kind == Q8_0:
        bound = scales[0] / 2
    else:
        d, m = scales
        lo, hi = blocks.min(axis=1, keepdims=True), blocks.max(axis=1, keepdims=True)
        bound = d / 2 + np.abs(m - lo) + np.abs(15 * d - (hi - lo))
    slack = 1e-6 * np.abs(blocks).max(axis=1, keepdims=True) + 1e-30  # float32 arithmetic in the rule
    return np.broadcast_to(bound + slack, blocks.shape).reshape(-1)


def hf_names(gguf_name, dims, model_prefix):
    """The Hugging Face tensors a GGUF tensor holds: (name, rows, cols) each, in storage order.
    model_prefix: "model.", or "" for an embedding checkpoint saved without it."""
    parts = gguf_name.split(".")
    fixed = {"token_embd": model_prefix + "embed_tokens", "output_norm": model_prefix + "norm", "output": "lm_head"}
    if parts[0] in fixed:
        return [(fixed[parts[0]] + ".weight", dims[1] if len(dims) > 1 else 1, dims[0])]
    layer, kind = parts[1], parts[2]
    prefix = f"{model_prefix}layers.{layer}."
    names = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
             "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj",
             "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj", "ffn_gate_inp": "mlp.gate"}
    if kind in names:
        return [(prefix + names[kind] + ".weight", dims[1] if len(dims) > 1 else 1, dims[0])]
    projection = {"ffn_gate_exps": "gate_proj", "ffn_up_exps": "up_proj", "ffn_down_exps": "down_proj"}[kind]
    return [(f"{prefix}mlp.experts.{e}.{projection}.weight", dims[1], dims[0]) for e in range(dims[2])]


def write_shard(path, tensors):
    header, offset = {}, 0
    for name, values in tensors:
        header[name] = {"dtype": "F32", "shape": list(values.shape), "data_offsets": [offset, offset + values.nbytes]}
        offset += values.nbytes
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, values in tensors:
            f.write(values.astype("<f4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", required=True)
    ap.add_argument("--source", required=True, help="the BF16 source directory the artifact was converted from")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    _, tensors = read_gguf(args.artifact)
    source = Weights(args.source)
    model_prefix = "model." if "model.embed_tokens.weight" in source else ""
    os.makedirs(args.out, exist_ok=True)
    shutil.copy(os.path.join(args.source, "config.json"), os.path.join(args.out, "config.json"))
    weight_map, shard, shard_bytes, shards, worst = {}, [], 0, 0, {}

    def flush():
        nonlocal shard, shard_bytes, shards
        if not shard:
            return
        name = f"model-{shards + 1:05d}.safetensors"
        write_shard(os.path.join(args.out, name), shard)
        weight_map.update({tensor: name for tensor, _ in shard})
        shard, shard_bytes, shards = [], 0, shards + 1

    for gguf_name, dims, kind, raw in tensors:
        pieces = hf_names(gguf_name, dims, model_prefix)
        count = sum(rows * cols for _, rows, cols in pieces)
        values, scales = widen(kind, raw, count)
        at = 0
        for name, rows, cols in pieces:
            stored = values[at:at + rows * cols]
            src = source.get(name).reshape(-1)
            if scales is None:
                bad = np.flatnonzero(stored != src)
                if bad.size:
                    print(f"{gguf_name} ({name}): element {bad[0]} is {stored[bad[0]]!r}, the source holds "
                          f"{src[bad[0]]!r}: a {'BF16' if kind == BF16 else 'F32'} tensor must hold it exactly")
                    return 1
            else:
                blocks = slice(at // 32, (at + rows * cols) // 32)
                bound = faithful_bound(kind, src, tuple(None if s is None else s[blocks] for s in scales))
                error = np.abs(stored - src)
                over = np.flatnonzero(error > bound)
                if over.size:
                    i = over[0]
                    print(f"{gguf_name} ({name}): element {i} is {stored[i]!r} for source {src[i]!r}, "
                          f"{error[i]:.3g} from it, beyond the scheme's {bound[i]:.3g}")
                    return 1
                worst[kind] = max(worst.get(kind, 0.0), float(np.max(error / bound)))
            shard.append((name, stored.reshape(rows, cols) if rows > 1 else stored))
            shard_bytes += stored.nbytes
            at += rows * cols
            if shard_bytes > (256 << 20):
                flush()
    flush()
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    names = {Q8_0: "Q8_0", Q4_1: "Q4_1"}
    print("faithful: " + (", ".join(f"{names[k]} within {w:.3f} of its bound at worst" for k, w in worst.items())
                          or "every tensor exact"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
