#!/usr/bin/env python3
"""Structured-output benchmark: what a JSON Schema costs per token, in Kipp and in llama.cpp.

For each schema (a flat object, a nested schema with $ref recursion, a large enum) and once
without one, on the same artifact, greedy, from the same prompt:
  - Kipp: `kipp generate --json` decode tok/s and the constraint's time per token (finding the
    allowed set and taking the token: median, p99), and `kipp grammar --json` compile time;
  - llama.cpp (when LLAMA_COMPLETION is given): `llama-completion --json-schema` decode tok/s and
    its sampling time per token (the grammar sampler runs inside sampling), from its own report.
Each figure is the median of --reps runs with the range. Speeds on shared 2-core machines are
noisy: read the ratios (with / without a schema) measured in the same run.

  bench/structured_bench.py --kipp build/src/kipp --model M.gguf [--llama-completion BIN] [-n 128]
"""
import argparse
import json
import os
import re
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = {name: os.path.join(HERE, "..", "tests", "grammar", "schemas", name + ".json")
           for name in ("flat_object", "nested_ref", "large_enum")}
PROMPT = "Here is the record as JSON:"


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def kipp_run(args, schema):
    command = [args.kipp, "generate", "--model", args.model, "--prompt", PROMPT, "--temperature", "0", "-n",
               str(args.n), "--threads", str(args.threads), "--json"]
    if schema:
        command += ["--json-schema", schema]
    out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    t = out["timings"]
    return t["decode_tokens_per_second"], t["constraint_seconds"], out["finish_reason"]


def kipp_compile_seconds(args, schema):
    out = subprocess.run([args.kipp, "grammar", "--json-schema", schema, "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["compile_seconds"]


def llama_run(args, schema):
    command = [args.llama_completion, "-m", args.model, "-p", PROMPT, "-n", str(args.n), "--temp", "0", "-t",
               str(args.threads), "-c", "1024", "-no-cnv", "--no-warmup"]
    if schema:
        command += ["--json-schema", open(schema).read()]
    result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    log = result.stderr
    sampling = re.search(r"sampling time =\s*([\d.]+) ms", log)
    decode = re.search(r"eval time =\s*([\d.]+) ms /\s*(\d+) runs", log.split("prompt eval time")[-1])
    if result.returncode != 0 or not sampling or not decode:
        raise RuntimeError(f"llama-completion failed ({result.returncode}):\n{log[-2000:]}")
    # Its sampling time covers every sampled token: one after the prompt and one per decode run.
    runs = int(decode.group(2))
    sampling_per_token = float(sampling.group(1)) / 1e3 / (runs + 1)
    # Decode counts the whole step, as Kipp's does: the forward pass and the sampling (where the
    # grammar runs).
    eval_per_token = float(decode.group(1)) / 1e3 / runs
    return 1 / (eval_per_token + sampling_per_token), sampling_per_token


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--llama-completion")
    parser.add_argument("-n", type=int, default=128)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    report = {"model": args.model, "n": args.n, "reps": args.reps, "threads": args.threads, "runs": {}}
    for name, schema in [("none", None), *SCHEMAS.items()]:
        decode, median, p99, tokens = [], [], [], []
        for _ in range(args.reps):
            tok_s, constraint, finish = kipp_run(args, schema)
            decode.append(tok_s)
            if constraint:
                median.append(constraint["median"])
                p99.append(constraint["p99"])
                tokens.append(constraint["tokens"])
        entry = {"kipp_decode_tokens_per_second": spread(decode), "finish": finish}
        if schema:
            entry["kipp_mask_seconds_median"] = spread(median)
            entry["kipp_mask_seconds_p99"] = spread(p99)
            entry["kipp_constrained_tokens"] = tokens[0]
            entry["kipp_compile_seconds"] = spread([kipp_compile_seconds(args, schema) for _ in range(args.reps)])
        if args.llama_completion:
            runs = [llama_run(args, schema) for _ in range(args.reps)]
            entry["llama_decode_tokens_per_second"] = spread([r[0] for r in runs])
            entry["llama_sampling_seconds_per_token"] = spread([r[1] for r in runs])
        report["runs"][name] = entry
        print(f"{name}: {json.dumps(entry)}", flush=True)
    base = report["runs"]["none"]
    for name in SCHEMAS:
        entry = report["runs"][name]
        entry["kipp_decode_ratio"] = (entry["kipp_decode_tokens_per_second"]["median"] /
                                      base["kipp_decode_tokens_per_second"]["median"])
        if args.llama_completion:
            entry["llama_decode_ratio"] = (entry["llama_decode_tokens_per_second"]["median"] /
                                           base["llama_decode_tokens_per_second"]["median"])
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
