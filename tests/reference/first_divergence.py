#!/usr/bin/python3
"""Where two runs of the forward pass part: the first named step beyond a bound.

    first_divergence.py A B [--max-nmse 1e-4]

A and B are directories written by `kipp logits --dump-steps DIR` or by
`qwen3_reference.py --intermediates DIR` (steps.json plus one float32 file per step and
layer). B is the reference. Steps are visited in the order a token meets them (embedding;
per layer attn_norm, q_rope, k_rope, attention, attn_residual, ffn_norm, ffn_out, residual;
final_norm; logits) and, within a step, position by position. A row parts when its
normalized squared error sum((a - b)^2) / sum(b^2) exceeds the bound; the report names the
step, layer, position and the element with the largest difference. Steps only one side
recorded are listed as not compared. The `experts` step of a MoE layer (the chosen expert ids in
rank order, then their weights) is compared as a routing decision: the two runs part there when
they chose different sets of experts, which is named as such; with the same set, the weights
are compared expert by expert, with the margins, under the bound (a swap of ranks between two equal weights is not
a divergence). The report of a routing difference gives B's routing margin ln(p_k / p_k+1).

Exit status: 0 when nothing parts, 1 when something does, 2 when the dumps cannot be
compared (different prompts, different step names, different widths, unreadable files).
"""
import argparse
import json
import os
import sys

import numpy as np


class Unusable(Exception):
    pass


def load(directory):
    try:
        with open(os.path.join(directory, "steps.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise Unusable(f"{directory}: no readable steps.json ({e})")
    if manifest.get("format") != "kipp-forward-steps":
        raise Unusable(f"{directory}/steps.json is not a kipp-forward-steps manifest")
    entries = {}
    for entry in manifest["steps"]:
        entries[(entry["step"], entry.get("layer"))] = entry
    return manifest, entries


def rows_of(directory, entry):
    path = os.path.join(directory, entry["file"])
    values = np.fromfile(path, dtype="<f4")
    count = len(entry["positions"])
    if values.size != count * entry["width"]:
        raise Unusable(f"{path}: {values.size} values, expected {count} x {entry['width']}")
    return dict(zip(entry["positions"], values.reshape(count, entry["width"]).astype(np.float64)))


def forward_order(step_order, keys):
    """The (step, layer) keys in the order a token meets them: the steps before the layers,
    each layer's steps, the steps after."""
    rank = {step: i for i, step in enumerate(step_order)}
    first_layer_rank = min((rank[step] for step, layer in keys if layer is not None), default=len(step_order))

    def key(item):
        step, layer = item
        if layer is not None:
            return (1, layer, rank[step])
        return (0 if rank[step] < first_layer_rank else 2, 0, rank[step])

    return sorted(keys, key=key)


def routing_rows(a, b):
    """An experts row pair (ids, weights, margin) as (chosen sets equal, A's set, B's set, B's
    margin, A's weights in B's order and its margin, B's weights and margin)."""
    k = (a.size - 1) // 2
    a_ids, b_ids = a[:k].astype(np.int64), b[:k].astype(np.int64)
    a_weight = dict(zip(a_ids.tolist(), a[k:2 * k]))
    same = set(a_ids.tolist()) == set(b_ids.tolist())
    a_weights = np.array([a_weight.get(e, np.nan) for e in b_ids.tolist()])
    # The weights, then the margin: both sides' own figures, compared under the bound.
    return (same, sorted(a_ids.tolist()), sorted(b_ids.tolist()), float(b[-1]), np.append(a_weights, a[-1]),
            b[k:])


def describe(step, layer):
    return step if layer is None else f"layer {layer} {step}"


def compare(a_dir, b_dir, max_nmse, out=sys.stdout):
    a_manifest, a_entries = load(a_dir)
    b_manifest, b_entries = load(b_dir)
    if a_manifest["step_order"] != b_manifest["step_order"]:
        raise Unusable(f"the dumps name different steps: {a_manifest['step_order']} vs {b_manifest['step_order']}")
    if a_manifest["ids"] != b_manifest["ids"]:
        raise Unusable("the dumps evaluated different token ids")
    order = a_manifest["step_order"]
    for step, _ in list(a_entries) + list(b_entries):
        if step not in order:
            raise Unusable(f"step {step!r} is not one of {order}")
    print(f"A: {a_dir} ({a_manifest['producer']})\nB: {b_dir} ({b_manifest['producer']}), the reference", file=out)
    missing = forward_order(order, set(a_entries) ^ set(b_entries))
    if missing:
        print("not compared (recorded on one side only): " + ", ".join(describe(*k) for k in missing), file=out)

    worst = {}  # step -> (nmse, layer, position)
    compared = 0
    for key in forward_order(order, set(a_entries) & set(b_entries)):
        step, layer = key
        if a_entries[key]["width"] != b_entries[key]["width"]:
            raise Unusable(f"{describe(step, layer)}: width {a_entries[key]['width']} vs {b_entries[key]['width']}")
        a_rows, b_rows = rows_of(a_dir, a_entries[key]), rows_of(b_dir, b_entries[key])
        for position in sorted(set(a_rows) & set(b_rows)):
            a, b = a_rows[position], b_rows[position]
            compared += 1
            if step == "experts":
                same, a_set, b_set, margin, a, b = routing_rows(a, b)
                if not same:
                    print(f"first divergence: {describe(step, layer)}, position {position}: the routing differs: "
                          f"A chose experts {a_set}, B chose {b_set}, B's routing margin ln(p8/p9) {margin:.3g} "
                          f"({compared - 1} rows before it within the bound)", file=out)
                    return 1
            difference = a - b
            error, reference = float(np.dot(difference, difference)), float(np.dot(b, b))
            nmse = error / reference if reference > 0 else error  # an all-zero reference row: the plain error
            if not np.isfinite(a).all():
                nmse = float("inf")
            if nmse > worst.get(step, (-1,))[0]:
                worst[step] = (nmse, layer, position)
            if nmse > max_nmse:
                element = int(np.nanargmax(np.where(np.isfinite(a), np.abs(difference), np.inf)))
                print(f"first divergence: {describe(step, layer)}, position {position}, element {element}: "
                      f"A {a[element]:.9g}, B {b[element]:.9g} (row NMSE {nmse:.3g} > {max_nmse:g}; "
                      f"{compared - 1} rows before it within the bound)", file=out)
                return 1
    if compared == 0:
        raise Unusable("the dumps share no step and position")
    print(f"no divergence: {compared} rows compared, every row NMSE <= {max_nmse:g}", file=out)
    for step in order:
        if step in worst:
            nmse, layer, position = worst[step]
            print(f"  worst {step:<13} {nmse:.3g} ({describe(step, layer)}, position {position})", file=out)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="a dump directory (kipp logits --dump-steps, qwen3_reference.py --intermediates)")
    ap.add_argument("b", help="the reference dump directory")
    ap.add_argument("--max-nmse", type=float, default=1e-4, help="the bound on a row's NMSE (default 1e-4)")
    args = ap.parse_args(argv)
    try:
        return compare(args.a, args.b, args.max_nmse)
    except Unusable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
