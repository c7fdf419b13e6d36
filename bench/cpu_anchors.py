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

What the figures stand on is printed before the table: the processor (its model name and the
instruction sets that decide the kernels: AVX2, AVX-512 with VNNI and BF16, AMX), the kernel set
Kipp chose for each file, and each anchor's build as its CMakeCache.txt (beside bin/) records it:
GGML_NATIVE, the instruction-set options and the compiler flags. An anchor built without
GGML_NATIVE, or with an instruction switched off (-mno-...) that --crashes-natively does not name,
lacks the processor's native instructions: its figures are marked, and the ratio column leaves it
out (no goal is judged against it). --crashes-natively NAME (e.g. amx-tile) records that a native
build of the anchors stops on that instruction here, so a build with only it switched off still
counts as native.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def processor():
    """The model name and the instruction sets that decide kernels, from /proc/cpuinfo."""
    name, flags = "unknown processor", set()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and name == "unknown processor":
                    name = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    wanted = ["avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"]
    return name, [f for f in wanted if f in flags]


def anchor_build(binary):
    """What the anchor's CMakeCache.txt (in the directory above bin/) says about its instructions."""
    path = binary.split()[0]
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))), "CMakeCache.txt")
    entries = {}
    try:
        with open(cache) as text:
            for line in text:
                match = re.match(r"^([A-Z0-9_]+):[A-Z]+=(.*)$", line.strip())
                if match:
                    entries[match.group(1)] = match.group(2)
    except OSError:
        return None
    options = {k: v for k, v in entries.items()
               if re.match(r"^GGML_(NATIVE|AVX|AVX2|AVX512\w*|AMX\w*|FMA|F16C|BMI2|AVX_VNNI)$", k)}
    flags = []  # the C and C++ flags, each once
    for flag in " ".join(entries.get(k, "") for k in ("CMAKE_C_FLAGS", "CMAKE_CXX_FLAGS")).split():
        if flag not in flags:
            flags.append(flag)
    return {"cache": cache, "options": options, "flags": flags}


def switched_off(build):
    """The instructions a build switched off with -mno-..., in order."""
    return [flag[5:] for flag in build["flags"] if flag.startswith("-mno-")]


def is_native(build, crashes):
    if build is None or build["options"].get("GGML_NATIVE", "OFF").upper() not in ("ON", "1", "TRUE", "YES"):
        return False
    return all(name in crashes for name in switched_off(build))


def kipp_figures(args, model, flags, figure):
    command = [args.kipp, "bench", "--model", model, "--threads", str(args.threads), "--reps", "1", "--json", *flags]
    if figure == "pp512":
        command += ["-p", "512", "-n", "1"]
    elif figure == "tg128":
        command += ["-p", "1", "-n", "128"]
    else:
        command += ["-p", "1", "-n", "32", "--depth", str(args.depth)]
    out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    kernel_sets[" ".join([model, *flags])] = out.get("backend", "?")
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


kernel_sets = {}  # model and Kipp flags -> the backend Kipp described ("cpu (amx kernels, 2 threads)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--anchor", action="append", default=[],
                        help="NAME=PATH to a llama-bench, optionally followed by its flags (\"ik-rtr=PATH -rtr 1\")")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--depth", type=int, default=0, help="also tg32 after this many cached tokens")
    parser.add_argument("--figures", default="pp512,tg128", help="comma-separated: pp512, tg128 (empty: only --depth)")
    parser.add_argument("--crashes-natively", action="append", default=[],
                        help="an instruction (as in -mno-NAME) a native anchor build stops on here")
    parser.add_argument("models", nargs="+", help="FILE.gguf[:kipp flags]")
    args = parser.parse_args()
    anchors = [tuple(a.split("=", 1)) for a in args.anchor]
    builds = {name: anchor_build(binary) for name, binary in anchors}
    native = {name: is_native(builds[name], args.crashes_natively) for name, _ in anchors}
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

    name, instructions = processor()
    print(f"processor: {name} ({', '.join(instructions) or 'no AVX2'}), {args.threads} threads, {args.rounds} rounds")
    for spec, backend in kernel_sets.items():
        print(f"kipp on {spec.split('/')[-1]}: {backend}")
    for anchor, binary in anchors:
        build = builds[anchor]
        if build is None:
            print(f"{anchor}: {binary}: no CMakeCache.txt beside its bin/, so its build is unknown: NOT NATIVE")
            continue
        options = ", ".join(f"{k}={v}" for k, v in sorted(build["options"].items()))
        off = switched_off(build)
        state = "native" if native[anchor] else "NOT NATIVE (no goal is judged against it)"
        if native[anchor] and off:
            state += f" without {', '.join(off)} (stops natively here: --crashes-natively)"
        print(f"{anchor}: {binary}: {options}; flags '{' '.join(build['flags'])}': {state}")
    print()
    names = ["kipp"] + [name + ("" if native[name] else " (not native)") for name, _ in anchors]
    print("| artifact | figure | " + " | ".join(names) + " | Kipp ÷ best native anchor |")
    print("|---|---|" + "---:|" * (len(names) + 1))
    for spec in args.models:
        for figure in figures:
            cells, medians = [], {}
            for name in ["kipp"] + [name for name, _ in anchors]:
                text, median = cell(samples.get((spec, figure, name), []))
                cells.append(text)
                medians[name] = median
            anchor_medians = [medians[n] for n, _ in anchors if medians[n] and native[n]]
            ratio = f"{medians['kipp'] / max(anchor_medians):.2f}" if anchor_medians else "—"
            print(f"| {spec.split('/')[-1]} | {figure} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
