"""Gate: `kipp embed` against the NumPy oracle on the same weights.

Texts (the model card's example queries and documents, a query under the card's instruction
form, the empty text, non-ASCII text, a seeded random text of a few hundred tokens) are tokenized
by the reference tokenizer (hf_token_ids.mjs: Hugging Face's library on the checkpoint's
tokenizer.json, whose post-processor appends <|endoftext|>). The oracle takes the final-normed
hidden state at the last of those ids, keeps its first --dimensions values and L2-normalises
them in float64. Kipp embeds the same texts from the text. Checked: each vector's NMSE against
the oracle's (at most --max-nmse), the response's prompt_tokens against the reference ids
(the appended token counted), and with --batch-invariance that each text embedded alone gives,
bit for bit, the vector it gets among all the others.
"""
import argparse
import json
import os
import random
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from qwen3_reference import Qwen3Reference  # noqa: E402
from retrieval_gate import add_common_arguments, reference_ids, run_in_work  # noqa: E402

TASK = "Given a web search query, retrieve relevant passages that answer the query"


def texts(seed):
    rng = random.Random(seed)
    words = ["river", "engine", "quantum", "Beijing", "gravity", "cell", "protein", "market", "poem", "orbit",
             "λόγος", "données", "東京", "42", "x^2", "(see above)", "naïve", "🚀", "\t", "\n"]
    long_text = " ".join(rng.choice(words) for _ in range(300))
    return [
        "The capital of China is Beijing.",
        "Gravity is a force that attracts two bodies towards each other. It gives weight to physical objects and "
        "is responsible for the movement of planets around the sun.",
        f"Instruct: {TASK}\nQuery:What is the capital of China?",
        f"Instruct: {TASK}\nQuery:Explain gravity",
        "",
        "Grüße aus Köln — 東京の天気は？",
        long_text,
    ]


def run_json(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def nmse(got, want):
    return float(np.sum((got - want) ** 2) / np.sum(want ** 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(ap)
    ap.add_argument("--dimensions", type=int, default=0)
    ap.add_argument("--max-nmse", type=float, required=True)
    ap.add_argument("--batch-invariance", action="store_true")
    return run_in_work(ap.parse_args(), gate)


def gate(args):
    inputs = texts(args.seed)
    ids_of = reference_ids(args, {"texts": inputs})
    jsonl = os.path.join(args.work, "inputs.jsonl")
    with open(jsonl, "w") as f:
        for text in inputs:
            f.write(json.dumps(text) + "\n")
    embed = [args.kipp, "embed", "--model", args.model, "--backend", args.backend, "--json"]
    if args.dimensions:
        embed += ["--dimensions", str(args.dimensions)]
    got = run_json(embed + ["--jsonl", jsonl])
    failures = 0
    want_tokens = sum(len(ids) for ids in ids_of)
    if got["usage"]["prompt_tokens"] != want_tokens:
        print(f"usage.prompt_tokens is {got['usage']['prompt_tokens']}, the reference tokenizer gives {want_tokens}")
        failures += 1
    oracle = Qwen3Reference(args.oracle_source)
    for i, ids in enumerate(ids_of):
        hidden = oracle.final_hidden(ids)[-1]
        if args.dimensions:
            hidden = hidden[:args.dimensions]
        want = hidden / np.linalg.norm(hidden)
        vector = np.asarray(got["data"][i]["embedding"], dtype=np.float64)
        if vector.shape != want.shape:
            print(f"text {i}: {vector.size} values, expected {want.size}")
            failures += 1
            continue
        error = nmse(vector, want)
        norm = float(np.linalg.norm(vector))
        status = "ok" if error <= args.max_nmse and abs(norm - 1) < 1e-6 else "FAIL"
        failures += status != "ok"
        print(f"text {i}: {len(ids)} tokens (last {ids[-1]}), NMSE {error:.3g}, norm {norm:.9f} {status}")
    if args.batch_invariance:
        for i, text in enumerate(inputs):
            alone = run_json(embed + ["--text", text])["data"][0]["embedding"]
            if alone != got["data"][i]["embedding"]:
                print(f"text {i}: embedded alone, its vector differs from the one embedded with the others")
                failures += 1
        print(f"batch invariance: {len(inputs)} texts alone against all at once")
    print(f"{failures} failure(s) over {len(inputs)} texts (bound NMSE {args.max_nmse:g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
