#!/usr/bin/env python3
"""`kipp convert` on one replica of every layout class the pinned checkpoints are published in, at
tiny dimensions (kipp-synthetic lays a kipp-test entry out as a published checkpoint's files):

  class                                   replica of            on
  tied, head stored, one file             Qwen3-0.6B            kipp-test/qwen3-tiny
  tied, head stored alone in shard 2      Qwen3-1.7B            kipp-test/qwen3-tiny
  tied, no head, one file, Qwen2.5 tok.   Qwen3-0.6B-Base       kipp-test/qwen3-tiny-base
  tied, no head, 3 shards, index excess   Qwen3-4B-Base         kipp-test/qwen3-tiny-base
  tied, no head, 3 shards                 Qwen3-4B              kipp-test/qwen3-tiny
  untied, 8 shards                        Qwen3-14B-Base        kipp-test/qwen3-tiny-untied

(Qwen3-8B-Base's five shards are the untied fixture; the 2507 layouts are the chat fixture.)
Each converts and passes `kipp inspect`; a stored head is reported and left out, so the logits of
a tied replica with a stored head equal, bit for bit, those of the same weights without one; the
Qwen2.5 tokenizer.json of the Base repositories, which lacks the think and tool-response tokens,
still gives them their ids (tokenizer_config.json declares them).

  published_layouts_test.py --kipp KIPP --synthetic KIPP_SYNTHETIC --tokenizer-dir DIR --fact-sheet FILE --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

CLASSES = [  # (name, registry entry, published layout, expected weight files, stored head)
    ("tied-head-single", "kipp-test/qwen3-tiny", "qwen3-0.6b", ["model.safetensors"], True),
    ("tied-head-sharded", "kipp-test/qwen3-tiny", "qwen3-1.7b", [f"model-0000{i}-of-00002.safetensors" for i in (1, 2)],
     True),
    ("tied-base-single", "kipp-test/qwen3-tiny-base", "qwen3-0.6b-base", ["model.safetensors"], False),
    ("tied-base-sharded", "kipp-test/qwen3-tiny-base", "qwen3-4b-base",
     [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)], False),
    ("tied-sharded", "kipp-test/qwen3-tiny", "qwen3-4b", [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)],
     False),
    ("untied-sharded", "kipp-test/qwen3-tiny-untied", "qwen3-14b-base",
     [f"model-0000{i}-of-00008.safetensors" for i in range(1, 9)], False),
]
IDS = "9707,11,1879,0,151644,151667"


class Failure(Exception):
    pass


def run(*command, timeout=300):
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise Failure(f"{' '.join(command)}: exit {result.returncode}\n{result.stderr}")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--kipp", "--synthetic", "--tokenizer-dir", "--fact-sheet", "--work"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    logits = {}
    try:
        for name, entry, layout, weights, stored_head in CLASSES:
            source, artifact = os.path.join(args.work, name), os.path.join(args.work, name + ".gguf")
            run(args.synthetic, "--checkpoint", entry, "--layout-of", layout, "--out", source,
                "--tokenizer-dir", args.tokenizer_dir, "--fact-sheet", args.fact_sheet, "--seed", "11")
            found = sorted(f for f in os.listdir(source) if f.endswith(".safetensors"))
            if found != sorted(weights):
                raise Failure(f"{name}: the replica of {layout} has {found}, expected {weights}")
            if (len(weights) > 1) != os.path.exists(os.path.join(source, "model.safetensors.index.json")):
                raise Failure(f"{name}: an index goes with shards and only with shards")
            converted = run(args.kipp, "convert", "--checkpoint", entry, "--source", source, "--out", artifact)
            head_lines = [line for line in converted.stderr.splitlines() if line.startswith("lm_head.weight: stored")]
            if bool(head_lines) != stored_head:
                raise Failure(f"{name}: the convert log {'lacks' if stored_head else 'has'} a stored-head line:\n"
                              f"{converted.stderr}")
            inspect = run(args.kipp, "inspect", artifact)
            if f"verdict          OK: a valid {entry} artifact" not in inspect.stdout:
                raise Failure(f"{name}: kipp inspect:\n{inspect.stdout}")
            out = os.path.join(args.work, name + ".f32")
            run(args.kipp, "logits", "--model", artifact, "--ids", IDS, "--all-positions", "--backend", "cpu-ref",
                "--out", out)
            with open(out, "rb") as handle:
                logits[name] = handle.read()
            ids = json.loads(run(args.kipp, "tokenize", "--model", artifact, "--json",
                                 "--text", "<think>x</think><tool_response>").stdout)["ids"]
            if ids[0] != 151667 or ids[-2:] != [151668, 151665]:
                raise Failure(f"{name}: <think>, </think>, <tool_response> tokenize as {ids}")
            shutil.rmtree(source)
        for with_head in ("tied-head-single", "tied-head-sharded"):
            if logits[with_head] != logits["tied-sharded"]:
                raise Failure(f"the logits of {with_head} (a stored head) differ from those without a stored head")
        if logits["tied-base-single"] != logits["tied-base-sharded"]:
            raise Failure("one file and three shards of the same weights give different logits")
    except Failure as failure:
        print(f"FAIL convert.published_layouts: {failure}", file=sys.stderr)
        return 1
    print(f"ok convert.published_layouts ({len(CLASSES)} layout classes)")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
