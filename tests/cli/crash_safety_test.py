#!/usr/bin/env python3
"""Crash safety on disk: `kipp convert` and `kipp pull` are SIGKILLed at seeded random points, and
after every kill each file under a final name is either what was there before the run or complete
and right, and whatever else is left is something no later run and no loader takes for finished.

  crash_safety_test.py --command convert|pull --kipp KIPP --test-models DIR --work DIR
                       [--hub-server tests/pull/hub_server.py] [--seed N] [--points N]

Kills come in groups of KILLS_PER_GROUP on one state, each run starting from what the last kill
left (a pull resumes its downloads), and a rerun to completion ends each group. Odd groups start
with an older artifact (the q8_0 conversion) under the output's name. Every other run is killed
after a delay drawn over the length of an uninterrupted run, measured first (one delay is 0: the
process dies as it starts); the rest once they have written a share, drawn over 0..1, of the
bytes they have to write, as the kernel counts their writes (/proc/PID/io), whatever names they
write under (one share is 1: every byte written, the final sync and rename under way). After each
kill:

- the output is as it was before that run (absent, or the older file), or byte for byte the
  fixture's conversion of the same source, which `kipp inspect` accepts;
- convert: the only other files allowed are temporaries "OUT.tmp.PID" of this group's killed runs;
- pull: the same temporaries of the artifact, and in the download folder files that equal the hub's
  and FILE.part files that are prefixes of them (what a resumed pull trusts);
- the rerun exits 0 with the reference bytes and leaves no temporary or .part.

Pull also gets a .part torn as a power loss leaves one (zeros where the disk never got the bytes),
which must cost a fresh transfer of that file, not the pull. The seed is printed first; `--seed N`
repeats a run's kill points (where the kills land still depends on the machine's speed). No
assertion depends on wall-clock time.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

TIED, UNTIED = "kipp-test/qwen3-tiny", "kipp-test/qwen3-tiny-untied"
NOT_PULLED = {".gitattributes", "README.md", "merges.txt", "vocab.json"}  # in the repository, not needed
KILLS_PER_GROUP = 4
TRANSFER_S = 2.0  # how long the throttled hub takes to send the whole checkpoint
POLL_S = 0.001


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def bytes_written(pid):
    """What a process has written so far (write calls on any file, pipe or socket), whatever the
    names it writes under: the kernel's count in /proc/PID/io. 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/io") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith("wchar:"))
    except (OSError, StopIteration):
        return 0


class Digests:
    """SHA-256 of files, remembered by inode, size and modification time: a file a kill left alone
    is not read again."""

    def __init__(self):
        self.known = {}

    def __call__(self, path):
        """The file's SHA-256, or None when there is no file."""
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return None
        key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
        if key not in self.known:
            self.known[key] = hashlib.sha256(read(path)).hexdigest()
        return self.known[key]


class Harness:
    """Runs a command under test, kills it at planned points and checks what each kill leaves."""

    def __init__(self, args):
        self.args = args
        self.kipp = args.kipp
        self.seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
        print(f"seed {self.seed} (rerun with --seed {self.seed})", flush=True)
        self.random = random.Random(self.seed)
        self.work = args.work
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.digest = Digests()
        self.inspected = set()
        self.stats = {}

    def plan(self, run_seconds):
        """The kill points (see the module's docstring)."""
        points = [("delay", self.random.uniform(0.0, run_seconds)) if i % 2 == 0
                  else ("bytes", self.random.uniform(0.0, 1.0)) for i in range(self.args.points)]
        points[self.random.randrange(0, len(points), 2)] = ("delay", 0.0)
        points[self.random.randrange(1, len(points), 2)] = ("bytes", 1.0)
        return points

    def run(self, command, what, env=None):
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        check(result.returncode == 0, f"{what}: exit {result.returncode}\n{result.stderr}")
        return result

    def run_killed(self, subject, point):
        """Starts the subject's command and SIGKILLs it at `point`; returns its pid and whether the
        kill landed (False: it had finished first)."""
        kind, value = point
        to_write = subject.bytes_to_write()
        log_path = os.path.join(self.work, "killed-run.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(subject.killed_command(), stdout=log, stderr=log, env=subject.env)
        if kind == "delay":
            try:
                process.wait(timeout=value)
            except subprocess.TimeoutExpired:
                pass
        else:
            while process.poll() is None and bytes_written(process.pid) < value * to_write:
                time.sleep(POLL_S)
        # Until it is waited for, an exited child stays a zombie: its pid cannot be reused meanwhile.
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        returncode = process.wait()
        landed = returncode == -signal.SIGKILL
        with open(log_path) as log:
            check(landed or returncode == 0, f"exit {returncode} before the kill:\n{log.read()}")
        return process.pid, landed

    def inspect_once(self, path, what):
        """`kipp inspect` of a file, unless this very file (the same inode) passed it already."""
        key = (path, os.stat(path).st_ino)
        if key not in self.inspected:
            self.run([self.kipp, "inspect", path], f"{what}: kipp inspect {path}")
            self.inspected.add(key)

    def check_output(self, subject, before, where):
        """The output after a kill: the reference (then inspected), or as it was before the run."""
        after = self.digest(subject.final())
        if after == subject.reference:
            self.inspect_once(subject.final(), where)
            return "complete"
        check(after == before, f"{where}: {subject.final()} ({'absent' if after is None else after[:12]}) is "
              f"neither what was there before the run ({'absent' if before is None else before[:12]}) nor the "
              "reference")
        return "absent" if after is None else "previous"

    def kill_at_random_points(self, subject):
        # The second of two uninterrupted runs gives the length the delays are drawn over: the first
        # is slower (a cold start), and drawn over its length more kills would come too late.
        for what in ("a first uninterrupted run", "a second uninterrupted run"):
            subject.start_group(0)
            started = time.monotonic()
            subject.check_complete(self.run(subject.killed_command(), what, subject.env), what)
        points = self.plan(time.monotonic() - started)
        self.inspect_once(subject.final(), "an uninterrupted run")
        for number, point in enumerate(points, 1):
            if (number - 1) % KILLS_PER_GROUP == 0:
                subject.start_group((number - 1) // KILLS_PER_GROUP)
                pids = []  # this group's killed runs: each may have left a temporary
            before = self.digest(subject.final())
            pid, landed = self.run_killed(subject, point)
            pids.append(pid)
            where = f"seed {self.seed}, point {number} ({format_point(point)}, pid {pid})"
            state = self.check_output(subject, before, where)
            others = subject.check_others(pids, where)
            self.count("killed" if landed else "finished before the kill")
            self.count(f"left the output {state}")
            for note in others:
                self.count(f"left {note}")
            print(f"point {number}: {format_point(point)}: {'killed' if landed else 'finished'}, output {state}"
                  + "".join(f", {note}" for note in others), flush=True)
            if number % KILLS_PER_GROUP == 0 or number == len(points):
                what = f"{where}: the rerun"
                subject.check_complete(self.run(subject.rerun_command(), what, subject.env), what)

    def count(self, key):
        self.stats[key] = self.stats.get(key, 0) + 1

    def summary(self):
        return ", ".join(f"{value} {key}" for key, value in sorted(self.stats.items()))


def format_point(point):
    kind, value = point
    return f"after {value * 1000:.0f} ms" if kind == "delay" else f"at {value:.0%} of its bytes"


# --- kipp convert --------------------------------------------------------------------------------

class Convert:
    """kipp-test/qwen3-tiny to bf16; the older file is its q8_0 conversion."""

    def __init__(self, h):
        self.h = h
        source = os.path.join(h.args.test_models, "src", "qwen3-tiny")
        reference = os.path.join(h.args.test_models, "qwen3-tiny.bf16.gguf")
        self.reference, self.size = h.digest(reference), os.path.getsize(reference)
        self.previous = os.path.join(h.args.test_models, "qwen3-tiny.q8_0.gguf")
        self.out_dir = os.path.join(h.work, "out")
        self.out = os.path.join(self.out_dir, "model.gguf")
        self.command = [h.kipp, "convert", "--checkpoint", TIED, "--source", source, "--out", self.out]
        self.env = None

    def final(self):
        return self.out

    def killed_command(self):
        return self.command

    def rerun_command(self):
        return self.command

    def start_group(self, group):
        shutil.rmtree(self.out_dir, ignore_errors=True)
        os.makedirs(self.out_dir)
        if group % 2 == 1:
            shutil.copyfile(self.previous, self.out)

    def bytes_to_write(self):
        return self.size

    def check_others(self, pids, where):
        others = set(os.listdir(self.out_dir)) - {"model.gguf"}
        unexpected = others - {f"model.gguf.tmp.{pid}" for pid in pids}
        check(not unexpected, f"{where}: unexpected files beside the output: {sorted(unexpected)}")
        return [f"{len(others)} temporary file(s)"] if others else []

    def check_complete(self, _result, what):
        check(self.h.digest(self.out) == self.reference, f"{what}: {self.out} differs from the reference conversion")
        check(os.listdir(self.out_dir) == ["model.gguf"], f"{what}: left {sorted(os.listdir(self.out_dir))}")


# --- kipp pull -----------------------------------------------------------------------------------

class Hub:
    """hub_server.py serving one checkpoint, at a given rate (0: as fast as it can)."""

    def __init__(self, h, repository, revision, source, rate):
        command = [sys.executable, h.args.hub_server, "--repo", repository, revision, source,
                   "--hash-cache", os.path.join(h.work, "hub-hash-cache.json"), "--rate", str(rate)]
        # A killed pull breaks the connection under a handler; the server's tracebacks go to a log.
        self.log = open(os.path.join(h.work, f"hub-{rate:.0f}.log"), "w")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, text=True)
        port = self.process.stdout.readline().strip()
        check(port.isdigit(), f"hub_server.py did not start (printed {port!r})")
        self.url = f"http://127.0.0.1:{port}"

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()


class Pull:
    """kipp-test/qwen3-tiny-untied (an index and five shards) into a models folder per group, from a
    hub throttled to TRANSFER_S seconds for the whole checkpoint; the reruns from an unthrottled one.
    The older file is the q8_0 artifact."""

    def __init__(self, h):
        self.h = h
        registry = json.loads(h.run([h.kipp, "registry", "--json"], "kipp registry").stdout)
        self.revision = next(e for e in registry["checkpoints"] if e["id"] == UNTIED)["revision"]
        source = os.path.join(h.args.test_models, "src", "qwen3-tiny-untied")
        self.published = {name: read(os.path.join(source, name)) for name in os.listdir(source)
                          if name not in NOT_PULLED}
        self.published_digests = {name: hashlib.sha256(data).hexdigest() for name, data in self.published.items()}
        self.download_bytes = sum(len(data) for data in self.published.values())
        reference = os.path.join(h.args.test_models, "qwen3-tiny-untied.bf16.gguf")
        self.reference, self.size = h.digest(reference), os.path.getsize(reference)
        self.previous = os.path.join(h.args.test_models, "qwen3-tiny-untied.q8_0.gguf")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        self.env["HF_HUB_CACHE"] = os.path.join(h.work, "no-hf-cache")
        self.env["HF_HOME"] = os.path.join(h.work, "no-hf-home")
        self.models = None
        self.older_artifact = False
        self.fast = Hub(h, UNTIED, self.revision, source, 0)
        self.slow = Hub(h, UNTIED, self.revision, source, self.download_bytes / TRANSFER_S)

    def close(self):
        self.fast.close()
        self.slow.close()

    def final(self):
        return os.path.join(self.models, UNTIED.replace("/", "_") + ".bf16.gguf")

    def downloads(self):
        return os.path.join(self.models, ".downloads", UNTIED.replace("/", "_"), self.revision)

    def pull_command(self, hub):
        return [self.h.kipp, "pull", UNTIED, "--models-dir", self.models, "--endpoint", hub.url]

    def killed_command(self):
        return self.pull_command(self.slow)

    def rerun_command(self):
        return self.pull_command(self.fast)

    def start_group(self, group):
        self.fresh_folder(f"models-{group}")
        self.older_artifact = group % 2 == 1
        if self.older_artifact:
            os.makedirs(self.models)
            shutil.copyfile(self.previous, self.final())

    def fresh_folder(self, name):
        if self.models:
            shutil.rmtree(self.models, ignore_errors=True)
        self.models = os.path.join(self.h.work, name)

    def files(self):
        return [os.path.join(root, name) for root, _, names in os.walk(self.models) for name in names]

    def downloaded_bytes(self):
        downloaded = 0
        for name in os.listdir(self.downloads()) if os.path.isdir(self.downloads()) else []:
            try:
                downloaded += os.path.getsize(os.path.join(self.downloads(), name))
            except FileNotFoundError:  # renamed between the listing and the stat
                pass
        return downloaded

    def bytes_to_write(self):
        """Groups without an older artifact are about resuming transfers: while anything is left to
        download, their runs are killed at a share of that. The others, whose kills must leave the
        older artifact or the new one, at a share of all a run writes: what is left to download and
        the artifact (a pull converts anew every time)."""
        left = self.download_bytes - self.downloaded_bytes()
        return left if left > 0 and not self.older_artifact else left + self.size

    def check_others(self, pids, where):
        temporaries = {f"{self.final()}.tmp.{pid}" for pid in pids}
        parts = 0
        for path in self.files():
            if path == self.final() or path in temporaries:
                continue
            name = os.path.basename(path)
            base = name[:-len(".part")] if name.endswith(".part") else name
            check(os.path.dirname(path) == self.downloads() and base in self.published,
                  f"{where}: unexpected file {path}")
            if name.endswith(".part"):
                parts += 1
                data = read(path)
                check(self.published[base].startswith(data),
                      f"{where}: {path} is not a prefix of the hub's {base} ({len(data)} bytes)")
            else:
                check(self.h.digest(path) == self.published_digests[name], f"{where}: {path} differs from the hub's")
        left = sum(os.path.exists(path) for path in temporaries)
        return ([f"{parts} .part file(s)"] if parts else []) + ([f"{left} temporary artifact(s)"] if left else [])

    def check_complete(self, result, what):
        check(result.stdout.strip() == self.final(), f"{what}: stdout {result.stdout!r}, expected {self.final()}")
        check(self.h.digest(self.final()) == self.reference,
              f"{what}: {self.final()} differs from the reference conversion")
        for path in self.files():
            name = os.path.basename(path)
            if path != self.final():
                check(os.path.dirname(path) == self.downloads() and name in self.published, f"{what}: left {path}")
                check(self.h.digest(path) == self.published_digests[name], f"{what}: {path} differs from the hub's")

    def torn_part(self):
        """A .part of the length an earlier run reached whose last 4 KiB never reached the disk (zeros,
        as a power loss can leave it): the resumed file fails verification and is fetched afresh."""
        self.fresh_folder("models-torn")
        os.makedirs(self.downloads())
        shard = "model-00002-of-00005.safetensors"
        torn = bytearray(self.published[shard][:len(self.published[shard]) // 2])
        torn[-4096:] = bytes(4096)
        with open(os.path.join(self.downloads(), shard + ".part"), "wb") as handle:
            handle.write(torn)
        what = "a pull resuming a torn .part"
        result = self.h.run(self.rerun_command(), what, self.env)
        self.check_complete(result, what)
        check(f"{shard}: the download resumed from an earlier partial file does not verify" in result.stderr,
              f"{what} did not say it started that file over:\n{result.stderr}")


def test_convert(h):
    h.kill_at_random_points(Convert(h))


def test_pull(h):
    pull = Pull(h)
    try:
        h.kill_at_random_points(pull)
        pull.torn_part()
    finally:
        pull.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--command", required=True, choices=("convert", "pull"))
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--test-models", required=True, help="the fixture's test models (sources and artifacts)")
    parser.add_argument("--work", required=True)
    parser.add_argument("--hub-server", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                             "pull", "hub_server.py"))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--points", type=int, default=20)
    args = parser.parse_args()
    if args.points < 2:
        parser.error("--points: at least 2 (one kill at the start, one with every byte written)")
    started = time.monotonic()
    h = Harness(args)
    try:
        (test_convert if args.command == "convert" else test_pull)(h)
    except Failure as failure:
        print(f"FAIL {args.command} kill -9 (seed {h.seed}): {failure}\nfiles kept in {h.work}", file=sys.stderr)
        return 1
    print(f"ok {args.command} kill -9, {args.points} points ({h.summary()}; {time.monotonic() - started:.1f}s)")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
