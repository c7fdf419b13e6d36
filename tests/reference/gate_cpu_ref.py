"""Gate: `kipp logits --backend cpu-ref` against the NumPy oracle on one synthetic checkpoint.

A seeded random prompt of --length ids; every position's full logit row must have the oracle's
argmax and an NMSE of at most 5e-5 (DESIGN.md, "Numerical contracts").
"""
import argparse
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

parser = argparse.ArgumentParser()
parser.add_argument("--kipp", required=True)
parser.add_argument("--model", required=True, help="the Kipp artifact")
parser.add_argument("--source", required=True, help="the HF source directory it was converted from")
parser.add_argument("--length", type=int, required=True)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--work", required=True)
args = parser.parse_args()

os.makedirs(args.work, exist_ok=True)
rng = random.Random(args.seed * 1000 + args.length)
ids = ",".join(str(rng.randrange(151643)) for _ in range(args.length))  # ordinary vocabulary ids
kipp_out = os.path.join(args.work, "kipp.f32")
oracle_out = os.path.join(args.work, "oracle.f32")
subprocess.run([args.kipp, "logits", "--model", args.model, "--ids", ids, "--all-positions", "--backend", "cpu-ref",
                "--out", kipp_out], check=True)
subprocess.run([sys.executable, os.path.join(HERE, "qwen3_reference.py"), "--source", args.source, "--ids", ids,
                "--out", oracle_out], check=True)
result = subprocess.run([sys.executable, os.path.join(HERE, "compare_logits.py"), kipp_out, oracle_out,
                         "--vocab", "151936", "--max-nmse", "5e-5"])
sys.exit(result.returncode)
