#!/usr/bin/env python3
"""End-to-end tests of `kipp pull`: the real binary against hub_server.py, a local stand-in for the
hub (and its CDN on a second loopback address) that behaves as the real one does, serving the
fixture's source directories, which are laid out as the published checkpoints are. One scenario per
ctest test:

  pull_e2e.py --scenario NAME --kipp KIPP --test-models DIR [--shape-models DIR] --work DIR

Tiny artifacts are compared byte for byte with the fixture's `kipp convert` output of the same
sources; the full-size 0.6B pull by its logits against the shape fixture's artifact.
"""
import argparse
import fnmatch
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
TINY, UNTIED, MOE = "kipp-test/qwen3-tiny", "kipp-test/qwen3-tiny-untied", "kipp-test/qwen3-moe-tiny"
EMBEDDING, RERANKER = "kipp-test/qwen3-embedding-tiny", "kipp-test/qwen3-reranker-tiny"
SHARD2 = "model-00002-of-00005.safetensors"  # tiny-untied has Qwen3-8B-Base's five shards
QWEN3_06B = "qwen3-0.6b"
TOKEN = "hf_kippTestToken0123456789"


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
        self.shape_models = args.shape_models
        self.work = args.work
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        registry = json.loads(subprocess.run([self.kipp, "registry", "--json"], check=True,
                                             capture_output=True, text=True).stdout)
        self.entries = {entry["id"]: entry for entry in registry["checkpoints"]}
        self.hub_sources = {}  # checkpoint id -> a directory the hub serves instead of the fixture's

    def source_dir(self, checkpoint_id):
        if checkpoint_id in self.hub_sources:
            return self.hub_sources[checkpoint_id]
        if checkpoint_id == QWEN3_06B:  # the shape fixture is laid out exactly as Qwen/Qwen3-0.6B
            return os.path.join(self.shape_models, "src", "qwen3-0.6b-shape")
        return os.path.join(self.test_models, "src", checkpoint_id.split("/")[1])

    def fixture_artifact(self, checkpoint_id, quant):
        return os.path.join(self.test_models, f"{checkpoint_id.split('/')[1]}.{quant}.gguf")

    def models_dir(self, name):
        return os.path.join(self.work, name)

    def server(self, checkpoint_id, *faults):
        return Server(self, list(faults), [checkpoint_id])

    def pull(self, checkpoint_id, models_dir, endpoint=None, quant=None, timeout=60, extra=(), env=None,
             command="pull", stdin=None):
        """Runs kipp pull (or `command`, which takes the same flags: run) with none of the user's
        Hugging Face settings: no HF_* variables, and an empty HF cache unless `env` names one."""
        command = [self.kipp, command, checkpoint_id, "--models-dir", models_dir, *extra]
        if endpoint is not None:
            command += ["--endpoint", endpoint]
        if quant:
            command += ["--quant", quant]
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        environment["HF_HUB_CACHE"] = os.path.join(self.work, "no-hf-cache")
        environment["HF_HOME"] = os.path.join(self.work, "no-hf-home")
        environment.update(env or {})
        started = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment,
                                input=stdin)
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
        """GETs that carry file bytes: the CDN's for LFS files, the hub's resolve-cache for the others
        (a resolve URL itself only redirects)."""
        return [r for r in self.requests() if r["method"] == "GET" and
                (r["server"] == "cdn" or r["path"].startswith("/api/resolve-cache/"))]

    def hub_requests(self):
        return [r for r in self.requests() if r["server"] == "hub"]

    def cdn_requests(self):
        return [r for r in self.requests() if r["server"] == "cdn"]

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
    check(result.returncode in (1, 2, 3), f"{what}: exit {result.returncode} (a signal or abort?)")
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


def check_artifact(context, result, models_dir, checkpoint_id, quant, max_lines=30):
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
    check(len(lines) < max_lines, f"too much output on stderr ({len(lines)} lines):\n{result.stderr}")


def file_line(result, name):
    """The summary line of one file (the last line about it)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith(name + ": ")]
    check(lines, f"no line about {name} on stderr:\n{result.stderr}")
    return lines[-1]


def stored_head_line(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith("lm_head.weight: stored although")]
    check(len(lines) == 1, f"no line about the stored tied head on stderr:\n{result.stderr}")
    return lines[0]


def logits(context, model, path):
    run = subprocess.run([context.kipp, "logits", "--model", model, "--ids", "9707,11,1879,0,151644",
                          "--all-positions", "--backend", "cpu", "--out", path],
                         capture_output=True, text=True, timeout=300)
    check(run.returncode == 0, f"kipp logits --model {model}: exit {run.returncode}\n{run.stderr}")
    with open(path, "rb") as handle:
        return handle.read()


def check_logits_equal_shape_fixture(context, artifact):
    """The pulled 0.6B artifact gives bitwise the logits of the shape fixture's artifact (the same
    weights, converted as kipp-test/qwen3-0.6b-shape from the same directory)."""
    fixture = os.path.join(context.shape_models, "qwen3-0.6b-shape.bf16.gguf")
    got = logits(context, artifact, os.path.join(context.work, "pulled.f32"))
    want = logits(context, fixture, os.path.join(context.work, "fixture.f32"))
    check(len(got) == 5 * 151936 * 4, f"logits of {len(got)} bytes")
    check(got == want, f"the logits of {artifact} differ from those of {fixture}")


def make_hf_cache(context, checkpoint_id, cache):
    """Lays out a checkpoint's source directory as huggingface_hub's cache does: each file's bytes
    once under blobs/, named by the hub's ETag (the SHA-256 of an LFS file, the git blob id of any
    other), and snapshots/{revision}/{file} as relative symlinks into blobs/. Blobs are hard links
    to the fixture's files, so a full-size cache costs no disk."""
    entry = context.entries[checkpoint_id]
    repo_dir = os.path.join(cache, "models--" + entry["repository"].replace("/", "--"))
    blobs, snapshot = os.path.join(repo_dir, "blobs"), os.path.join(repo_dir, "snapshots", entry["revision"])
    os.makedirs(blobs)
    os.makedirs(snapshot)
    os.makedirs(os.path.join(repo_dir, "refs"))
    with open(os.path.join(repo_dir, "refs", "main"), "w") as handle:
        handle.write(entry["revision"])
    source = context.source_dir(checkpoint_id)
    with open(os.path.join(source, ".gitattributes")) as handle:
        lfs = [line.split()[0] for line in handle if "filter=lfs" in line]
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in lfs):
            blob = sha256_file(path)
        else:
            with open(path, "rb") as handle:
                data = handle.read()
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        try:
            os.link(path, os.path.join(blobs, blob))
        except OSError:
            shutil.copyfile(path, os.path.join(blobs, blob))
        os.symlink(os.path.join("..", "..", "blobs", blob), os.path.join(snapshot, name))
    return snapshot


def closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- scenarios ---------------------------------------------------------------------------------

def scenario_single(context):
    """Qwen3-0.6B's layout: one model.safetensors holding a stored tied head, tokenizer.json in LFS.
    Each file verified; the head compared and left out; a second pull reuses the downloads."""
    models = context.models_dir("models")
    with context.server(TINY) as hub:
        result = context.pull(TINY, models, hub.url)
        expect_success(result, "pull tiny")
        check_artifact(context, result, models, TINY, "bf16")
        for lfs in ("model.safetensors", "tokenizer.json"):
            check("verified: SHA-256" in file_line(result, lfs), result.stderr)
            check("tree listing and X-Linked-Etag" in file_line(result, lfs), result.stderr)
        for small in ("config.json", "tokenizer_config.json", "generation_config.json", "LICENSE"):
            check("verified: git blob SHA-1" in file_line(result, small), result.stderr)
        check("differs from model.embed_tokens.weight" in stored_head_line(result), result.stderr)
        first_gets = len(hub.file_gets())
        check(first_gets == 6, f"expected 6 file downloads, saw {first_gets}: {hub.file_gets()}")
        check(not any(r["method"] == "HEAD" for r in hub.requests()), "a pull with a listing sent HEAD requests")
        check(not any(r["authorization"] for r in hub.requests()), "a pull without a token sent Authorization")

        again = context.pull(TINY, models, hub.url, quant="q8_0")
        expect_success(again, "second pull (q8_0)")
        check_artifact(context, again, models, TINY, "q8_0")
        check(len(hub.file_gets()) == first_gets,
              f"the second pull downloaded again: {hub.file_gets()[first_gets:]}")
        for name in ("model.safetensors", "config.json", "tokenizer.json"):
            check("already downloaded; verified" in file_line(again, name), again.stderr)


def scenario_sharded(context):
    """Qwen3-8B-Base's layout: five shards (lm_head alone in the last), an index whose total_size is
    not the tensor bytes, no LICENSE, the Qwen2.5 tokenizer.json outside LFS."""
    models = context.models_dir("models")
    with context.server(UNTIED) as hub:
        result = context.pull(UNTIED, models, hub.url)
        expect_success(result, "pull tiny-untied")
        check_artifact(context, result, models, UNTIED, "bf16")
        for shard in range(1, 6):
            name = f"model-0000{shard}-of-00005.safetensors"
            check("verified: SHA-256" in file_line(result, name), result.stderr)
        for small in ("model.safetensors.index.json", "tokenizer.json"):
            check("verified: git blob SHA-1" in file_line(result, small), result.stderr)
        check("LICENSE: not in the repository at this revision; skipped" in result.stderr, result.stderr)
        check("lm_head.weight: stored" not in result.stderr, "an untied checkpoint's head taken for a stored tied one")


def scenario_moe(context):
    """Qwen3-30B-A3B's layout at tiny dimensions: 16 shards, layers whose experts lie in several
    of them, the index. A config_1m.json beside config.json (as the 2507 repositories ship one; a
    stand-in here, their text is not known) is named and not fetched. The Q8_0 artifact equals
    `kipp convert` of the fixture's source byte for byte."""
    source = os.path.join(context.work, "hub-source")
    shutil.copytree(context.source_dir(MOE), source)
    with open(os.path.join(source, "config.json")) as f:
        long_context = json.load(f)
    long_context["dual_chunk_attention_config"] = {"stand_in": "the published file's settings are not known"}
    with open(os.path.join(source, "config_1m.json"), "w") as f:
        json.dump(long_context, f, indent=2, sort_keys=True)
    context.hub_sources[MOE] = source
    with open(os.path.join(source, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    layer0 = {shard for name, shard in weight_map.items() if name.startswith("model.layers.0.mlp.experts.")}
    check(len(layer0) > 1, f"the fixture's layer 0 experts lie in one shard only: {layer0}")
    models = context.models_dir("models")
    with context.server(MOE) as hub:
        result = context.pull(MOE, models, hub.url, quant="q8_0")
        expect_success(result, "pull moe-tiny")
        check_artifact(context, result, models, MOE, "q8_0", max_lines=50)
        for shard in range(1, 17):
            name = f"model-{shard:05d}-of-00016.safetensors"
            check("verified: SHA-256" in file_line(result, name), result.stderr)
        check("config_1m.json: in the repository, not fetched" in result.stderr, result.stderr)
        check(not os.path.exists(os.path.join(download_dir(context, models, MOE), "config_1m.json")),
              "config_1m.json was downloaded")
        check(not [r for r in hub.requests() if r["path"].endswith("/config_1m.json")], "config_1m.json was requested")


def scenario_retrieval(context):
    """Qwen3-Embedding-4B's layout at tiny dimensions (two shards of tensors without "model.", no
    head, 151,665 rows, and the sentence-transformers files, one of them, 1_Pooling/config.json,
    in a folder the hub lists apart) and Qwen3-Reranker-0.6B's (one file, 151,669 rows): each pull
    equals `kipp convert` of the fixture's source byte for byte, with every small file verified
    against its git blob id; with no listing the files are probed one by one, the folder's too."""
    models = context.models_dir("models")
    with context.server(EMBEDDING) as hub:
        result = context.pull(EMBEDDING, models, hub.url, quant="q8_0")
        expect_success(result, "pull embedding-tiny")
        check_artifact(context, result, models, EMBEDDING, "q8_0")
        for small in ("modules.json", "1_Pooling/config.json", "config_sentence_transformers.json"):
            check("verified: git blob SHA-1" in file_line(result, small), result.stderr)
        pooling = os.path.join(download_dir(context, models, EMBEDDING), "1_Pooling", "config.json")
        check(os.path.isfile(pooling), f"{pooling} missing")
        check([r for r in hub.requests() if r["path"].endswith("/1_Pooling") and "/tree/" in r["path"]],
              "the folder's listing was not asked for")
    unlisted = context.models_dir("unlisted")
    with context.server(EMBEDDING, "--no-listing") as hub:
        result = context.pull(EMBEDDING, unlisted, hub.url, quant="q8_0")
        expect_success(result, "pull embedding-tiny without a listing")
        check_artifact(context, result, unlisted, EMBEDDING, "q8_0")
        check(file_line(result, "1_Pooling/config.json"), result.stderr)
    with context.server(RERANKER) as hub:
        result = context.pull(RERANKER, models, hub.url)
        expect_success(result, "pull reranker-tiny")
        check_artifact(context, result, models, RERANKER, "bf16")
        check("modules.json" not in result.stderr, "a reranker has no sentence-transformers files to fetch")


def scenario_models(context):
    """The Ollama-shaped commands on a models folder: `kipp run` pulls a checkpoint that is not
    there (the artifact byte-identical to `kipp convert`'s) and chats on it, and the second time
    fetches nothing; `kipp list` shows it (and a file that is not an artifact, as such); `kipp serve
    --model ID` finds it, and names `kipp pull` for one that is missing; `kipp rm` removes it and
    its download; `kipp run` refuses a checkpoint that does not generate."""
    models = context.models_dir("models")
    kipp = lambda *args: subprocess.run([context.kipp, *args], capture_output=True, text=True, timeout=120)
    listed = kipp("list", "--models-dir", models)
    expect_success(listed, "kipp list on a missing folder")
    check("no artifacts in" in listed.stderr and not listed.stdout, listed.stderr)
    chat = ["--temperature", "0", "-n", "4", "--no-thinking"]
    with context.server(TINY) as hub:
        result = context.pull(TINY, models, hub.url, command="run", extra=chat, stdin="Hello\n/exit\n")
        expect_success(result, "kipp run of a checkpoint not yet pulled")
        check("is not in" in result.stderr and "pulling it" in result.stderr, result.stderr)
        artifact = os.path.join(models, "kipp-test_qwen3-tiny.bf16.gguf")
        check(same_bytes(artifact, context.fixture_artifact(TINY, "bf16")), "the pulled artifact differs from convert's")
        check(result.stdout.strip(), f"no answer printed:\n{result.stdout}")
        asked = len(hub.requests())
        again = context.pull(TINY, models, hub.url, command="run", extra=chat, stdin="Hello\n/exit\n")
        expect_success(again, "kipp run of a checkpoint present")
        check("pulling" not in again.stderr, again.stderr)
        check(len(hub.requests()) == asked, "the second run asked the hub")
        check(again.stdout == result.stdout, "the same greedy answer the second time")
    with open(os.path.join(models, "notes.gguf"), "w") as junk:
        junk.write("not a model")
    shutil.copyfile(context.fixture_artifact(TINY, "q8_0"), os.path.join(models, "mine.gguf"))
    listed = kipp("list", "--models-dir", models)
    expect_success(listed, "kipp list")
    rows = listed.stdout.splitlines()
    check(len(rows) == 4 and rows[0].split()[:4] == ["id", "role", "scheme", "size"], listed.stdout)
    check(any(r.split()[:3] == [TINY, "generate", "bf16"] and r.endswith(artifact) for r in rows), listed.stdout)
    check(any("notes.gguf" in r and "not usable" in r for r in rows), listed.stdout)
    check(any(r.split()[:3] == [TINY, "generate", "q8_0"] and "mine.gguf" in r and "named otherwise" in r
              for r in rows), listed.stdout)

    missing = kipp("serve", "--model", "qwen3-0.6b", "--models-dir", models, "--port", "0")
    check(missing.returncode == 1 and f"qwen3-0.6b is not in {models}: `kipp pull qwen3-0.6b`" in missing.stderr,
          missing.stderr)
    served = subprocess.Popen([context.kipp, "serve", "--model", TINY, "--models-dir", models, "--port", "0"],
                              stderr=subprocess.PIPE, text=True)
    log = ""
    try:
        for line in served.stderr:
            log += line
            if "ready" in line:
                break
    finally:
        served.terminate()
        served.wait(timeout=30)
    check(f"kipp serve: {TINY} on" in log and "ready" in log, log)

    removed = kipp("rm", TINY, "--models-dir", models)
    expect_success(removed, "kipp rm")
    check(not os.path.exists(artifact), "the artifact is still there")
    check(not os.path.exists(download_dir(context, models, TINY)), "the download is still there")
    again = kipp("rm", TINY, "--models-dir", models)
    check(again.returncode == 1 and "is not in" in again.stderr, again.stderr)
    refused = context.pull(EMBEDDING, models, "http://127.0.0.1:9", command="run")
    check(refused.returncode == 1 and "kipp run serves the role generate" in refused.stderr, refused.stderr)


def scenario_resume(context):
    """Interrupted transfers: a connection dropped mid-file resumes with a Range request to the CDN
    (after a 503 that is retried); a .part left by an earlier run resumes too, through the hub's
    relative redirect; a server that ignores Range (200 for a Range request) makes the .part start
    over cleanly."""
    models = context.models_dir("models")
    dl = download_dir(context, models, TINY)
    os.makedirs(dl)
    planted = {"tokenizer_config.json": 4096, "tokenizer.json": 1 << 20}
    for name, length in planted.items():
        with open(os.path.join(context.source_dir(TINY), name), "rb") as src, \
                open(os.path.join(dl, name + ".part"), "wb") as part:
            part.write(src.read(length))
    drop_at = 5 << 20
    with context.server(TINY, "--drop", f"model.safetensors:{drop_at}", "--status", "/repos/:503:1",
                        "--ignore-range", "tokenizer.json") as hub:
        result = context.pull(TINY, models, hub.url)
        expect_success(result, "pull with interruptions")
        check_artifact(context, result, models, TINY, "bf16")
        ranges = [r for r in hub.requests() if r["range"]]
        check(any(r["range"] == f"bytes={drop_at}-" and r["server"] == "cdn" for r in ranges),
              f"no Range request to the CDN resumed model.safetensors at byte {drop_at}: {ranges}")
        check("connection dropped" in result.stderr, result.stderr)
        check("503" in result.stderr and "retrying" in result.stderr, result.stderr)
        check(any(r["range"] == "bytes=4096-" and r["path"].startswith("/api/resolve-cache/")
                  and r["path"].endswith("/tokenizer_config.json") for r in ranges),
              f"the earlier tokenizer_config.json.part was not resumed with a Range request: {ranges}")
        check("resumed at 4.00 KiB" in file_line(result, "tokenizer_config.json"), result.stderr)
        check(any(r["server"] == "cdn" and r["range"] == f"bytes={1 << 20}-" for r in ranges),
              f"no Range request for tokenizer.json: {ranges}")
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
    check(os.path.isfile(os.path.join(dl, "model-00001-of-00005.safetensors")), "a verified shard was not kept")

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
    """Nothing listens at the endpoint: one line with the offline hint, exit status 3, quickly, and
    nothing written. HF_HUB_OFFLINE refuses the network outright."""
    port = closed_port()
    models = context.models_dir("models")
    result = context.pull(TINY, models, f"http://127.0.0.1:{port}")
    expect_failure(result, "pull from an unreachable endpoint", f"127.0.0.1 port {port}", "kipp convert")
    check(result.returncode == 3, f"an unreachable hub should exit 3, got {result.returncode}")
    check(result.seconds < 15, f"took {result.seconds:.1f}s to give up on a refused connection")
    check(not os.path.exists(models), "a pull from an unreachable hub created the models directory")

    result = context.pull(TINY, models, f"http://127.0.0.1:{port}", env={"HF_HUB_OFFLINE": "1"})
    expect_failure(result, "HF_HUB_OFFLINE without the checkpoint in the cache", "HF_HUB_OFFLINE",
                   "not in the Hugging Face cache")

    # A hub that goes away after the listing: the download folder it made is removed again when empty.
    with context.server(TINY, "--status", "/resolve/:404") as hub:
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "every file 404", "config.json", "404")
        check(result.returncode == 1, f"a 404 is not being offline: exit {result.returncode}")
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
    """HTTP errors, a broken listing, no listing at all (HEAD probes that read the hub's own redirect
    and never ask the CDN, which refuses HEAD), a models dir that cannot be made."""
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
        heads = [r for r in hub.requests() if r["method"] == "HEAD"]
        check(heads and all(r["server"] == "hub" for r in heads), f"a HEAD probe reached the CDN: {heads}")


def scenario_token(context):
    """A repository that needs a token: without one, or with a wrong one, one line that says so; with
    --token, HF_TOKEN or the saved login token file, the hub gets `Authorization: Bearer` on every
    request and the CDN never does. HF_ENDPOINT stands in for --endpoint."""
    with context.server(TINY, "--require-token", TOKEN) as hub:
        models = context.models_dir("no-token")
        result = context.pull(TINY, models, hub.url)
        expect_failure(result, "no token", "401", "needs a token", "HF_TOKEN")
        result = context.pull(TINY, models, hub.url, extra=["--token", "hf_wrong"])
        expect_failure(result, "a wrong token", "403", "refused the token")
        check(not leftovers(models), f"left {leftovers(models)}")

        models = context.models_dir("token")
        result = context.pull(TINY, models, extra=["--token", TOKEN], env={"HF_ENDPOINT": hub.url})
        expect_success(result, "pull with --token and HF_ENDPOINT")
        check_artifact(context, result, models, TINY, "bf16")
        successful = [r for r in hub.hub_requests() if r["authorization"] == f"Bearer {TOKEN}"]
        check(successful, "the hub never saw the token")
        cdn = hub.cdn_requests()
        check(cdn and not any(r["authorization"] for r in cdn), f"the token reached the CDN: {cdn}")

        token_file = os.path.join(context.work, "saved-token")
        with open(token_file, "w") as handle:
            handle.write(TOKEN + "\n")
        for env in ({"HF_TOKEN": TOKEN}, {"HF_TOKEN_PATH": token_file}):
            models = context.models_dir("token-" + next(iter(env)))
            result = context.pull(TINY, models, hub.url, env=env)
            expect_success(result, f"pull with {env}")


def scenario_published(context):
    """`kipp pull qwen3-0.6b` end to end on a full-size replica of Qwen/Qwen3-0.6B at its pinned
    revision (one 1,503,300,328-byte model.safetensors with 311 tensors, the stored tied head among
    them), against a hub that behaves as the real one: the listing paginated and first answered 429
    with Retry-After, a token required, LFS files behind signed CDN URLs, the weights' connection
    dropped mid-file and the signed URL handed out for the resume already expired."""
    source = context.source_dir(QWEN3_06B)
    check(os.path.getsize(os.path.join(source, "model.safetensors")) == 1503300328,
          "the shape fixture is not the published Qwen3-0.6B layout")
    models = context.models_dir("models")
    drop_at = 300 << 20
    with context.server(QWEN3_06B, "--page-size", "4", "--status", "/tree/:429:1:2", "--require-token", TOKEN,
                        "--drop", f"model.safetensors:{drop_at}", "--expire", "model.safetensors:2") as hub:
        result = context.pull(QWEN3_06B, models, hub.url, env={"HF_TOKEN": TOKEN}, timeout=600)
        expect_success(result, "pull qwen3-0.6b")
        artifact = os.path.join(models, "qwen3-0.6b.bf16.gguf")
        check(result.stdout.strip() == artifact, f"stdout should be {artifact}, got {result.stdout!r}")

        listings = [r for r in hub.hub_requests() if "/tree/" in r["path"]]
        check(len(listings) >= 4, f"the paginated listing was not followed: {listings}")
        check(listings[1]["time"] - listings[0]["time"] >= 1.9,
              f"the retry after a 429 with Retry-After: 2 came {listings[1]['time'] - listings[0]['time']:.2f}s later")
        check("Retry-After" in result.stderr, result.stderr)

        resolves = [r for r in hub.hub_requests() if r["path"].endswith("/resolve/" + context.entries[QWEN3_06B]
                    ["revision"] + "/model.safetensors")]
        check(len(resolves) == 3, f"expected the hub to sign three URLs (first, resume, fresh), saw {resolves}")
        check("refused the hub's signed URL" in result.stderr, result.stderr)
        check(any(r["server"] == "cdn" and r["range"] == f"bytes={drop_at}-" for r in hub.requests()),
              "the weights were not resumed at the byte the connection dropped")
        check(all(r["authorization"] == f"Bearer {TOKEN}" for r in hub.hub_requests()),
              "a hub request went without the token")
        check(not any(r["authorization"] for r in hub.cdn_requests()), "the token reached the CDN")
        check("verified: SHA-256" in file_line(result, "model.safetensors"), result.stderr)
        check("differs from model.embed_tokens.weight in" in stored_head_line(result), result.stderr)
    inspect = subprocess.run([context.kipp, "inspect", artifact], capture_output=True, text=True, timeout=120)
    check(inspect.returncode == 0 and "qwen3-0.6b" in inspect.stdout, f"kipp inspect: {inspect.stdout}{inspect.stderr}")
    check_logits_equal_shape_fixture(context, artifact)


def scenario_hf_cache(context):
    """The same files in a Hugging Face cache layout: with the hub unreachable (and with
    HF_HUB_OFFLINE) pull verifies each blob against its name and converts the snapshot where it lies,
    copying nothing; a damaged blob is one line naming it."""
    cache = os.path.join(context.work, "hf-cache")
    snapshot = make_hf_cache(context, QWEN3_06B, cache)
    models = context.models_dir("models")
    result = context.pull(QWEN3_06B, models, f"http://127.0.0.1:{closed_port()}",
                          env={"HF_HUB_CACHE": cache, "HF_HUB_OFFLINE": "1"}, timeout=600)
    expect_success(result, "pull from the HF cache with the hub unreachable")
    check(f"using the Hugging Face cache: {snapshot}" in result.stderr, result.stderr)
    line = file_line(result, "model.safetensors")
    check("in the Hugging Face cache; verified: SHA-256" in line and "HF cache blob name" in line, result.stderr)
    check("verified: git blob SHA-1" in file_line(result, "config.json"), result.stderr)
    check(not os.path.exists(os.path.join(models, ".downloads")), "the cached checkpoint was copied")
    check_logits_equal_shape_fixture(context, os.path.join(models, "qwen3-0.6b.bf16.gguf"))

    # A snapshot that lacks a file is not used: pull says so and goes to the hub (unreachable here).
    partial = os.path.join(context.work, "hf-cache-partial")
    tiny_snapshot = make_hf_cache(context, TINY, partial)
    os.remove(os.path.join(tiny_snapshot, "tokenizer.json"))
    result = context.pull(TINY, context.models_dir("partial"), f"http://127.0.0.1:{closed_port()}",
                          env={"HF_HUB_CACHE": partial})
    expect_failure(result, "an incomplete snapshot and no hub", "127.0.0.1")
    check("holds part of this snapshot (missing tokenizer.json)" in result.stderr, result.stderr)

    # A blob whose bytes no longer match its name.
    damaged = os.path.join(context.work, "hf-cache-damaged")
    tiny_snapshot = make_hf_cache(context, TINY, damaged)
    config = os.path.join(tiny_snapshot, "config.json")
    blob = os.path.realpath(config)
    os.remove(blob)  # a hard link of the fixture: replace it rather than edit the fixture
    with open(os.path.join(context.source_dir(TINY), "config.json"), "rb") as handle:
        data = bytearray(handle.read())
    data[10] ^= 0xFF
    with open(blob, "wb") as handle:
        handle.write(data)
    result = context.pull(TINY, context.models_dir("damaged"), f"http://127.0.0.1:{closed_port()}",
                          env={"HF_HUB_CACHE": damaged})
    expect_failure(result, "a damaged blob", os.path.basename(blob), "damaged", "--no-hf-cache")

    # --no-hf-cache ignores the cache.
    result = context.pull(TINY, context.models_dir("no-cache"), f"http://127.0.0.1:{closed_port()}",
                          extra=["--no-hf-cache"], env={"HF_HUB_CACHE": cache})
    expect_failure(result, "--no-hf-cache and no hub", "offline?")


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--test-models", required=True)
    parser.add_argument("--shape-models", help="the shape fixture (the published Qwen3-0.6B layout at full size)")
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
