"""Gate: `kipp logits` on one artifact and backend against a reference, at every position.

The reference is either the independent NumPy oracle run on the HF source directory
(--oracle-source) or `kipp logits` on another artifact and/or backend (--reference-model,
--reference-backend). A seeded random prompt of --length ordinary vocabulary ids; every
position's full logit row is compared by compare_logits.py with the given bounds.

The NMSE bound is either given (--max-nmse) or derived from a measurement (--max-nmse-fraction F
with --scheme-bf16-model): the error a quantized artifact's own scheme carries, the median row
NMSE of the reference (the quantized artifact on --reference-backend) against the BF16 artifact of
the same checkpoint on cpu-ref, times F. That is the contract of the fast backend on quantized
artifacts (docs/ARCHITECTURE.md): its own arithmetic may add at most a fraction of the error the
scheme already has.
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
parser.add_argument("--int8-activations", action="store_true", help="pass --int8-activations to the backend under test")
parser.add_argument("--oracle-source", help="HF source directory for the NumPy oracle")
parser.add_argument("--reference-model", help="a Kipp artifact evaluated as the reference")
parser.add_argument("--reference-backend", default="cpu-ref")
parser.add_argument("--length", type=int, required=True)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--max-nmse")
parser.add_argument("--max-nmse-fraction", type=float)
parser.add_argument("--scheme-bf16-model", help="the BF16 artifact the scheme error is measured against")
parser.add_argument("--min-argmax-agreement", default="1")
parser.add_argument("--decisive-margin", default="0")
parser.add_argument("--work", required=True)
args = parser.parse_args()
if (args.oracle_source is None) == (args.reference_model is None):
    parser.error("give exactly one of --oracle-source and --reference-model")
if (args.max_nmse is None) == (args.max_nmse_fraction is None):
    parser.error("give exactly one of --max-nmse and --max-nmse-fraction")
if args.max_nmse_fraction is not None and (args.scheme_bf16_model is None or args.reference_model is None):
    parser.error("--max-nmse-fraction needs --reference-model and --scheme-bf16-model")

os.makedirs(args.work, exist_ok=True)
rng = random.Random(args.seed * 1000 + args.length)
ids = ",".join(str(rng.randrange(151643)) for _ in range(args.length))


def kipp_logits(model, backend, out, flags=()):
    subprocess.run([args.kipp, "logits", "--model", model, "--ids", ids, "--all-positions", "--backend", backend,
                    "--out", out, *flags], check=True)


test_out = os.path.join(args.work, "test.f32")
reference_out = os.path.join(args.work, "reference.f32")
try:
    kipp_logits(args.model, args.backend, test_out, ["--int8-activations"] if args.int8_activations else [])
    if args.oracle_source:
        subprocess.run([sys.executable, os.path.join(HERE, "qwen3_reference.py"), "--source", args.oracle_source,
                        "--ids", ids, "--out", reference_out], check=True)
    else:
        kipp_logits(args.reference_model, args.reference_backend, reference_out)
    max_nmse = args.max_nmse
    if args.max_nmse_fraction is not None:
        import numpy as np
        bf16_out = os.path.join(args.work, "bf16.f32")
        kipp_logits(args.scheme_bf16_model, "cpu-ref", bf16_out)
        reference = np.fromfile(reference_out, dtype="<f4").reshape(-1, 151936).astype(np.float64)
        bf16 = np.fromfile(bf16_out, dtype="<f4").reshape(-1, 151936).astype(np.float64)
        scheme = np.median(np.sum((reference - bf16) ** 2, axis=1) / np.sum(bf16 * bf16, axis=1))
        max_nmse = f"{args.max_nmse_fraction * scheme:.6g}"
        print(f"scheme error: median row NMSE {scheme:.3e} against the BF16 artifact; "
              f"bound {args.max_nmse_fraction:g} x that = {max_nmse}")
    result = subprocess.run([sys.executable, os.path.join(HERE, "compare_logits.py"), test_out, reference_out,
                             "--vocab", "151936", "--max-nmse", max_nmse,
                             "--min-argmax-agreement", args.min_argmax_agreement,
                             "--decisive-margin", args.decisive_margin])
finally:
    # Logits of every position over the whole vocabulary run to tens of MiB per gate; the
    # comparison has printed what a post-mortem needs.
    shutil.rmtree(args.work, ignore_errors=True)
sys.exit(result.returncode)
