#!/usr/bin/env python3
"""Kipp's CPU figures beside llama.cpp's and ik_llama.cpp's on the very same GGUF files.

Runs `kipp bench` and each anchor's `llama-bench` (built by you, outside the repository) on
every artifact, for every figure, engines interleaved within each round so that the VM's
bandwidth swings hit them alike, and prints a markdown table of medians (with the range over
rounds) and Kipp's ratio to the best anchor of each figure.

    python3 bench/cpu_anchors.py --kipp build/src/kipp \\
        --anchor llama.cpp=/path/llama.cpp/build/bin/llama-bench \\
        --anchor ik_llama.cpp=/path/ik_llama.cpp/build/bin/llama-bench \\
        --anchor "ik_llama.cpp -rtr=/path/ik_llama.cpp/build/bin/llama-bench -rtr 1" \\
        --threads 2 --rounds 3 [--depth 4096] FILE.gguf [FILE.gguf:--int8-activations ...]

An anchor's flags go after its path: `--anchor "llama.cpp kv-q8_0=PATH -ctk q8_0 -ctv q8_0 -fa 1"`
measures its 8-bit KV cache beside `FILE.gguf:--kv-cache q8_0`.

A FILE may carry extra `kipp bench` flags after a colon (they apply to Kipp only). Figures: pp512
(prefill of 512 tokens), tg128 (128 single-token steps from an empty context) and, with --depth D,
tg32 after D cached tokens. Kipp reports medians of its own repetitions and llama-bench means;
each round takes one sample of each.
"""
import argparse
import json
import statistics
import subprocess
import sys


def kipp_figures(args, model, flags, figure):
    command = [args.kipp, "bench", "--model", model, "--threads", str(args.threads), "--reps", "1", "--json", *flags]
    if figure == "pp512":
        command += ["-p", "512", "-n", "1"]
    elif figure == "tg128":
        command += ["-p", "1", "-n", "128"]
    else:
        command += ["-p", "1", "-n", "32", "--depth", str(args.depth)]
    out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    if figure == "pp512":
        return out["prefill_tokens_per_second"]["median"]
    if figure == "tg128":
        return out["decode_tokens_per_second"]["median"]
    return out["decode_at_depth_tokens_per_second"]["median"]


def anchor_figure(name, binary, args, model, figure):
    command = [*binary.split(), "-m", model, "-t", str(args.threads), "-r", "1", "-o", "json"]
    if figure == "pp512":
        command += ["-p", "512", "-n", "0"]
    elif figure == "tg128":
        command += ["-p", "0", "-n", "128"]
    elif name.startswith("ik"):
        command += ["-p", "0", "-n", "0", "-gp", f"{args.depth},32"]  # ik's tg after a prompt
    else:
        command += ["-p", "0", "-n", "32", "-d", str(args.depth)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        return None
    rows = json.loads(result.stdout)
    return rows[-1]["avg_ts"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--anchor", action="append", default=[],
                        help="NAME=PATH to a llama-bench, optionally followed by its flags (\"ik-rtr=PATH -rtr 1\")")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--depth", type=int, default=0, help="also tg32 after this many cached tokens")
    parser.add_argument("--figures", default="pp512,tg128", help="comma-separated: pp512, tg128 (empty: only --depth)")
    parser.add_argument("models", nargs="+", help="FILE.gguf[:kipp flags]")
    args = parser.parse_args()
    anchors = [tuple(a.split("=", 1)) for a in args.anchor]
    figures = [f for f in args.figures.split(",") if f] + ([f"tg32@{args.depth}"] if args.depth else [])

    samples = {}  # (model spec, figure, engine) -> [tok/s]
    for round_index in range(args.rounds):
        for spec in args.models:
            model, _, extra = spec.partition(":")
            flags = extra.split() if extra else []
            for figure in figures:
                samples.setdefault((spec, figure, "kipp"), []).append(kipp_figures(args, model, flags, figure))
                for name, binary in anchors:
                    value = anchor_figure(name, binary, args, model, figure)
                    if value is not None:
                        samples.setdefault((spec, figure, name), []).append(value)
        print(f"round {round_index + 1} of {args.rounds} done", file=sys.stderr)

    def cell(values):
        if not values:
            return "—", None
        median = statistics.median(values)
        return f"{median:.2f} ({min(values):.2f}–{max(values):.2f})", median

    names = ["kipp"] + [name for name, _ in anchors]
    print("| artifact | figure | " + " | ".join(names) + " | Kipp ÷ best anchor |")
    print("|---|---|" + "---:|" * (len(names) + 1))
    for spec in args.models:
        for figure in figures:
            cells, medians = [], {}
            for name in names:
                text, median = cell(samples.get((spec, figure, name), []))
                cells.append(text)
                medians[name] = median
            anchor_medians = [medians[n] for n, _ in anchors if medians[n]]
            ratio = f"{medians['kipp'] / max(anchor_medians):.2f}" if anchor_medians else "—"
            print(f"| {spec.split('/')[-1]} | {figure} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
