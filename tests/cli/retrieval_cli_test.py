#!/usr/bin/env python3
"""`kipp embed` and `kipp rerank` as a user runs them, on the tiny embedding and reranker
checkpoints, and their layouts as published:

- the embedding entry laid out as Qwen3-Embedding-0.6B (one file) and as Qwen3-Embedding-8B (four
  shards, untied without a head) converts, passes `kipp inspect`, and embeds to the same bits as
  the fixture (Qwen3-Embedding-4B's two shards); the reranker laid out as Qwen3-Reranker-4B (two
  shards) scores as the fixture (Qwen3-Reranker-0.6B's one file) does;
- the outputs: one line of values per input, or OpenAI's response shape; unit vectors; a
  Matryoshka cut is the renormalised prefix of the full vector; scores sorted, with the cut
  a long document took;
- every wrong use is a one-line error: a checkpoint of another role (naming both roles), a
  dimension outside the range, inputs given two ways or none, a malformed JSON Lines input, a
  --max-tokens past the context or too small for the query.

  retrieval_cli_test.py --kipp KIPP --synthetic KIPP_SYNTHETIC --models DIR --tokenizer-dir DIR
                        --fact-sheet FILE --work DIR
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import unittest

ARGS = None
EMBEDDING, RERANKER = "kipp-test/qwen3-embedding-tiny", "kipp-test/qwen3-reranker-tiny"


def kipp(*args):
    return subprocess.run([ARGS.kipp, *args], capture_output=True, text=True, timeout=300)


def float32(value):
    """The FP32 value a decimal or a double stands for (the plain output prints 9 digits, enough for it)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def model(name):
    return os.path.join(ARGS.models, name)


def embed_json(artifact, *args):
    run = kipp("embed", "--model", artifact, "--json", *args)
    if run.returncode != 0:
        raise AssertionError(run.stderr)
    return json.loads(run.stdout)


class PublishedLayouts(unittest.TestCase):
    def replica(self, entry, layout, seed):
        source = os.path.join(ARGS.work, layout)
        artifact = source + ".gguf"
        shutil.rmtree(source, ignore_errors=True)
        run = subprocess.run([ARGS.synthetic, "--checkpoint", entry, "--layout-of", layout, "--out", source,
                              "--tokenizer-dir", ARGS.tokenizer_dir, "--fact-sheet", ARGS.fact_sheet, "--seed",
                              str(seed)], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        converted = kipp("convert", "--checkpoint", entry, "--source", source, "--out", artifact)
        self.assertEqual(converted.returncode, 0, converted.stderr)
        inspected = kipp("inspect", artifact)
        self.assertIn(f"verdict          OK: a valid {entry} artifact", inspected.stdout)
        return source, artifact

    def test_embedding_layouts_embed_alike(self):
        texts = ["--text", "The capital of China is Beijing.", "--text", "gravity"]
        want = embed_json(model("qwen3-embedding-tiny.bf16.gguf"), *texts)
        for layout, weights in (("qwen3-embedding-0.6b", 1), ("qwen3-embedding-8b", 4)):
            source, artifact = self.replica(EMBEDDING, layout, 4)
            found = [f for f in os.listdir(source) if f.endswith(".safetensors")]
            self.assertEqual(len(found), weights, layout)
            with open(os.path.join(source, "1_Pooling", "config.json")) as f:
                self.assertTrue(json.load(f)["pooling_mode_lasttoken"])
            self.assertEqual(embed_json(artifact, *texts)["data"], want["data"], layout)

    def test_reranker_layouts_score_alike(self):
        query = ["--query", "capital of China?", "--document", "Beijing", "--document", "tea", "--json"]
        want = kipp("rerank", "--model", model("qwen3-reranker-tiny.bf16.gguf"), *query)
        self.assertEqual(want.returncode, 0, want.stderr)
        source, artifact = self.replica(RERANKER, "qwen3-reranker-4b", 5)
        self.assertEqual(len([f for f in os.listdir(source) if f.endswith(".safetensors")]), 2)
        got = kipp("rerank", "--model", artifact, *query)
        self.assertEqual(json.loads(got.stdout)["results"], json.loads(want.stdout)["results"])


class Embed(unittest.TestCase):
    artifact = property(lambda self: model("qwen3-embedding-tiny.q8_0.gguf"))

    def test_plain_output_is_a_unit_vector_per_line(self):
        run = kipp("embed", "--model", self.artifact, "--text", "a", "--text", "b c")
        self.assertEqual(run.returncode, 0, run.stderr)
        rows = [[float(v) for v in line.split()] for line in run.stdout.splitlines()]
        self.assertEqual([len(r) for r in rows], [256, 256])
        for row in rows:
            self.assertAlmostEqual(math.sqrt(sum(v * v for v in row)), 1.0, places=6)

    def test_json_counts_the_appended_token_and_matches_the_plain_output(self):
        got = embed_json(self.artifact, "--text", "hello world")
        self.assertEqual(got["object"], "list")
        self.assertEqual(got["model"], EMBEDDING)
        self.assertEqual(got["data"][0]["object"], "embedding")
        tokens = json.loads(kipp("tokenize", "--model", self.artifact, "--json", "--text", "hello world").stdout)
        self.assertEqual(got["usage"]["prompt_tokens"], len(tokens["ids"]) + 1, "the <|endoftext|> appended")
        plain = kipp("embed", "--model", self.artifact, "--text", "hello world").stdout.split()
        self.assertEqual([float32(float(v)) for v in plain], [float32(v) for v in got["data"][0]["embedding"]])

    def test_a_matryoshka_cut_is_the_renormalised_prefix(self):
        full = embed_json(self.artifact, "--text", "orbit")["data"][0]["embedding"]
        cut = embed_json(self.artifact, "--text", "orbit", "--dimensions", "32")["data"][0]["embedding"]
        norm = math.sqrt(sum(v * v for v in full[:32]))
        self.assertEqual(len(cut), 32)
        for got, want in zip(cut, full[:32]):
            self.assertAlmostEqual(got, want / norm, places=6)

    def test_instruct_is_the_model_card_query_form(self):
        task = "Find the city"
        instructed = embed_json(self.artifact, "--text", "capital?", "--instruct", task)
        spelled = embed_json(self.artifact, "--text", f"Instruct: {task}\nQuery:capital?")
        self.assertEqual(instructed["data"], spelled["data"])

    def test_file_and_jsonl_inputs(self):
        path = os.path.join(ARGS.work, "inputs.jsonl")
        with open(path, "w") as f:
            f.write('"first"\n\n{"text": "second"}\n')
        lines = embed_json(self.artifact, "--jsonl", path)
        separately = embed_json(self.artifact, "--text", "first", "--text", "second")
        self.assertEqual(lines["data"], separately["data"])
        whole = os.path.join(ARGS.work, "whole.txt")
        with open(whole, "w") as f:
            f.write("first")
        self.assertEqual(embed_json(self.artifact, "--file", whole)["data"][0]["embedding"],
                         separately["data"][0]["embedding"])

    def test_wrong_uses_are_one_line_errors(self):
        bad_jsonl = os.path.join(ARGS.work, "bad.jsonl")
        with open(bad_jsonl, "w") as f:
            f.write('"ok"\n[1, 2]\n')
        cases = [
            (["--text", "x", "--dimensions", "16"], "dimensions 16 is outside kipp-test/qwen3-embedding-tiny's range "
                                                    "of 32 to 256"),
            (["--text", "x", "--dimensions", "257"], "range of 32 to 256"),
            ([], "give the inputs one way"),
            (["--text", "x", "--jsonl", bad_jsonl], "give the inputs one way"),
            (["--jsonl", bad_jsonl], "bad.jsonl line 2: expected a string or an object with \"text\""),
        ]
        for args, message in cases:
            run = kipp("embed", "--model", self.artifact, *args)
            self.assertEqual(run.returncode, 1, args)
            self.assertEqual(len(run.stderr.splitlines()), 1, run.stderr)
            self.assertIn(message, run.stderr)


class Rerank(unittest.TestCase):
    artifact = property(lambda self: model("qwen3-reranker-tiny.bf16.gguf"))

    def test_sorted_scores_and_the_cut_of_a_long_document(self):
        long_document = " ".join(["river"] * 400)
        run = kipp("rerank", "--model", self.artifact, "--query", "q", "--document", "a", "--document",
                   long_document, "--document", "b", "--max-tokens", "200", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        got = json.loads(run.stdout)
        scores = [r["relevance_score"] for r in got["results"]]
        self.assertEqual(scores, sorted(scores, reverse=True))
        self.assertEqual(sorted(r["index"] for r in got["results"]), [0, 1, 2])
        cut = {r["index"]: r.get("truncated_tokens", 0) for r in got["results"]}
        self.assertGreater(cut[1], 0)
        self.assertEqual((cut[0], cut[2]), (0, 0))
        plain = kipp("rerank", "--model", self.artifact, "--query", "q", "--document", long_document,
                     "--max-tokens", "200")
        self.assertIn(f"(the last {cut[1]} tokens cut to fit 200)", plain.stdout)

    def test_documents_file_is_one_per_line(self):
        path = os.path.join(ARGS.work, "documents.txt")
        with open(path, "w") as f:
            f.write("alpha\n\nbeta\r\n")
        from_file = json.loads(kipp("rerank", "--model", self.artifact, "--query", "q", "--documents", path,
                                    "--json").stdout)
        given = json.loads(kipp("rerank", "--model", self.artifact, "--query", "q", "--document", "alpha",
                                "--document", "beta", "--json").stdout)
        self.assertEqual(from_file["results"], given["results"])

    def test_wrong_uses_are_one_line_errors(self):
        cases = [
            (["--query", "q"], "give the documents one way"),
            (["--query", "q", "--document", "d", "--max-tokens", "5000"], "--max-tokens 5000 is past "
                                                                           "kipp-test/qwen3-reranker-tiny's context"),
            (["--query", "word " * 300, "--document", "d", "--max-tokens", "100"],
             "document 0: the instruction and query take"),
        ]
        for args, message in cases:
            run = kipp("rerank", "--model", self.artifact, *args)
            self.assertEqual(run.returncode, 1, args)
            self.assertEqual(len(run.stderr.splitlines()), 1, run.stderr)
            self.assertIn(message, run.stderr)


class Roles(unittest.TestCase):
    def test_each_command_refuses_the_other_roles_by_name(self):
        embedding, reranker = model("qwen3-embedding-tiny.bf16.gguf"), model("qwen3-reranker-tiny.bf16.gguf")
        generator = model("qwen3-tiny.bf16.gguf")
        cases = [
            (["embed", "--model", reranker, "--text", "x"], "has the role rerank", "kipp embed serves the role embed"),
            (["embed", "--model", generator, "--text", "x"], "has the role generate", "kipp embed serves"),
            (["rerank", "--model", embedding, "--query", "q", "--document", "d"], "has the role embed",
             "kipp rerank serves the role rerank"),
            (["generate", "--model", embedding, "--prompt", "x"], "has the role embed",
             "kipp generate serves the role generate"),
            (["chat", "--model", reranker], "has the role rerank", "kipp chat serves the role generate"),
            (["logits", "--model", embedding, "--ids", "1,2", "--out", os.path.join(ARGS.work, "x.f32")],
             "has no output head", "not logits"),
        ]
        for args, role, served in cases:
            run = kipp(*args)
            self.assertEqual(run.returncode, 1, args)
            self.assertEqual(len(run.stderr.splitlines()), 1, run.stderr)
            self.assertIn(role, run.stderr)
            self.assertIn(served, run.stderr)


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--kipp", "--synthetic", "--models", "--tokenizer-dir", "--fact-sheet", "--work"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    result = unittest.main(argv=[sys.argv[0], *rest], exit=False).result
    if result.wasSuccessful():
        shutil.rmtree(ARGS.work, ignore_errors=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
