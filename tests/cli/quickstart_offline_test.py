#!/usr/bin/env python3
"""`make quickstart` on a machine that cannot reach the hub: scripts/quickstart.sh must say so in one
line, run the same pipeline (generate the synthetic 0.6B-shape checkpoint, convert, inspect,
generate, one request to `kipp serve`) under a banner that the weights are random, and exit 0.

  quickstart_offline_test.py --script quickstart.sh --kipp KIPP --synthetic KIPP_SYNTHETIC
                             --tokenizer-dir DIR --fact-sheet FILE --work DIR
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--script", "--kipp", "--synthetic", "--tokenizer-dir", "--fact-sheet", "--work"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    with socket.socket() as probe:  # a port nothing listens on: the hub is unreachable
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HUB_CACHE=os.path.join(args.work, "no-hf-cache"))
    models = os.path.join(args.work, "models")
    run = subprocess.run(["bash", args.script, args.kipp, args.synthetic, args.tokenizer_dir, args.fact_sheet,
                          "qwen3-0.6b", models], capture_output=True, text=True, timeout=1200, env=env)
    out = run.stdout
    problems = []
    if run.returncode != 0:
        problems.append(f"exit {run.returncode}")
    offline_lines = [line for line in out.splitlines() if line.startswith("quickstart: the hub cannot be reached")]
    if len(offline_lines) != 1:
        problems.append("no single line saying the hub cannot be reached")
    if "RANDOM WEIGHTS" not in out or "noise" not in out:
        problems.append("no banner saying the weights are random and the text is noise")
    if "verdict          OK: a valid kipp-test/qwen3-0.6b-shape artifact" not in out:
        problems.append("kipp inspect did not pass the converted artifact")
    generated = out.split('-n 64\n', 1)[1].split("\n", 1)[0] if '-n 64\n' in out else ""
    if len(generated.strip()) == 0:
        problems.append("no generated text after `kipp generate`")
    match = re.search(r"^\{\n.*?^\}$", out, re.S | re.M)
    if not match:
        problems.append("no response from kipp serve")
    else:
        answer = json.loads(match.group(0))
        if answer.get("model") != "kipp-test/qwen3-0.6b-shape" or answer["usage"]["completion_tokens"] < 1:
            problems.append(f"unexpected response {answer}")
    if "is ready." not in out:
        problems.append("the script did not finish")
    if os.path.exists(os.path.join(models, ".synthetic", "qwen3-0.6b-shape")):
        problems.append("the synthetic source (1.5 GB) was left behind after conversion")
    if problems:
        print("FAIL quickstart.offline: " + "; ".join(problems) + f"\nstdout:\n{out}\nstderr:\n{run.stderr}",
              file=sys.stderr)
        return 1
    print("ok quickstart.offline")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
