"""Gate: `kipp logits` on one artifact and backend against a reference, at every position.

The reference is either the independent NumPy oracle run on the HF source directory
(--oracle-source) or `kipp logits` on another artifact and/or backend (--reference-model,
--reference-backend). A seeded random prompt of --length ordinary vocabulary ids; every
position's full logit row is compared by compare_logits.py with the given bounds.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

parser = argparse.ArgumentParser()
parser.add_argument("--kipp", required=True)
parser.add_argument("--model", required=True, help="the Kipp artifact under test")
parser.add_argument("--backend", default="cpu-ref")
parser.add_argument("--oracle-source", help="HF source directory for the NumPy oracle")
parser.add_argument("--reference-model", help="a Kipp artifact evaluated as the reference")
parser.add_argument("--reference-backend", default="cpu-ref")
parser.add_argument("--kv-cache", default="bf16", help="the KV cache of both sides (kipp and the oracle)")
parser.add_argument("--reference-kv-cache", help="the reference's KV cache when it differs (a Kipp reference)")
parser.add_argument("--length", type=int, required=True)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--max-nmse", required=True)
parser.add_argument("--min-argmax-agreement", default="1")
parser.add_argument("--work", required=True)
args = parser.parse_args()
if (args.oracle_source is None) == (args.reference_model is None):
    parser.error("give exactly one of --oracle-source and --reference-model")

os.makedirs(args.work, exist_ok=True)
rng = random.Random(args.seed * 1000 + args.length)
ids = ",".join(str(rng.randrange(151643)) for _ in range(args.length))


def kipp_logits(model, backend, kv_cache, out):
    subprocess.run([args.kipp, "logits", "--model", model, "--ids", ids, "--all-positions", "--backend", backend,
                    "--kv-cache", kv_cache, "--out", out], check=True)


test_out = os.path.join(args.work, "test.f32")
reference_out = os.path.join(args.work, "reference.f32")
try:
    kipp_logits(args.model, args.backend, args.kv_cache, test_out)
    if args.oracle_source:
        subprocess.run([sys.executable, os.path.join(HERE, "qwen3_reference.py"), "--source", args.oracle_source,
                        "--ids", ids, "--kv-cache", args.kv_cache, "--out", reference_out], check=True)
    else:
        kipp_logits(args.reference_model, args.reference_backend, args.reference_kv_cache or args.kv_cache,
                    reference_out)
    result = subprocess.run([sys.executable, os.path.join(HERE, "compare_logits.py"), test_out, reference_out,
                             "--vocab", "151936", "--max-nmse", args.max_nmse,
                             "--min-argmax-agreement", args.min_argmax_agreement])
finally:
    # Logits of every position over the whole vocabulary run to tens of MiB per gate; the
    # comparison has printed what a post-mortem needs.
    shutil.rmtree(args.work, ignore_errors=True)
sys.exit(result.returncode)
