#!/usr/bin/python3
"""Compare two raw little-endian float32 logit files, row by row.

    compare_logits.py A.f32 B.f32 --vocab 151936 --max-nmse X

B is the reference.  Per row: NMSE = sum((a-b)^2) / sum(b^2) and argmax equality.  One line
per row (argmax of a and b, top-1/top-2 margin of b, margin relative to the per-element RMS
error the NMSE bound allows, nmse), then a summary line.  Exit status 1 if any row fails
(argmax differs, NMSE above the bound, or non-finite values), 2 on a usage or size error,
0 otherwise.  With --min-argmax-agreement F, rows whose only fault is a different argmax are
tolerated while they are at most a fraction 1 - F of all rows (quantized artifacts on synthetic
weights; see docs/TESTING.md).
"""
import argparse
import sys

import numpy as np


def load(path, vocab):
    data = np.fromfile(path, dtype="<f4")
    if data.size == 0 or data.size % vocab:
        raise ValueError(f"{path}: {data.size} floats is not a positive multiple of vocab {vocab}")
    return data.reshape(-1, vocab).astype(np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="logits under test")
    ap.add_argument("b", help="reference logits")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--max-nmse", type=float, required=True)
    ap.add_argument("--min-argmax-agreement", type=float, default=1.0)
    ap.add_argument("--failures-only", action="store_true", help="print only rows that fail or disagree, and the summary")
    args = ap.parse_args(argv)
    try:
        a, b = load(args.a, args.vocab), load(args.b, args.vocab)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.shape != b.shape:
        print(f"error: row count differs: {a.shape[0]} vs {b.shape[0]}", file=sys.stderr)
        return 2

    failed, worst, disagreed = 0, 0.0, 0
    print("row  argmax_a  argmax_b  margin_b  margin/tol  nmse")
    for r in range(a.shape[0]):
        ar, br = a[r], b[r]
        finite = np.isfinite(ar).all() and np.isfinite(br).all()
        denom = np.sum(br * br)
        nmse = np.sum((ar - br) ** 2) / denom if denom > 0 else np.inf
        ia, ib = int(np.argmax(ar)), int(np.argmax(br))
        top2 = np.partition(br, -2)[-2:]
        margin = top2[1] - top2[0]
        # RMS per-element error that an NMSE of exactly max_nmse would mean for this row.
        tol = np.sqrt(args.max_nmse * denom / br.size)
        ok = finite and ia == ib and nmse <= args.max_nmse
        if finite and nmse <= args.max_nmse and ia != ib:
            disagreed += 1
            ok = disagreed <= (1.0 - args.min_argmax_agreement) * a.shape[0]
        failed += not ok
        worst = max(worst, nmse) if np.isfinite(nmse) else np.inf
        if not args.failures_only or not ok or ia != ib:
            print(f"{r:<4d} {ia:8d}  {ib:8d}  {margin:8.3g}  {margin / tol if tol > 0 else np.inf:10.3g}  "
                  f"{nmse:.3e}{'' if ok else '  FAIL'}")
    verdict = "FAIL" if failed else "PASS"
    print(f"{verdict}: {a.shape[0] - failed}/{a.shape[0]} rows ok, worst nmse {worst:.3e} "
          f"(bound {args.max_nmse:g}), argmax agreement {1 - disagreed / a.shape[0]:.3f} "
          f"(floor {args.min_argmax_agreement:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
