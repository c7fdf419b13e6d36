#!/usr/bin/python3
"""Gate for mixture-of-experts checkpoints: logits and routing decisions, prompt by prompt.

    gate_routing.py --kipp KIPP --model A.gguf [--backend cpu] [--flag=--cpu-isa=avx2 ...]
                    (--oracle-source DIR | --reference-model B.gguf [--reference-backend cpu-ref]
                     [--reference-flag=--kv-cache=q8_0 ...])
                    --prompts N --length L --max-nmse X [--min-argmax-agreement F]
                    --near-tie T --work DIR

Routing is discontinuous: where the 8th and 9th router probabilities are closer than the
difference between two correct engines, each may choose differently (../shared/REVIEW-QWEN3-MOE.md,
point 5). Such a position's output then differs by a whole expert's share, and through attention
so do the later positions of its prompt. So, for each of N seeded prompts, both sides record
every layer's choice (`kipp logits --dump-steps`, the oracle's --intermediates: the `experts`
step, whose last value is the routing margin ln(p_k / p_k+1)) and this gate:
  - walks the positions in order; the first whose chosen set differs in any layer must be a
    near-tie, the reference's margin there below T, or the gate fails ("beyond a near-tie");
  - compares every logit row before that position with compare_logits.py's bounds (NMSE, argmax);
    the rows from it on are reported as following a near-tie and not compared;
  - fails when fewer than half of all rows were compared, so that near-ties cannot hollow it out;
  - reports how many routing decisions were near-ties (margin below T) and how many of those
    chose differently.
Exit status 0 when every check holds, 1 otherwise.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_logits  # noqa: E402
import first_divergence  # noqa: E402

VOCAB = 151936


def choices(directory):
    """(layer, position) -> (set of expert ids, margin) from a dump's experts steps."""
    _, entries = first_divergence.load(directory)
    out = {}
    for (step, layer), entry in entries.items():
        if step != "experts":
            continue
        for position, row in first_divergence.rows_of(directory, entry).items():
            k = (row.size - 1) // 2
            out[(layer, position)] = (frozenset(row[:k].astype(np.int64).tolist()), float(row[-1]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kipp", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--backend", default="cpu-ref")
    ap.add_argument("--flag", action="append", default=[], help="an extra `kipp logits` flag for the tested side")
    ap.add_argument("--oracle-source")
    ap.add_argument("--reference-model")
    ap.add_argument("--reference-backend", default="cpu-ref")
    ap.add_argument("--reference-flag", action="append", default=[], help="an extra flag for a Kipp reference")
    ap.add_argument("--prompts", type=int, required=True)
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--max-nmse", required=True)
    ap.add_argument("--min-argmax-agreement", default="1")
    ap.add_argument("--near-tie", type=float, required=True, help="routing margins below this are near-ties")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    if (args.oracle_source is None) == (args.reference_model is None):
        ap.error("give exactly one of --oracle-source and --reference-model")

    failures, compared_rows, all_rows, near_ties, flipped, decisions = [], 0, 0, 0, 0, 0
    try:
        for prompt in range(args.prompts):
            rng = random.Random(7919 * (prompt + 1) + args.length)
            ids = [rng.randrange(151643) for _ in range(args.length)]
            text = ",".join(map(str, ids))
            work = os.path.join(args.work, f"prompt{prompt}")
            os.makedirs(work, exist_ok=True)
            test, reference = os.path.join(work, "test.f32"), os.path.join(work, "reference.f32")
            subprocess.run([args.kipp, "logits", "--model", args.model, "--ids", text, "--all-positions",
                            "--backend", args.backend, *args.flag, "--out", test,
                            "--dump-steps", os.path.join(work, "test.steps")], check=True)
            if args.oracle_source:
                subprocess.run([sys.executable, os.path.join(HERE, "qwen3_reference.py"), "--source",
                                args.oracle_source, "--ids", text, "--out", reference,
                                "--intermediates", os.path.join(work, "reference.steps")], check=True)
            else:
                subprocess.run([args.kipp, "logits", "--model", args.reference_model, "--ids", text,
                                "--all-positions", "--backend", args.reference_backend, *args.reference_flag,
                                "--out", reference,
                                "--dump-steps", os.path.join(work, "reference.steps")], check=True)
            a, b = choices(os.path.join(work, "test.steps")), choices(os.path.join(work, "reference.steps"))
            if set(a) != set(b) or not b:
                failures.append(f"prompt {prompt}: the two sides recorded different routing decisions")
                continue
            decisions += len(b)
            near_ties += sum(margin < args.near_tie for _, margin in b.values())
            first_flip = args.length
            for layer, position in sorted(b, key=lambda key: (key[1], key[0])):
                if a[(layer, position)][0] == b[(layer, position)][0]:
                    continue
                margin = b[(layer, position)][1]
                flipped += 1
                print(f"prompt {prompt}: layer {layer}, position {position}: routing differs, reference margin "
                      f"{margin:.3g} ({'a near-tie' if margin < args.near_tie else 'BEYOND A NEAR-TIE'})")
                if margin >= args.near_tie:
                    failures.append(f"prompt {prompt} position {position}: routing differs beyond a near-tie")
                first_flip = min(first_flip, position)
                break
            all_rows += args.length
            if first_flip == 0:
                continue
            compared_rows += first_flip
            keep = first_flip * VOCAB
            for path in (test, reference):
                np.fromfile(path, dtype="<f4")[:keep].tofile(path + ".kept")
            print(f"== prompt {prompt}: rows 0..{first_flip - 1}", flush=True)
            if compare_logits.main([test + ".kept", reference + ".kept", "--max-nmse", args.max_nmse,
                                    "--min-argmax-agreement", args.min_argmax_agreement, "--failures-only"]):
                failures.append(f"prompt {prompt}: logits")
    finally:
        shutil.rmtree(args.work, ignore_errors=True)
    if all_rows and compared_rows * 2 < all_rows:
        failures.append(f"only {compared_rows} of {all_rows} rows preceded every near-tie")
    print(f"routing: {decisions} decisions, {near_ties} near-ties (margin < {args.near_tie:g}), {flipped} of them "
          f"chosen differently; {compared_rows} of {all_rows} rows compared")
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
