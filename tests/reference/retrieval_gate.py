"""What gate_embeddings.py and gate_rerank.py share: their common flags, the reference token ids
(hf_token_ids.mjs: Hugging Face's tokenizer on the checkpoint's tokenizer.json), and a scratch
directory that is removed however the gate ends."""
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def add_common_arguments(ap):
    ap.add_argument("--kipp", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--model", required=True, help="the Kipp artifact under test")
    ap.add_argument("--oracle-source", required=True, help="HF source directory (weights) for the oracle")
    ap.add_argument("--tokenizer", required=True, help="the checkpoint's tokenizer.json")
    ap.add_argument("--backend", default="cpu-ref")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", required=True)


def run_in_work(args, gate):
    """gate(args) with args.work created, and removed afterwards."""
    os.makedirs(args.work, exist_ok=True)
    try:
        return gate(args)
    finally:
        shutil.rmtree(args.work, ignore_errors=True)


def reference_ids(args, request):
    """The id arrays hf_token_ids.mjs makes for `request` ({"texts": ...} or {"rerank": ...})."""
    path = os.path.join(args.work, "request.json")
    with open(path, "w") as f:
        json.dump(request, f)
    out = subprocess.run([args.node, os.path.join(HERE, "hf_token_ids.mjs"), args.tokenizer, path], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)
