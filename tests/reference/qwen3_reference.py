#!/usr/bin/python3
"""Independent NumPy reference ("oracle") for Qwen3 checkpoints, dense and mixture-of-experts.

Reads a Hugging Face Qwen3 source directory (config.json plus BF16 safetensors, single
file or sharded via model.safetensors.index.json), runs the forward pass in float64 for
every prompt position and writes raw little-endian float32 logits, row-major
[rows][vocab_size].  K (after q/k-norm and RoPE) and V are rounded to BF16 (round to
nearest, ties to even) before attention, as Kipp's KV cache stores them (docs/MODELS.md,
"The KV cache"); with --kv-cache q8_0 they are rounded as Kipp's Q8_0 cache stores them
instead (each 32-value run against the FP16-rounded scale of its largest magnitude).

    qwen3_reference.py --source DIR --ids 1,2,3 --out FILE.f32 [--last N] [--kv-cache q8_0] [--verbose]
                       [--intermediates DIR]
    qwen3_reference.py --source DIR --self-check

--intermediates writes every named step of the forward pass (STEPS, the names and order of
Kipp's src/backend/forward_steps.h) as `kipp logits --dump-steps` does, for
first_divergence.py.

A mixture-of-experts checkpoint (model_type qwen3_moe) replaces each layer's MLP by
transformers' sparse block: router logits, their softmax over every expert, the top
num_experts_per_tok probabilities renormalised (norm_topk_prob), and the weighted sum of
those experts' SwiGLU outputs. --routing FILE writes, per layer and position, the chosen
experts, their weights and the routing margin ln(p_k / p_k+1) between the k-th and (k+1)-th
probabilities, by which a near-tie is judged (the review's point 5).

Stdlib + NumPy only.  Weights are kept in float32 (exact for BF16); all arithmetic is
float64.
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np


# The named intermediates, in the order a token meets them (src/backend/forward_steps.h).
STEPS = ("embedding", "attn_norm", "q_rope", "k_rope", "attention", "attn_residual",
         "ffn_norm", "experts", "ffn_out", "residual", "final_norm", "logits")
LAYER_STEPS = frozenset(STEPS[1:10])


# ----------------------------------------------------------------------------- safetensors

def _read_header(path):
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: too short for a safetensors header")
        (n,) = struct.unpack("<Q", raw)
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return header, 8 + n


def _decode(raw, dtype):
    if dtype == "BF16":
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32)
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    raise ValueError(f"unsupported safetensors dtype {dtype}")


class Weights:
    """Lazy tensor loader over one or more safetensors files; tensors come back float32."""

    def __init__(self, source):
        index = os.path.join(source, "model.safetensors.index.json")
        single = os.path.join(source, "model.safetensors")
        if os.path.exists(index):
            with open(index) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        elif os.path.exists(single):
            files = ["model.safetensors"]
        else:
            raise FileNotFoundError(f"{source}: no model.safetensors or model.safetensors.index.json")
        self.where = {}  # name -> (path, data_start, info)
        for fn in files:
            path = os.path.join(source, fn)
            header, start = _read_header(path)
            for name, info in header.items():
                self.where[name] = (path, start, info)

    def __contains__(self, name):
        return name in self.where

    def get(self, name):
        if name not in self.where:
            raise KeyError(f"tensor {name} not found in checkpoint")
        path, start, info = self.where[name]
        b, e = info["data_offsets"]
        with open(path, "rb") as f:
            f.seek(start + b)
            raw = f.read(e - b)
        if len(raw) != e - b:
            raise ValueError(f"{path}: truncated data for {name}")
        return _decode(raw, info["dtype"]).reshape(info["shape"])


# ----------------------------------------------------------------------------- numerics

def round_bf16(x):
    """Round to BF16 (nearest, ties to even) via float32, returned as float64.

    The value is first rounded to float32 (what a float32 engine holds), then the low 16
    bits are rounded away with round-half-to-even on the bit pattern.
    """
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    lsb = (b >> 16) & 1
    r = ((b + 0x7FFF + lsb) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


def round_q8_0(x):
    """Round to Q8_0 blocks along the last axis (a multiple of 32), returned as float64.

    Per block of 32 float32 values: scale = FP16(max |x| / 127), q = x * (1 / scale) rounded
    to nearest (ties to even) and clamped to [-127, 127], value = scale * q: the rule Kipp's
    weight and KV quantizer follows, in float32 steps.
    """
    x = np.asarray(x, dtype=np.float32)
    blocks = x.reshape(*x.shape[:-1], x.shape[-1] // 32, 32)
    amax = np.max(np.abs(blocks), axis=-1, keepdims=True)
    scale = (amax / np.float32(127)).astype(np.float16).astype(np.float32)
    with np.errstate(divide="ignore"):
        inverse = np.where(scale != 0, np.float32(1) / scale, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint(blocks * inverse), -127, 127).astype(np.float32)
    return (scale * q).reshape(x.shape).astype(np.float64)


KV_ROUNDING = {"bf16": round_bf16, "q8_0": round_q8_0}


def rms_norm(x, w, eps):
    """RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * w."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, positions, theta):
    """NeoX-style rotary embedding. x: [T, heads, head_dim]; pairs (i, i + head_dim/2)."""
    d = x.shape[-1]
    half = d // 2
    inv_freq = theta ** (-2.0 * np.arange(half, dtype=np.float64) / d)
    ang = positions[:, None].astype(np.float64) * inv_freq[None, :]  # [T, half]
    cos = np.cos(ang)[:, None, :]
    sin = np.sin(ang)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def silu(g):
    return g / (1.0 + np.exp(-g))


def linear(x, w):
    """x [T, in] float64 @ w [out, in]^T -> [T, out] float64."""
    return x @ w.astype(np.float64).T


# ----------------------------------------------------------------------------- model

class Qwen3Reference:
    def __init__(self, source, kv_cache="bf16"):
        self.round_kv = KV_ROUNDING[kv_cache]
        with open(os.path.join(source, "config.json")) as f:
            cfg = json.load(f)
        self.cfg = cfg
        self.hidden = cfg["hidden_size"]
        self.n_layers = cfg["num_hidden_layers"]
        self.n_heads = cfg["num_attention_heads"]
        self.n_kv = cfg.get("num_key_value_heads", self.n_heads)
        self.head_dim = cfg.get("head_dim") or self.hidden // self.n_heads
        self.eps = cfg["rms_norm_eps"]
        self.theta = cfg.get("rope_theta", 10000.0)
        self.vocab = cfg["vocab_size"]
        if self.n_heads % self.n_kv:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        self.w = Weights(source)
        # Qwen3-Embedding checkpoints are saved from transformers' Qwen3Model: their tensor names
        # have no "model." prefix, and they have no head.
        self.prefix = "model." if "model.embed_tokens.weight" in self.w else ""
        self.embed = self.w.get(self.prefix + "embed_tokens.weight")
        if self.embed.shape != (self.vocab, self.hidden):
            raise ValueError(f"embedding shape {self.embed.shape} != ({self.vocab}, {self.hidden})")
        # transformers' semantics: tie_word_embeddings (default true) makes the embedding the head,
        # and an lm_head.weight stored anyway (the published Qwen3-0.6B and -1.7B carry one) is
        # never read.
        self.tied = cfg.get("tie_word_embeddings", True)
        if self.tied:
            self.lm_head = self.embed
        elif "lm_head.weight" in self.w:
            self.lm_head = self.w.get("lm_head.weight")
        else:
            self.lm_head = None  # an embedding checkpoint (Qwen3-Embedding-8B): hidden states only
        self.moe = cfg.get("model_type") == "qwen3_moe"
        if self.moe:
            self.n_experts = cfg["num_experts"]
            self.top_k = cfg["num_experts_per_tok"]
            if cfg.get("norm_topk_prob") is not True or cfg.get("decoder_sparse_step") != 1 \
                    or cfg.get("mlp_only_layers"):
                raise ValueError("only the published Qwen3 MoE block is modelled: norm_topk_prob true, "
                                 "decoder_sparse_step 1, no mlp_only_layers")
        self.routing = []  # per forward: (layer, position, experts, weights, gap)
        self.layers = [self._load_layer(i) for i in range(self.n_layers)]
        self.final_norm = self.w.get(self.prefix + "norm.weight").astype(np.float64)

    def _load_layer(self, i):
        p = f"{self.prefix}layers.{i}."
        names = {
            "in_norm": "input_layernorm.weight",
            "q": "self_attn.q_proj.weight",
            "k": "self_attn.k_proj.weight",
            "v": "self_attn.v_proj.weight",
            "q_norm": "self_attn.q_norm.weight",
            "k_norm": "self_attn.k_norm.weight",
            "o": "self_attn.o_proj.weight",
            "post_norm": "post_attention_layernorm.weight",
        }
        if not self.moe:
            names.update(gate="mlp.gate_proj.weight", up="mlp.up_proj.weight", down="mlp.down_proj.weight")
            return {k: self.w.get(p + n) for k, n in names.items()}
        names["router"] = "mlp.gate.weight"
        layer = {k: self.w.get(p + n) for k, n in names.items()}
        # The experts as the hub stores them, one tensor per expert and projection.
        for projection in ("gate", "up", "down"):
            layer[projection] = [self.w.get(f"{p}mlp.experts.{e}.{projection}_proj.weight")
                                 for e in range(self.n_experts)]
        return layer

    def _experts(self, x, L, layer, note):
        """The sparse MoE block of the normed rows x: [T, hidden]."""
        logits = linear(x, L["router"])
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        k = self.top_k
        order = np.argsort(-p, axis=1, kind="stable")  # largest first; equal ones by lower id
        out = np.zeros_like(x)
        choice = np.empty((x.shape[0], 2 * k + 1))
        for t in range(x.shape[0]):
            chosen = order[t, :k]
            weights = p[t, chosen] / p[t, chosen].sum()
            # The routing margin, as Kipp records it: ln(p_k / p_k+1), the logit gap.
            margin = logits[t, order[t, k - 1]] - logits[t, order[t, k]] if k < self.n_experts else np.inf
            self.routing.append((layer, t, chosen.tolist(), weights.tolist(), float(margin)))
            choice[t] = np.concatenate([chosen, weights, [margin]])
            for e, w in zip(chosen, weights):
                h = silu(linear(x[t:t + 1], L["gate"][e])) * linear(x[t:t + 1], L["up"][e])
                out[t] += w * linear(h, L["down"][e])[0]
        note("experts", choice)
        return out

    def _attention(self, x, L, pos, note):
        """Attention of the normed rows x, before the output projection: [T, H * D]."""
        T = x.shape[0]
        H, KV, D = self.n_heads, self.n_kv, self.head_dim
        q = linear(x, L["q"]).reshape(T, H, D)
        k = linear(x, L["k"]).reshape(T, KV, D)
        v = linear(x, L["v"]).reshape(T, KV, D)
        q = rope(rms_norm(q, L["q_norm"].astype(np.float64), self.eps), pos, self.theta)
        k = rope(rms_norm(k, L["k_norm"].astype(np.float64), self.eps), pos, self.theta)
        note("q_rope", q.reshape(T, H * D))
        note("k_rope", k.reshape(T, KV * D))
        k = self.round_kv(k)  # as the KV cache stores them
        v = self.round_kv(v)
        group = H // KV
        mask = np.triu(np.ones((T, T), dtype=bool), k=1)  # True above the diagonal: future
        out = np.empty((T, H, D))
        scale = 1.0 / np.sqrt(D)
        for h in range(H):
            kh, vh = k[:, h // group, :], v[:, h // group, :]
            s = (q[:, h, :] @ kh.T) * scale  # [T, T]
            s[mask] = -np.inf
            s -= s.max(axis=1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(axis=1, keepdims=True)
            out[:, h, :] = p @ vh
        out = out.reshape(T, H * D)
        note("attention", out)
        return out

    def forward(self, ids, last=None, record=None):
        """Return float64 logits [rows, vocab]; rows = all positions or the last `last`.

        record(step, layer, rows), if given, receives every named step (STEPS) for every
        position (logits: the rows returned); layer is None outside the layers."""
        if self.lm_head is None:
            raise ValueError("this checkpoint has no output head (tie_word_embeddings false, no lm_head.weight)")
        h = self.final_hidden(ids, record)
        if last is not None:
            h = h[-last:]
        note = record or (lambda step, layer, rows: None)
        logits = np.empty((h.shape[0], self.vocab))
        block = 16384  # bound the float64 copy of the head to ~block*hidden*8 bytes
        for b in range(0, self.vocab, block):
            logits[:, b:b + block] = linear(h, self.lm_head[b:b + block])
        note("logits", None, logits)
        return logits

    def final_hidden(self, ids, record=None):
        """Return the float64 final-normed hidden states [positions, hidden]: what an embedding
        pools (its last row) and what the head multiplies."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError("need at least one token id")
        bad = ids[(ids < 0) | (ids >= self.vocab)]
        if bad.size:
            raise ValueError(f"token id {int(bad[0])} out of range [0, {self.vocab})")
        note = record or (lambda step, layer, rows: None)
        self.routing = []
        pos = np.arange(ids.size)
        h = self.embed[ids].astype(np.float64)
        note("embedding", None, h)
        for i, L in enumerate(self.layers):
            x = rms_norm(h, L["in_norm"].astype(np.float64), self.eps)
            note("attn_norm", i, x)
            attention = self._attention(x, L, pos, lambda step, rows: note(step, i, rows))
            h = h + linear(attention, L["o"])
            note("attn_residual", i, h)
            x = rms_norm(h, L["post_norm"].astype(np.float64), self.eps)
            note("ffn_norm", i, x)
            if self.moe:
                f = self._experts(x, L, i, lambda step, rows: note(step, i, rows))
            else:
                f = linear(silu(linear(x, L["gate"])) * linear(x, L["up"]), L["down"])
            note("ffn_out", i, f)
            h = h + f
            note("residual", i, h)
        h = rms_norm(h, self.final_norm, self.eps)
        note("final_norm", None, h)
        return h


def write_steps(directory, steps, ids):
    """The layout of `kipp logits --dump-steps`: one float32 file per (step, layer), rows in
    position order, and steps.json listing them. steps: (step, layer) -> rows ending at the
    last position."""
    os.makedirs(directory, exist_ok=True)
    listed = []
    for (step, layer), rows in steps.items():
        name = f"layer{layer:03d}.{step}.f32" if layer is not None else f"{step}.f32"
        rows.astype("<f4").tofile(os.path.join(directory, name))
        entry = {"step": step, "file": name, "width": int(rows.shape[1]),
                 "positions": list(range(len(ids) - rows.shape[0], len(ids)))}
        if layer is not None:
            entry["layer"] = layer
        listed.append(entry)
    manifest = {"format": "kipp-forward-steps", "version": 1, "producer": "numpy oracle (float64)",
                "step_order": list(STEPS), "ids": list(ids), "steps": listed}
    with open(os.path.join(directory, "steps.json"), "w") as f:
        json.dump(manifest, f, indent=1)


# ----------------------------------------------------------------------------- self-check

def self_check(model, rng):
    ok = True

    def report(name, passed, detail=""):
        nonlocal ok
        ok &= bool(passed)
        print(f"{'PASS' if passed else 'FAIL'} {name} {detail}", file=sys.stderr)

    # BF16 rounding: exact values, ties to even, carry into the exponent.
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -(1 + 3 * 2**-8), 2 - 2**-9, 0.0])
    want = np.array([1.0, 1.0, 1 + 2**-6, 1 + 2**-7, -(1 + 2**-6), 2.0, 0.0])
    report("bf16-rounding", np.array_equal(round_bf16(x), want))

    # Q8_0 rounding: the largest magnitude maps to 127 exactly, ties go to even, a zero block stays zero.
    block = np.zeros(64)
    block[:4] = [127.0, 2.5, -3.5, 0.5]
    q = round_q8_0(block)
    report("q8_0-rounding", np.array_equal(q[:4], [127.0, 2.0, -4.0, 0.0]) and not q[32:].any())

    # RoPE at position 0 is the identity and preserves norms elsewhere.
    v = rng.standard_normal((3, 2, model.head_dim))
    r = rope(v, np.array([0, 5, 1000]), model.theta)
    report("rope", np.allclose(r[0], v[0]) and np.allclose(np.linalg.norm(r, axis=-1), np.linalg.norm(v, axis=-1)))

    # Causality: appending tokens does not change earlier rows.
    n, extra = 7, 9
    ids = rng.integers(0, model.vocab, n + extra)
    a = model.forward(ids[:n])
    b = model.forward(ids)[:n]
    d = np.max(np.abs(a - b)) / np.max(np.abs(a))
    report("causal", np.isfinite(b).all() and d < 1e-12, f"max rel diff {d:.3g}")

    # Last-N rows equal the tail of all rows.
    c = model.forward(ids, last=3)
    full = model.forward(ids)
    report("last-n", np.max(np.abs(c - full[-3:])) <= 1e-12 * np.max(np.abs(full)))

    # Logits are not flat: report top-1/top-2 margins relative to the logit spread.
    top2 = np.sort(full, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    print(f"     margins top1-top2: min {margin.min():.4g} median {np.median(margin):.4g}; "
          f"logit std {full.std():.4g}", file=sys.stderr)
    report("finite", np.isfinite(full).all())
    return ok


# ----------------------------------------------------------------------------- CLI

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="Hugging Face Qwen3 source directory")
    ap.add_argument("--ids", help="comma-separated token ids")
    ap.add_argument("--out", help="output file: raw little-endian float32 [rows][vocab]")
    ap.add_argument("--last", type=int, help="write only the last N rows")
    ap.add_argument("--intermediates", metavar="DIR",
                    help="also write every named step of every position into DIR, as "
                         "`kipp logits --dump-steps` does")
    ap.add_argument("--kv-cache", choices=sorted(KV_ROUNDING), default="bf16",
                    help="how K and V are rounded before attention, as Kipp's --kv-cache")
    ap.add_argument("--routing", metavar="FILE",
                    help="MoE checkpoints: also write each layer's and position's chosen experts, "
                         "their weights and the routing margin ln(p_k / p_k+1) as JSON")
    ap.add_argument("--verbose", action="store_true", help="print the argmax of every row to stderr")
    ap.add_argument("--self-check", action="store_true", help="run internal consistency checks")
    args = ap.parse_args(argv)

    t0 = time.time()
    model = Qwen3Reference(args.source, args.kv_cache)
    if args.self_check:
        ok = self_check(model, np.random.default_rng(1234))
        print(f"self-check {'passed' if ok else 'FAILED'} ({time.time() - t0:.1f}s)", file=sys.stderr)
        return 0 if ok else 1

    if not args.ids or not args.out:
        ap.error("--ids and --out are required (or use --self-check)")
    try:
        ids = [int(t) for t in args.ids.split(",") if t.strip() != ""]
    except ValueError:
        ap.error(f"--ids must be comma-separated integers, got {args.ids!r}")
    if args.last is not None and not 1 <= args.last <= len(ids):
        ap.error(f"--last must be between 1 and the number of ids ({len(ids)})")
    steps = {}

    def record(step, layer, rows):
        assert step in STEPS and (layer is not None) == (step in LAYER_STEPS), (step, layer)
        steps[(step, layer)] = rows.copy()

    try:
        logits = model.forward(ids, last=args.last, record=record if args.intermediates else None)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    logits.astype("<f4").tofile(args.out)
    if args.routing:
        if not model.moe:
            ap.error("--routing needs a mixture-of-experts checkpoint")
        with open(args.routing, "w") as f:
            json.dump({"top_k": model.top_k, "routing": [
                {"layer": layer, "position": t, "experts": experts, "weights": weights, "margin": margin}
                for layer, t, experts, weights, margin in model.routing]}, f, indent=1)
    if args.intermediates:
        write_steps(args.intermediates, steps, ids)
    if args.verbose:
        first = len(ids) - logits.shape[0]
        for r, row in enumerate(logits):
            print(f"row {first + r}: argmax {int(np.argmax(row))} logit {row.max():.6g}", file=sys.stderr)
        print(f"{len(ids)} tokens, {logits.shape[0]} rows, tied={model.tied}, "
              f"{time.time() - t0:.2f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
