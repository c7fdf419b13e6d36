"""Gate: `kipp rerank` against the NumPy oracle on the same weights.

The prompts are built by the reference tokenizer as the Qwen3-Reranker model card builds them
(hf_token_ids.mjs: prefix and suffix tokenized without added special tokens, the body truncated
to --max-length minus their lengths); the oracle computes every logit at the last position and
takes the card's score, the softmax of the "no" and "yes" logits at "yes". Kipp scores the same
documents from their text with the same instruction and longest prompt (--max-tokens). The
documents include one far longer than that, which both must cut at its end. Checked: each score within --max-error
of the oracle's, the same order of documents, the response's usage against the reference
prompts, and the truncation reported for the long document alone.
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

YES, NO = 9693, 2152


def documents(seed):
    rng = random.Random(seed)
    words = ["Beijing", "capital", "river", "gravity", "planet", "orbit", "tea", "engine", "東京", "données"]
    return [
        "The capital of China is Beijing.",
        "Gravity is a force that attracts two bodies towards each other.",
        "Paris is the capital of France.",
        "",
        " ".join(rng.choice(words) for _ in range(3 * 512)),  # past --max-length
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(ap)
    ap.add_argument("--max-length", type=int, required=True, help="the longest prompt (kipp rerank --max-tokens)")
    ap.add_argument("--instruction", default="Given a web search query, retrieve relevant passages that answer "
                                               "the query")
    ap.add_argument("--max-error", type=float, required=True)
    return run_in_work(ap.parse_args(), gate)


def gate(args):
    query = "What is the capital of China?"
    docs = documents(args.seed)
    prompts = reference_ids(args, {"rerank": {"instruction": args.instruction, "query": query, "documents": docs,
                                              "max_length": args.max_length}})
    command = [args.kipp, "rerank", "--model", args.model, "--backend", args.backend, "--json", "--query", query,
               "--instruct", args.instruction, "--max-tokens", str(args.max_length)]
    for d in docs:
        command += ["--document", d]
    got = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    oracle = Qwen3Reference(args.oracle_source)
    want = []
    for ids in prompts:
        logits = oracle.forward(ids, last=1)[0]
        pair = np.array([logits[NO], logits[YES]])
        pair = np.exp(pair - pair.max())
        want.append(float(pair[1] / pair.sum()))
    failures = 0
    by_index = {r["index"]: r for r in got["results"]}
    for i, ids in enumerate(prompts):
        result = by_index[i]
        error = abs(result["relevance_score"] - want[i])
        truncated = result.get("truncated_tokens", 0)
        long_one = len(ids) == args.max_length
        ok = error <= args.max_error and (truncated > 0) == long_one
        failures += not ok
        print(f"document {i}: {len(ids)} tokens, score {result['relevance_score']:.6f}, oracle {want[i]:.6f}, "
              f"error {error:.2g}, truncated {truncated} {'ok' if ok else 'FAIL'}")
    order = [r["index"] for r in got["results"]]
    want_order = sorted(range(len(want)), key=lambda i: -want[i])
    if order != want_order:
        print(f"order {order}, the oracle's {want_order}")
        failures += 1
    tokens = sum(len(ids) for ids in prompts)
    if got["usage"]["total_tokens"] != tokens:
        print(f"usage.total_tokens is {got['usage']['total_tokens']}, the reference prompts hold {tokens}")
        failures += 1
    print(f"{failures} failure(s) over {len(docs)} documents (bound {args.max_error:g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
