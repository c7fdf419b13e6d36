"""End-to-end checks of the kipp CLI: registry, inspect and convert as a user runs them.

Exit codes, stdout and the one-line stderr errors are part of the contract (docs/ARCHITECTURE.md,
"Conventions").
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import sys
import unittest

ARGS = None


def kipp(*args):
    return subprocess.run([ARGS.kipp, *args], capture_output=True, text=True, timeout=120)


class Registry(unittest.TestCase):
    def test_json_lists_every_entry_with_every_field(self):
        run = kipp("registry", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        entries = json.loads(run.stdout)["checkpoints"]
        self.assertEqual(len(entries), 40)
        fields = {"id", "repository", "revision", "variant", "role", "has_head", "architecture", "layers", "hidden",
                  "ffn", "q_heads",
                  "kv_heads",
                  "head_dim", "vocab", "context", "rope_theta", "rms_norm_eps", "tied", "stop_ids", "synthetic",
                  "attention_width", "eos_id", "tensor_count", "source_tensor_count", "stores_tied_head",
                  "parameter_count", "kv_bytes_per_token"}
        for entry in entries:
            self.assertLessEqual(fields, set(entry), entry["id"])
            self.assertEqual(entry["attention_width"], entry["q_heads"] * 128)
            self.assertEqual(entry["kv_bytes_per_token"], entry["layers"] * 2 * entry["kv_heads"] * 128 * 2)
            self.assertEqual(entry["kv_heads"], 4 if entry["architecture"] == "moe" else 8, entry["id"])
            if entry["role"] == "embed":
                self.assertEqual(entry["embedding"]["pooling"], "last_token")
                self.assertTrue(entry["embedding"]["appends_endoftext"])
                self.assertEqual(entry["embedding"]["matryoshka_dims"], [32, entry["hidden"]])
            if entry["role"] == "rerank":
                self.assertEqual(entry["rerank"], {"token_yes": 9693, "token_no": 2152})
        variants = {e["id"]: e["variant"] for e in entries}
        self.assertEqual(variants["qwen3-4b-instruct-2507"], "instruct-2507")
        self.assertEqual(variants["kipp-test/qwen3-tiny-untied"], "base")
        self.assertEqual(variants["kipp-test/qwen3-coder-tiny"], "coder")

    def test_table_has_a_row_per_entry(self):
        run = kipp("registry")
        self.assertEqual(run.returncode, 0)
        rows = [line for line in run.stdout.splitlines()[1:] if line.strip()]
        self.assertEqual(len(rows), 40)
        self.assertIn("Qwen/Qwen3-32B@9216db5781bf", run.stdout)
        self.assertRegex(run.stdout, r"qwen3-30b-a3b +generate +instruct +8/128 +48 +2048 +768 +32/4 ")
        self.assertRegex(run.stdout, r"qwen3-embedding-4b +embed +base +dense +36 +2560 ")
        self.assertRegex(run.stdout, r"qwen3-reranker-8b +rerank +instruct +dense +36 +4096 .* no ")


class Inspect(unittest.TestCase):
    def test_valid_artifact(self):
        run = kipp("inspect", os.path.join(ARGS.models, "qwen3-tiny.q8_0.gguf"))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("verdict          OK: a valid kipp-test/qwen3-tiny artifact", run.stdout)
        self.assertIn("quant scheme     q8_0", run.stdout)
        self.assertIn("KV bytes/token   8192", run.stdout)  # 2 layers x K,V x 8 heads x 128 x 2 bytes
        self.assertIn("KV bytes/token   4352 (Q8_0", run.stdout)  # 2 x 2 x 32 blocks x 34 bytes
        self.assertIn("blk.1.ffn_down.weight", run.stdout)
        self.assertIn("24 tensors", run.stdout)  # 2 + 11 * 2, tied

    def test_rejected_artifact_reports_what_it_read_and_why(self):
        path = os.path.join(ARGS.scratch, "cut.gguf")
        with open(os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf"), "rb") as src, open(path, "wb") as dst:
            dst.write(src.read(50_000_000))
        run = kipp("inspect", path)
        self.assertEqual(run.returncode, 1)
        self.assertIn("INVALID: truncated file", run.stdout)
        self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)
        self.assertTrue(run.stderr.startswith("kipp: " + path), run.stderr)

    def test_not_a_gguf(self):
        path = os.path.join(ARGS.scratch, "text.gguf")
        with open(path, "w") as f:
            f.write("hello")
        run = kipp("inspect", path)
        self.assertEqual(run.returncode, 1)
        self.assertIn("bad magic", run.stderr)


class Convert(unittest.TestCase):
    def test_errors_are_one_line(self):
        cases = [
            (["convert", "--checkpoint", "qwen3-99b", "--source", ARGS.scratch, "--out", "x.gguf"], "not in the Kipp registry"),
            (["convert", "--checkpoint", "kipp-test/qwen3-tiny", "--source", "/nonexistent", "--out", "x.gguf"],
             "/nonexistent/config.json: cannot open"),
        ]
        for argv, fragment in cases:
            run = kipp(*argv)
            self.assertEqual(run.returncode, 1, run.stderr)
            self.assertIn(fragment, run.stderr)
            self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)

    def test_unknown_quant_is_a_usage_error(self):
        run = kipp("convert", "--checkpoint", "kipp-test/qwen3-tiny", "--source", ARGS.scratch, "--quant", "q3", "--out", "x")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("q3", run.stderr)

    def test_conversion_is_deterministic(self):
        out = os.path.join(ARGS.scratch, "again.affine4_gs32.gguf")
        run = kipp("convert", "--checkpoint", "kipp-test/qwen3-tiny", "--source", os.path.join(ARGS.models, "src", "qwen3-tiny"),
                   "--quant", "affine4_gs32", "--out", out)
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(out, "rb") as a, open(os.path.join(ARGS.models, "qwen3-tiny.affine4_gs32.gguf"), "rb") as b:
            self.assertTrue(a.read() == b.read(), "two conversions of the same source differ")


class Logits(unittest.TestCase):
    def test_writes_one_row_per_requested_position(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        out = os.path.join(ARGS.scratch, "rows.f32")
        run = kipp("logits", "--model", model, "--ids", "9707,11,1879", "--all-positions", "--out", out)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(os.path.getsize(out), 3 * 151936 * 4)
        run = kipp("logits", "--model", model, "--ids", "9707,11,1879", "--out", out)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(os.path.getsize(out), 151936 * 4)

    def test_bad_input_is_one_line_and_writes_nothing(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        out = os.path.join(ARGS.scratch, "bad.f32")
        cases = [("151936", [], "outside the vocabulary"), ("1,x", [], "\"x\" is not a token id"),
                 ("", [], "is not a token id"), ("1,2", ["--backend", "gpu9"], "unknown backend 'gpu9'")]
        for ids, extra, fragment in cases:
            run = kipp("logits", "--model", model, "--ids", ids, "--out", out, *extra)
            self.assertEqual(run.returncode, 1, run.stderr)
            self.assertIn(fragment, run.stderr)
            self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)
            self.assertFalse(os.path.exists(out))


class Bench(unittest.TestCase):
    def test_json_reports_every_figure_with_its_spread(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.q8_0.gguf")
        run = kipp("bench", "--model", model, "-p", "40", "-n", "4", "--depth", "64", "--reps", "3", "--batch", "3",
                   "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        report = json.loads(run.stdout)
        self.assertEqual(report["checkpoint"], "kipp-test/qwen3-tiny")
        self.assertTrue(report["backend"].startswith("cpu ("), report["backend"])
        for figure in ("load_seconds", "prefill_tokens_per_second", "decode_tokens_per_second",
                       "decode_at_depth_tokens_per_second", "batch_decode_tokens_per_second"):
            summary = report[figure]["3"] if figure.startswith("batch") else report[figure]
            self.assertEqual(len(summary["samples"]), 3, figure)
            self.assertTrue(0 < summary["min"] <= summary["median"] <= summary["max"], (figure, summary))
        # KV for 64 + 4 positions rounds up to 3 blocks of 32; 2 layers x 2 x 1024 x 2 bytes per position.
        self.assertEqual(report["kv_cache_bytes"], 96 * 2 * 2 * 1024 * 2)
        self.assertGreater(report["copied_weight_bytes"], 0)
        self.assertLess(report["memory_beyond_weights_and_kv_bytes"], 64 << 20)
        # The roofline's bytes, from the tiny config (2 layers, hidden 256, ffn 768, 8 heads of 128,
        # tied): Q8_0 projections (34 bytes per 32 weights), FP32 norms, the BF16 embedding read in
        # full as the output head plus one row for the lookup.
        projections = 3 * 1024 * 256 + 256 * 1024 + 3 * 768 * 256
        norms = 256 + 128 + 128 + 256
        embedding = 151936 * 256 * 2
        expected = 2 * (projections // 32 * 34 + norms * 4) + 256 * 4 + embedding + 256 * 2
        self.assertEqual(report["weight_bytes_per_token"], expected)
        self.assertGreater(report["read_bandwidth_gb_per_s"], 0)
        self.assertAlmostEqual(report["decode_roofline_tokens_per_second"],
                               report["read_bandwidth_gb_per_s"] * 1e9 / expected, delta=1e-6)

    def test_q8_0_kv_cache_is_reported_and_takes_its_bytes(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        run = kipp("bench", "--model", model, "-p", "8", "-n", "2", "--reps", "1", "--kv-cache", "q8_0", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        report = json.loads(run.stdout)
        self.assertIn("q8_0 KV cache", report["backend"])
        self.assertEqual(report["kv_cache_format"], "q8_0")
        self.assertEqual(report["kv_bytes_per_token"], 2 * 2 * 32 * 34)
        self.assertEqual(report["kv_cache_bytes"], 32 * 2 * 2 * 32 * 34)  # 10 positions: one block

    def test_an_unknown_kv_cache_format_is_refused(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        run = kipp("bench", "--model", model, "--kv-cache", "q4_0")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("--kv-cache", run.stderr)
        run = kipp("generate", "--model", model, "--prompt", "x", "--backend", "cuda", "--kv-cache", "q8_0")
        self.assertNotEqual(run.returncode, 0)

    def test_refuses_more_than_the_context(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        run = kipp("bench", "--model", model, "-p", "4000", "-n", "200", "--reps", "1")
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("holds 4096", run.stderr)
        self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)


class Generate(unittest.TestCase):
    MODEL = property(lambda self: os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf"))
    # The synthetic model's stop tokens are banned so that runs reach their budget.
    NO_STOP = ["--logit-bias", "151645=-100", "--logit-bias", "151643=-100"]

    def generate(self, *extra):
        return kipp("generate", "--model", self.MODEL, "--prompt", "Once upon a time", *extra)

    def test_streamed_text_is_the_json_text_and_decodes_from_its_tokens(self):
        streamed = self.generate("--greedy", "-n", "12", *self.NO_STOP)
        self.assertEqual(streamed.returncode, 0, streamed.stderr)
        self.assertIn("finish: length", streamed.stderr)
        self.assertRegex(streamed.stderr, r"prompt \d+ tokens at [0-9.]+ tok/s \| generated 12 tokens")
        result = self.generate("--greedy", "-n", "12", "--json", *self.NO_STOP)
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout)
        self.assertEqual(streamed.stdout, report["text"] + "\n")
        self.assertEqual(report["finish_reason"], "length")
        self.assertEqual(len(report["tokens"]), 12)
        self.assertEqual(report["sampling"]["temperature"], 0)
        ids = ",".join(str(t) for t in report["tokens"])
        decoded = kipp("detokenize", "--model", self.MODEL, "--ids", ids)
        self.assertEqual(decoded.returncode, 0, decoded.stderr)
        self.assertEqual(decoded.stdout.rstrip("\n"), report["text"])
        for key in ("prompt_tokens_per_second", "decode_tokens_per_second", "time_to_first_token_seconds"):
            self.assertGreater(report["timings"][key], 0, key)

    def test_a_seed_repeats_and_the_default_seed_is_reported(self):
        runs = [json.loads(self.generate("-n", "10", "--seed", "77", "--temperature", "1.0", "--json",
                                         *self.NO_STOP).stdout) for _ in range(2)]
        self.assertEqual(runs[0]["tokens"], runs[1]["tokens"])
        self.assertEqual(runs[0]["seed"], 77)
        free = json.loads(self.generate("-n", "3", "--json").stdout)
        again = json.loads(self.generate("-n", "3", "--json", "--seed", str(free["seed"])).stdout)
        self.assertEqual(free["tokens"], again["tokens"])
        # The instruct checkpoint's recommended settings apply when no flag is given.
        self.assertEqual(free["sampling"]["top_k"], 20)
        self.assertAlmostEqual(free["sampling"]["temperature"], 0.6, places=6)

    def test_stop_string_cuts_the_text_before_it(self):
        full = json.loads(self.generate("--greedy", "-n", "30", "--json", *self.NO_STOP).stdout)
        text = full["text"]
        stop = text[len(text) // 2:len(text) // 2 + 4]
        self.assertTrue(stop)
        cut = self.generate("--greedy", "-n", "30", "--stop", stop, *self.NO_STOP)
        self.assertEqual(cut.returncode, 0, cut.stderr)
        self.assertEqual(cut.stdout, text[:text.find(stop)] + "\n")
        self.assertIn("finish: stop_string", cut.stderr)

    def test_spec_gives_the_greedy_text_and_needs_greedy(self):
        extra = ["-n", "24", "--json", "--logit-bias", "1000=100", "--logit-bias", "2000=100",
                 "--frequency-penalty", "2"]
        plain = json.loads(self.generate("--greedy", *extra).stdout)
        spec = json.loads(self.generate("--greedy", "--spec", *extra).stdout)
        self.assertEqual(spec["tokens"], plain["tokens"])
        self.assertEqual(spec["text"], plain["text"])
        self.assertGreater(spec["timings"]["draft_tokens"], 0)
        run = self.generate("--spec", "--temperature", "0.8")
        self.assertEqual(run.returncode, 1)
        self.assertIn("needs greedy", run.stderr)

    def test_bad_settings_are_one_line_errors(self):
        cases = [(["--temperature", "-1"], "temperature"), (["--top-p", "0"], "top_p"),
                 (["--min-p", "2"], "min_p"), (["--logit-bias", "7"], "--logit-bias 7"),
                 (["--logit-bias", "999999=1"], "outside the vocabulary"),
                 (["--presence-penalty", "9"], "presence_penalty")]
        for extra, fragment in cases:
            run = self.generate(*extra)
            self.assertEqual(run.returncode, 1, (extra, run.stderr))
            self.assertIn(fragment, run.stderr)
            self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)
            self.assertEqual(run.stdout, "")
        long_prompt = kipp("generate", "--model", self.MODEL, "--prompt", "hello " * 5000)
        self.assertEqual(long_prompt.returncode, 1)
        self.assertIn("the context of", long_prompt.stderr)


class HostileConstraintFiles(unittest.TestCase):
    """Issue 32's second reproduction: `kipp grammar --json-schema` on a schema nested 3,000 levels
    deep segfaulted. Files built to exhaust a compiler are one-line errors naming the limit, from
    `kipp grammar` and from `kipp generate`, never a signal."""
    MODEL = property(lambda self: os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf"))

    def write(self, name, text):
        path = os.path.join(ARGS.scratch, name)
        with open(path, "w") as out:
            out.write(text)
        return path

    def test_each_is_a_one_line_error_naming_the_limit(self):
        deep_pattern = {"type": "string", "pattern": "(" * 4000 + "a" + ")" * 4000}
        ref_chain = {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(300)}, "$ref": "#/$defs/d0"}
        ref_chain["$defs"]["d300"] = {"type": "integer"}
        cases = [
            ("--json-schema", self.write("deep.json", '{"type":"array","items":' * 3000 + "{}" + "}" * 3000),
             "nests deeper than"),
            ("--json-schema", self.write("pattern.json", json.dumps(deep_pattern)), "the limit of 64"),
            ("--json-schema", self.write("refs.json", json.dumps(ref_chain)), "the limit of 256"),
            ("--grammar", self.write("deep.gbnf", "root ::= " + "(" * 5000 + '"a"' + ")" * 5000 + "\n"),
             "nest deeper than 256"),
        ]
        for flag, path, fragment in cases:
            for run in (kipp("grammar", flag, path),
                        kipp("generate", "--model", self.MODEL, "--prompt", "x", "-n", "4", flag, path)):
                self.assertEqual(run.returncode, 1, (flag, path, run.returncode, run.stderr[-300:]))
                self.assertIn(fragment, run.stderr)
                self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr[-300:])


class Perplexity(unittest.TestCase):
    MODEL = property(lambda self: os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf"))

    def test_matches_the_log_softmax_of_the_logits_window_by_window(self):
        import numpy as np
        text = os.path.join(ARGS.scratch, "ppl.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write("Perplexity counts how surprised a model is. " * 6 + "Ünïcödé ✓ 日本語.")
        run = kipp("perplexity", "--model", self.MODEL, "--file", text, "--window", "24", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        report = json.loads(run.stdout)
        ids = json.loads(kipp("tokenize", "--model", self.MODEL, "--file", text, "--json").stdout)["ids"]
        self.assertEqual(report["tokens"], len(ids))
        nll, scored = 0.0, 0
        out = os.path.join(ARGS.scratch, "ppl.f32")
        for begin in range(0, len(ids) - 1, 24):
            window = ids[begin:begin + 24]
            logits_run = kipp("logits", "--model", self.MODEL, "--backend", "cpu", "--all-positions",
                              "--ids", ",".join(map(str, window)), "--out", out)
            self.assertEqual(logits_run.returncode, 0, logits_run.stderr)
            rows = np.fromfile(out, dtype="<f4").reshape(len(window), 151936)[:, :151669].astype(np.float64)
            for r in range(len(window) - 1):
                row = rows[r]
                top = row.max()
                nll += np.log(np.exp(row - top).sum()) + top - row[window[r + 1]]
                scored += 1
        self.assertEqual(report["scored_tokens"], scored)
        self.assertEqual(report["windows"], (len(ids) - 2) // 24 + 1)
        self.assertAlmostEqual(report["mean_nll"], nll / scored, delta=1e-9 * max(1.0, nll / scored))
        self.assertGreater(report["tokens_per_second"], 0)

    def test_bad_input_is_a_one_line_error(self):
        empty = os.path.join(ARGS.scratch, "one-token.txt")
        with open(empty, "w") as f:
            f.write("a")
        for extra, fragment in [(["--file", empty], "at least 2"),
                                (["--file", os.path.join(ARGS.scratch, "missing.txt")], "missing.txt"),
                                (["--file", empty, "--window", "1"], "at least 2 tokens"),
                                (["--file", empty, "--window", "5000"], "longer than the context")]:
            run = kipp("perplexity", "--model", self.MODEL, *extra)
            self.assertEqual(run.returncode, 1, (extra, run.stderr))
            self.assertIn(fragment, run.stderr)
            self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)


class Chat(unittest.TestCase):
    """`kipp chat` driven through a pseudo-terminal, as a person at a terminal would."""
    MODEL = property(lambda self: os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf"))

    def spawn(self, *extra):
        import pty
        import termios
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(ARGS.kipp, [ARGS.kipp, "chat", "--model", self.MODEL, "--greedy", *extra])
        attributes = termios.tcgetattr(fd)
        attributes[3] &= ~termios.ECHO  # what we type is not part of the output
        termios.tcsetattr(fd, termios.TCSANOW, attributes)
        return pid, fd

    def read_until(self, fd, marker, timeout=60):
        import select
        import time
        data = b""
        deadline = time.time() + timeout
        while not data or marker.encode() not in data:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.time()))
            if not ready:
                self.fail(f"timed out waiting for {marker!r}; got {data!r}")
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return data.decode("utf-8", errors="replace").replace("\r\n", "\n")

    @staticmethod
    def plain(text):
        import re
        return re.sub(r"\x1b\[[0-9;]*m", "", text)

    def test_turns_reuse_the_cache_and_match_a_fresh_generation(self):
        pid, fd = self.spawn("-n", "8", "--logit-bias", "151645=-100", "--logit-bias", "151643=-100")
        self.read_until(fd, "> ")
        os.write(fd, b"Hello there\n")
        first = self.read_until(fd, "\n> ")
        answer1 = self.plain(first.split("\n[")[0])
        self.assertIn("[0 prompt tokens reused", first)
        os.write(fd, b"How are you?\n")
        second = self.read_until(fd, "\n> ")
        answer2 = self.plain(second.split("\n[")[0])
        import re
        reused = int(re.search(r"\[(\d+) prompt tokens reused", second).group(1))
        self.assertGreater(reused, 5, second)
        os.write(fd, b"/exit\n")
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        # The second answer, with the cache reused, is what a fresh greedy run on the whole
        # conversation gives.
        messages = os.path.join(ARGS.scratch, "chat.json")
        with open(messages, "w", encoding="utf-8") as f:
            json.dump([{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": answer1},
                       {"role": "user", "content": "How are you?"}], f)
        prompt = kipp("template", "--model", self.MODEL, "--messages", messages)
        self.assertEqual(prompt.returncode, 0, prompt.stderr)
        fresh = kipp("generate", "--model", self.MODEL, "--prompt", prompt.stdout, "--greedy", "-n", "8",
                     "--logit-bias", "151645=-100", "--logit-bias", "151643=-100", "--json")
        self.assertEqual(fresh.returncode, 0, fresh.stderr)
        self.assertEqual(answer2, json.loads(fresh.stdout)["text"])

    def test_ctrl_c_stops_the_answer_and_reset_and_exit_work(self):
        import signal
        pid, fd = self.spawn("-n", "3500", "--logit-bias", "151645=-100", "--logit-bias", "151643=-100")
        self.read_until(fd, "> ")
        os.write(fd, b"Write a very long story\n")
        self.read_until(fd, "")  # the answer has started
        os.kill(pid, signal.SIGINT)
        stopped = self.read_until(fd, "\n> ")
        self.assertIn("cancelled]", stopped)
        os.write(fd, b"/reset\n")
        self.assertIn("(conversation cleared)", self.read_until(fd, "\n> "))
        os.write(fd, b"/exit\n")
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)

    def test_tools_a_forced_call_its_typed_result_and_the_answer_after_it(self):
        """`kipp chat --tools`: the model's call is shown, the typed result goes back as a tool turn,
        and the model answers again; the prompt of that answer is the template's rendering of the
        whole loop (checked through `kipp template`). Also on Qwen3-Coder, whose calls are XML."""
        for model in (self.MODEL, os.path.join(ARGS.chat_models, "qwen3-coder-tiny.bf16.gguf")):
            with self.subTest(model=os.path.basename(model)):
                self.forced_call_loop(model)

    def forced_call_loop(self, model):
        scratch = tempfile.mkdtemp(dir=ARGS.scratch)
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string", "maxLength": 10}},
            "required": ["city"], "additionalProperties": False}}}]
        tools_file = os.path.join(scratch, "tools.json")
        with open(tools_file, "w") as f:
            json.dump(tools, f)
        run = subprocess.run([ARGS.kipp, "chat", "--model", model, "--tools", tools_file, "--tool-choice",
                              "get_weather", "--no-thinking", "-n", "300", "--seed", "3"],
                             input="Weather in Paris?\n{\"temp\": 21}\n/exit\n", capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        calls = [line for line in run.stdout.splitlines() if line.startswith("[call get_weather ")]
        self.assertEqual(len(calls), 1, run.stdout)
        arguments = json.loads(calls[0][len("[call get_weather "):-1])
        self.assertEqual(set(arguments), {"city"})
        self.assertLessEqual(len(arguments["city"]), 10)
        self.assertIn("result of get_weather> ", run.stdout)
        stats = [line for line in run.stderr.splitlines() if " generated at " in line]
        self.assertEqual(len(stats), 2, run.stderr)  # the forced call, then the answer to its result
        self.assertTrue(stats[0].endswith("stop_token]"), stats[0])
        # The second answer's prompt reused the first one's: the loop was rendered into the same
        # conversation (the call and the typed result after it).
        reused = int(stats[1].strip("[").split(" ")[0])
        self.assertGreater(reused, 100, stats[1])
        bad = subprocess.run([ARGS.kipp, "chat", "--model", model, "--tools", tools_file, "--tool-choice", "other"],
                             input="", capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("'other'", bad.stderr)

    def test_a_thinking_budget_closes_the_thought_and_the_answer_is_printed(self):
        """`kipp chat --thinking-budget N` on the thinking-2507 checkpoint, whose greedy thought with
        </think> banned never ends: with the thought hidden, nothing is printed without a budget,
        and an answer is with one."""
        model = os.path.join(ARGS.chat_models, "qwen3-tiny-thinking-2507.bf16.gguf")
        never_closes = ["--logit-bias", "151668=-100", "--logit-bias", "151645=-100", "--logit-bias", "151643=-100"]
        answers = {}
        for budget in ([], ["--thinking-budget", "4"]):
            run = subprocess.run([ARGS.kipp, "chat", "--model", model, "--greedy", "--hide-thinking", "-n", "24",
                                  *never_closes, *budget], input="Think\n/exit\n", capture_output=True, text=True,
                                 timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("24 generated", run.stderr)
            answers[bool(budget)] = run.stdout.replace("> ", "").strip()
        self.assertEqual(answers[False], "", "without a budget the whole answer is thought")
        self.assertNotEqual(answers[True], "", "with one, the block closes and the answer is printed")
        bad = subprocess.run([ARGS.kipp, "chat", "--model", model, "--thinking-budget", "-1"], input="",
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--thinking-budget", bad.stderr)

    def test_base_checkpoints_are_refused(self):
        run = kipp("chat", "--model", os.path.join(ARGS.models, "qwen3-tiny-untied.bf16.gguf"))
        self.assertEqual(run.returncode, 1)
        self.assertIn("base checkpoint", run.stderr)


class Serve(unittest.TestCase):
    def test_startup_errors_are_one_line(self):
        tiny = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        missing = os.path.join(ARGS.scratch, "missing.gguf")
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = str(taken.getsockname()[1])
            for args, fragment in [(["--model", missing, "--port", "0"], "missing.gguf: cannot open"),
                                   (["--model", tiny, "--host", "999.1.1.1"], "cannot resolve 999.1.1.1"),
                                   (["--model", tiny, "--port", port], "cannot bind 127.0.0.1:" + port)]:
                run = subprocess.run([ARGS.kipp, "serve", *args], capture_output=True, text=True, timeout=60)
                self.assertNotEqual(run.returncode, 0, args)
                errors = [line for line in run.stderr.splitlines() if not line.startswith("kipp serve:")]
                self.assertEqual(len(errors), 1, run.stderr)
                self.assertIn(fragment, errors[0])
        usage = kipp("serve", "--model", tiny, "--max-batch", "0")
        self.assertNotEqual(usage.returncode, 0)
        self.assertIn("--max-batch: Value 0 not in range 1 to 256", usage.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--chat-models", required=True)
    parser.add_argument("--scratch", required=True)
    ARGS, rest = parser.parse_known_args()
    shutil.rmtree(ARGS.scratch, ignore_errors=True)
    os.makedirs(ARGS.scratch)
    outcome = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False)
    passed = outcome.result.wasSuccessful()
    if passed:
        shutil.rmtree(ARGS.scratch, ignore_errors=True)  # a failed run keeps its files for a post-mortem
    sys.exit(0 if passed else 1)
