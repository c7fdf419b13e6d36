#!/usr/bin/python3
"""Gate: every named intermediate of one backend against a reference, step by step.

    gate_steps.py --kipp KIPP --model GGUF --backend cpu (--reference-backend cpu-ref | --oracle-source DIR)
                  --length N --max-nmse X --work DIR [--kv-cache q8_0] [--plant STEP,LAYER,POSITION]

Both sides evaluate the same seeded prompt of ordinary vocabulary ids and dump their steps
(`kipp logits --dump-steps`, or the NumPy oracle's --intermediates); first_divergence.py must
find no row beyond the bound. With --plant, one element of the tested side's STEP at LAYER
(-1 for a step outside the layers) and POSITION is moved after the dump, and the tool must name
exactly that step, layer and position as the first divergence: the check that it can fail.
"""
import argparse
import io
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import first_divergence  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--kipp", required=True)
parser.add_argument("--model", required=True)
parser.add_argument("--backend", default="cpu")
parser.add_argument("--backend-flags", default="", help="more flags for the tested side, space-separated")
reference_side = parser.add_mutually_exclusive_group(required=True)
reference_side.add_argument("--reference-backend", help="a Kipp backend on the same artifact")
reference_side.add_argument("--oracle-source", help="HF source directory for the NumPy oracle")
parser.add_argument("--kv-cache", default="bf16")
parser.add_argument("--length", type=int, required=True)
parser.add_argument("--max-nmse", type=float, required=True)
parser.add_argument("--plant", help="STEP,LAYER,POSITION to disturb in the tested dump")
parser.add_argument("--work", required=True)
args = parser.parse_args()

shutil.rmtree(args.work, ignore_errors=True)
os.makedirs(args.work)
rng = random.Random(7000 + args.length)
ids = ",".join(str(rng.randrange(151643)) for _ in range(args.length))
tested, reference = os.path.join(args.work, "tested"), os.path.join(args.work, "reference")


def dump(backend, directory, extra):
    subprocess.run([args.kipp, "logits", "--model", args.model, "--ids", ids, "--all-positions", "--backend", backend,
                    "--kv-cache", args.kv_cache, "--out", os.path.join(args.work, backend + ".f32"),
                    "--dump-steps", directory] + extra, check=True)


def plant(directory, step, layer, position):
    with open(os.path.join(directory, "steps.json")) as f:
        manifest = json.load(f)
    entry = next(e for e in manifest["steps"] if e["step"] == step and e.get("layer", -1) == layer)
    path = os.path.join(directory, entry["file"])
    rows = np.fromfile(path, dtype="<f4").reshape(len(entry["positions"]), entry["width"])
    row = rows[entry["positions"].index(position)]
    element = int(np.argmax(np.abs(row)))
    row[element] += np.linalg.norm(row)  # a row NMSE near 1, beyond any bound a gate uses
    rows.tofile(path)
    return element


dump(args.backend, tested, args.backend_flags.split())
if args.oracle_source:
    subprocess.run([sys.executable, os.path.join(HERE, "qwen3_reference.py"), "--source", args.oracle_source,
                    "--ids", ids, "--kv-cache", args.kv_cache, "--out", os.path.join(args.work, "oracle.f32"),
                    "--intermediates", reference], check=True)
else:
    dump(args.reference_backend, reference, [])



def verdict():
    report = io.StringIO()
    if not args.plant:
        status = first_divergence.compare(tested, reference, args.max_nmse, out=report)
        print(report.getvalue(), end="")
        return status
    step, layer, position = args.plant.split(",")
    element = plant(tested, step, int(layer), int(position))
    status = first_divergence.compare(tested, reference, args.max_nmse, out=report)
    print(report.getvalue(), end="")
    where = step if int(layer) < 0 else f"layer {layer} {step}"
    expected = f"first divergence: {where}, position {position}, element {element}:"
    if status != 1 or expected not in report.getvalue():
        print(f"FAIL: expected a line starting {expected!r}")
        return 1
    print("PASS: the planted divergence is the first one named")
    return 0


status = verdict()
if status == 0:
    shutil.rmtree(args.work, ignore_errors=True)  # tens of MiB of logits; kept when something failed
sys.exit(status)
