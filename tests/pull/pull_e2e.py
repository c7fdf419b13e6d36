#!/usr/bin/env python3
"""End-to-end tests of `kipp pull`: the real binary against hub_server.py, a local stand-in for the
hub serving the fixture's synthetic source directories. One scenario per ctest test:

  pull_e2e.py --scenario NAME --kipp KIPP --test-models DIR --work DIR

Artifacts are compared byte for byte with the fixture's `kipp convert` output of the same sources.
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TINY, UNTIED = "kipp-test/qwen3-tiny", "kipp-test/qwen3-tiny-untied"
SHARD2 = "model-00002-of-00003.safetensors"


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def same_bytes(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as first, open(b, "rb") as second:
        while True:
            chunk = first.read(1 << 20)
            if chunk != second.read(1 << 20):
                return False
            if not chunk:
                return True


class Context:
    def __init__(self, args):
        self.kipp = args.kipp
        self.test_models = args.test_models
        self.work = args.work
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        registry = json.loads(subprocess.run([self.kipp, "registry", "--json"], check=True,
                                             capture_output=True, text=True).stdout)
        self.entries = {entry["id"]: entry for entry in registry["checkpoints"]}

    def source_dir(self, checkpoint_id):
        return os.path.join(self.test_models, "src", checkpoint_id.split("/")[1])

    def fixture_artifact(self, checkpoint_id, quant):
        return os.path.join(self.test_models, f"{checkpoint_id.split('/')[1]}.{quant}.gguf")

    def models_dir(self, name):
        return os.path.join(self.work, name)

    def server(self, checkpoint_id, *faults):
        return Server(self, list(faults), [checkpoint_id])

    def pull(self, checkpoint_id, models_dir, endpoint=None, quant=None, timeout=60):
        command = [self.kipp, "pull", checkpoint_id, "--models-dir", models_dir]
        if endpoint is not None:
            command += ["--endpoint", endpoint]
        if quant:
            command += ["--quant", quant]
        started = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        result.seconds = time.monotonic() - started
        return result


class Server:
    """hub_server.py on an ephemeral port, with its request log."""

    def __init__(self, context, faults, ids):
        self.log_path = os.path.join(context.work, f"requests-{time.monotonic_ns()}.jsonl")
        command = [sys.executable, os.path.join(HERE, "hub_server.py"), "--log", self.log_path,
                   "--hash-cache", os.path.join(os.path.dirname(context.work), "hub-hash-cache.json")] + faults
        for checkpoint_id in ids:
            entry = context.entries[checkpoint_id]
            command += ["--repo", entry["repository"], entry["revision"], context.source_dir(checkpoint_id)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        check(line.isdigit(), f"hub_server.py did not start (printed {line!r})")
        self.url = f"http://127.0.0.1:{line}"

    def requests(self):
        if not os.path.exists(self.log_path):
            return []
        with open(self.log_path) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def file_gets(self):
        """GETs that carry file bytes: a non-LFS file's resolve URL, or the LFS store a resolve redirects to."""
        return [r for r in self.requests() if r["method"] == "GET" and not r["path"].startswith("/api/")
                and not r["path"].endswith(".safetensors")]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=10)


def expect_success(result, what):
    check(result.returncode == 0, f"{what}: exit {result.returncode}\nstderr:\n{result.stderr}")


def expect_failure(result, what, *needles):
    check(result.returncode != 0, f"{what}: expected a failure, got exit 0\nstderr:\n{result.stderr}")
    check("Traceback" not in result.stderr and "terminate called" not in result.stderr,
          f"{what}: crashed\n{result.stderr}")
    errors = [line for line in result.stderr.splitlines() if line.startswith("kipp: ")]
    check(len(errors) == 1, f"{what}: expected exactly one 'kipp: ' error line, got:\n{result.stderr}")
    for needle in needles:
        check(needle in errors[0], f"{what}: error line lacks {needle!r}:\n{errors[0]}")
    check(result.returncode in (1, 2), f"{what}: exit {result.returncode} (a signal or abort?)")
    return errors[0]


def leftovers(models_dir):
    """Files a failed pull must not leave: artifacts and temporaries (resumable .part files are allowed)."""
    found = []
    for pattern in ("**/*.gguf", "**/*.gguf.*", "**/*.tmp*"):
        found += glob.glob(os.path.join(models_dir, pattern), recursive=True)
    return found


def download_dir(context, models_dir, checkpoint_id):
    entry = context.entries[checkpoint_id]
    return os.path.join(models_dir, ".downloads", checkpoint_id.replace("/", "_"), entry["revision"])


def check_artifact(context, result, models_dir, checkpoint_id, quant):
    expected_path = os.path.join(models_dir, f"{checkpoint_id.replace('/', '_')}.{quant}.gguf")
    check(result.stdout.strip() == expected_path,
          f"stdout should be the artifact path {expected_path!r}, got {result.stdout!r}")
    check(os.path.isfile(expected_path), f"{expected_path} missing")
    check(same_bytes(expected_path, context.fixture_artifact(checkpoint_id, quant)),
          f"{expected_path} differs from `kipp convert` of the same source ({context.fixture_artifact(checkpoint_id, quant)})")
    inspect = subprocess.run([context.kipp, "inspect", expected_path], capture_output=True, text=True, timeout=60)
    check(inspect.returncode == 0, f"kipp inspect {expected_path}: exit {inspect.returncode}\n{inspect.stderr}")
    temporaries = [p for p in glob.glob(os.path.join(models_dir, "**", "*"), recursive=True)
                   if p.endswith(".part") or ".tmp" in os.path.basename(p)]
    check(not temporaries, f"left behind after success: {temporaries}")
    lines = result.stderr.splitlines()
    check(len(lines) < 30, f"too much output on stderr ({len(lines)} lines):\n{result.stderr}")


def file_line(result, name):
    """The summary line of one file (the last line about it)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith(name + ": ")]
    check(lines, f"no line about {name} on stderr:\n{result.stderr}")
    return lines[-1]


# --- scenarios ---------------------------------------------------------------------------------

def scenario_single(context):
    """Single-file checkpoint: pull, verify each file, convert; a second pull reuses the downloads."""
    models = context.models_dir("models")
    with context.server(TINY) as hub:
        result = context.pull(TINY, models, hub.url)
        expect_success(result, "pull tiny")
        check_artifact(context, result, models, TINY, "bf16")
        check("verified: SHA-256" in file_line(result, "model.safetensors"), result.stderr)
        check("tree listing and X-Linked-Etag" in file_line(result, "model.safetensors"), result.stderr)
        for small in ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "LICENSE"):
            check("verified: git blob SHA-1" in file_line(result, small), result.stderr)
        first_gets = len(hub.file_gets())
        check(first_gets == 6, f"expected 6 file downloads, saw {first_gets}: {hub.file_gets()}")

        again = context.pull(TINY, models, hub.url, quant="q8_0")
        expect_success(again, "second pull (q8_0)")
        check_artifact(context, again, models, TINY, "q8_0")
        check(len(hub.file_gets()) == first_gets,
              f"the second pull downloaded again: {hub.file_gets()[first_gets:]}")
        for name in ("model.safetensors", "config.json", "tokenizer.json"):
            check("already downloaded; verified" in file_line(again, name), again.stderr)


def scenario_sharded(context):
    """Sharded checkpoint: the index names three shards, each verified by its LFS SHA-256."""
    models = context.models_dir("models")
    with context.server(UNTIED) as hub:
        result = context.pull(UNTIED, models, hub.url)
        expect_success(result, "pull tiny-untied")
        check_artifact(context, result, models, UNTIED, "bf16")
        for shard in range(1, 4):
            name = f"model-0000{shard}-of-00003.safetensors"
            check("verified: SHA-256" in file_line(result, name), result.stderr)
        check("verified: git blob SHA-1" in file_line(result, "model.safetensors.index.json"), result.stderr)


def scenario_resume(context):
    """Interrupted transfers: a connection dropped mid-file resumes with a Range request (after a 503
    that is retried); a .part left by an earlier run resumes too; a server that ignores Range (200 for
    a Range request) makes the .part start over cleanly."""
    models = context.models_dir("models")
    dl = download_dir(context, models, TINY)
    os.makedirs(dl)
    planted = {"tokenizer_config.json": 4096, "tokenizer.json": 1 << 20}
    for name, length in planted.items():
        with open(os.path.join(context.source_dir(TINY), name), "rb") as src, \
                open(os.path.join(dl, name + ".part"), "wb") as part:
            part.write(src.read(length))
    drop_at = 5 << 20
    with context.server(TINY, "--drop", f"model.safetensors:{drop_at}", "--status", "/_lfs/:503:1",
                        "--ignore-range", "tokenizer.json") as hub:
        result = context.pull(TINY, models, hub.url)
        expect_success(result, "pull with interruptions")
        check_artifact(context, result, models, TINY, "bf16")
        ranges = [r for r in hub.requests() if r["range"]]
        check(any(r["range"] == f"bytes={drop_at}-" and r["path"].startswith("/_lfs/") for r in ranges),
              f"no Range request resumed model.safetensors at byte {drop_at}: {ranges}")
        check("connection dropped" in result.stderr, result.stderr)
        check("503" in result.stderr and "retrying" in result.stderr, result.stderr)
        check(any(r["range"] == "bytes=4096-" and r["path"].endswith("/tokenizer_config.json") for r in ranges),
              f"the earlier tokenizer_config.json.part was not resumed with a Range request: {ranges}")
        check("resumed at 4.00 KiB" in file_line(result, "tokenizer_config.json"), result.stderr)
        check(any(r["path"].endswith("/tokenizer.json") for r in ranges), f"no Range request for tokenizer.json: {ranges}")
        check("ignored the range request" in result.stderr, result.stderr)


def scenario_corrupt(context):
    """A corrupted byte under the original hash: one line naming the file and both hashes, no artifact,
    the bad .part removed, the files that verified kept for the next pull."""
    shard = os.path.join(context.source_dir(UNTIED), SHARD2)
    good = sha256_file(shard)
    with open(shard, "rb") as handle:
        data = bytearray(handle.read())
    data[12345] ^= 0xFF
    bad = hashlib.sha256(data).hexdigest()
    models = context.models_dir("models")
    with context.server(UNTIED, "--corrupt", f"{SHARD2}:12345") as hub:
        result = context.pull(UNTIED, models, hub.url)
        expect_failure(result, "pull of a corrupted shard", SHARD2, good, bad)
    check(not leftovers(models), f"a failed pull left {leftovers(models)}")
    dl = download_dir(context, models, UNTIED)
    check(not os.path.exists(os.path.join(dl, SHARD2 + ".part")), "the bad .part was kept")
    check(not os.path.exists(os.path.join(dl, SHARD2)), "the bad shard was kept under its final name")
    check(os.path.isfile(os.path.join(dl, "model-00001-of-00003.safetensors")), "a verified shard was not kept")

    # A small file is checked against its git blob id.
    config = os.path.join(context.source_dir(TINY), "config.json")
    with open(config, "rb") as handle:
        data = bytearray(handle.read())
    good_blob = hashlib.sha1(b"blob %d\0" % len(data) + bytes(data)).hexdigest()
    data[3] ^= 0xFF
    bad_blob = hashlib.sha1(b"blob %d\0" % len(data) + bytes(data)).hexdigest()
    models = context.models_dir("models-config")
    with context.server(TINY, "--corrupt", "config.json:3") as hub:
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "pull of a corrupted config.json", "config.json", good_blob, bad_blob)
    check(not leftovers(models), f"a failed pull left {leftovers(models)}")
    check(not glob.glob(os.path.join(models, "**", "config.json*"), recursive=True), "the bad config.json was kept")


def scenario_unreachable(context):
    """Nothing listens at the endpoint: one line with the offline hint, quickly, and nothing written."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    models = context.models_dir("models")
    result = context.pull(TINY, models, f"http://127.0.0.1:{port}")
    expect_failure(result, "pull from an unreachable endpoint", f"127.0.0.1 port {port}", "kipp convert")
    check(result.seconds < 15, f"took {result.seconds:.1f}s to give up on a refused connection")
    check(not os.path.exists(models), "a pull from an unreachable hub created the models directory")

    # A hub that goes away after the listing: the download folder it made is removed again when empty.
    with context.server(TINY, "--status", "/resolve/:404") as hub:
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "every file 404", "config.json", "404")
    check(not os.path.exists(models), f"a pull that got no file left {glob.glob(models + '/**', recursive=True)}")


def scenario_refused(context):
    """Synthetic entries need an explicit --endpoint; unknown ids and bad endpoints are one-line errors."""
    models = context.models_dir("models")
    result = context.pull(TINY, models)
    expect_failure(result, "pull of a kipp-test id from the public hub", "synthetic", "--endpoint")
    check(not os.path.exists(models), "a refused pull created the models directory")
    result = context.pull("qwen3-no-such-model", models, "http://127.0.0.1:1")
    expect_failure(result, "pull of an unknown id", "qwen3-no-such-model", "registry")
    result = context.pull(TINY, models, "ftp://127.0.0.1")
    expect_failure(result, "pull from a non-HTTP endpoint", "http")
    check(not os.path.exists(models), "a refused pull created the models directory")


def scenario_hub_errors(context):
    """HTTP errors, a broken listing, no listing at all (HEAD probes), a models dir that cannot be made."""
    with context.server(TINY, "--status", "tokenizer_config.json:500") as hub:
        models = context.models_dir("status-500")
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "HTTP 500", "HTTP 500", "tokenizer_config.json")
        check(not leftovers(models), f"left {leftovers(models)}")

        with open(os.path.join(context.work, "a-file"), "w") as handle:
            handle.write("not a directory\n")
        result = context.pull(TINY, os.path.join(context.work, "a-file", "models"), hub.url)
        expect_failure(result, "a models dir below a regular file", "a-file")

    with context.server(TINY, "--status", "/tokenizer.json:404") as hub:
        models = context.models_dir("status-404")
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "HTTP 404", "tokenizer.json", "404")

    with context.server(TINY, "--status", "/tokenizer.json:416") as hub:
        models = context.models_dir("status-416")
        dl = download_dir(context, models, TINY)
        os.makedirs(dl)
        with open(os.path.join(dl, "tokenizer.json.part"), "wb") as part:
            part.write(b"{")
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "HTTP 416 on resume", "tokenizer.json", "416", "tokenizer.json.part")

    with context.server(TINY, "--bad-listing") as hub:
        models = context.models_dir("bad-listing")
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "a listing that is not JSON", "listing", "JSON")

    with context.server(TINY, "--no-listing") as hub:
        models = context.models_dir("no-listing")
        result = context.pull(TINY, models, hub.url)
        expect_success(result, "pull without a tree listing")
        check_artifact(context, result, models, TINY, "bf16")
        line = file_line(result, "model.safetensors")
        check("verified: SHA-256" in line and "(X-Linked-Etag)" in line, result.stderr)
        check("NOT verified" in file_line(result, "config.json"), result.stderr)


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--test-models", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    started = time.monotonic()
    try:
        SCENARIOS[args.scenario](Context(args))
    except Failure as failure:
        print(f"FAIL pull.{args.scenario}: {failure}", file=sys.stderr)
        return 1
    print(f"ok pull.{args.scenario} ({time.monotonic() - started:.1f}s)")
    shutil.rmtree(args.work, ignore_errors=True)  # a failed scenario keeps its files for a post-mortem
    return 0


if __name__ == "__main__":
    sys.exit(main())
