"""`kipp grammar` and `kipp generate --grammar/--json-schema` as a user runs them.

- every GBNF grammar users already have (../shared/data/llama.cpp-grammars) compiles, and text the
  tiny checkpoint generates under it is accepted by `kipp grammar --check` when the generation
  ended (and is a prefix when it was cut at the token budget);
- `--check` says where a text stops being a prefix (exit 1, byte offset) and accepts sentences
  (exit 0);
- a schema keyword Kipp cannot enforce is refused before any work, naming the keyword and its
  pointer; `--not-strict` lists it instead;
- inputs built to exhaust a compiler (deep nesting, deep groups, a grammar matching nothing) are
  refused with an error naming the limit, never a crash;
- `--model` reports token statistics over the artifact's vocabulary;
- `--json-form tidy` narrows `--check` to what a model may write; a wrong word is one clear line.
"""
import argparse
import json
import os
import subprocess
import sys
import unittest

ARGS = None


def run(*args, check=None):
    result = subprocess.run([ARGS.kipp, *args], capture_output=True, text=True)
    if check is not None:
        assert result.returncode == check, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def scratch(name, text):
    path = os.path.join(ARGS.scratch, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


class GbnfGrammars(unittest.TestCase):
    def grammars(self):
        names = sorted(f for f in os.listdir(ARGS.grammars) if f.endswith(".gbnf"))
        self.assertGreater(len(names), 0, f"no .gbnf files in {ARGS.grammars}")
        return [os.path.join(ARGS.grammars, n) for n in names]

    def test_generated_text_is_accepted_by_check(self):
        finished = 0
        for path in self.grammars():
            with self.subTest(grammar=os.path.basename(path)):
                for seed in (1, 2):
                    out = run("generate", "--model", ARGS.model, "--prompt", "Write:", "--grammar", path, "-n", "200",
                              "--seed", str(seed), "--temperature", "1", "--top-k", "0", "--top-p", "1", "--json",
                              check=0)
                    result = json.loads(out.stdout)
                    text_file = scratch("generated.txt", result["text"])
                    checked = json.loads(run("grammar", "--grammar", path, "--check", text_file, "--json").stdout)
                    if result["finish_reason"] == "stop_token":
                        finished += 1
                        self.assertTrue(checked["check"]["complete"], f"{path} seed {seed}: {result['text']!r}")
                    else:
                        self.assertEqual(result["finish_reason"], "length")
                        self.assertTrue(checked["check"]["prefix"], f"{path} seed {seed}: {result['text']!r}")
        self.assertGreater(finished, 0, "no generation under any grammar ended before the budget")


class CheckCommand(unittest.TestCase):
    def test_sentence_prefix_and_offset(self):
        grammar = scratch("digits.gbnf", 'root ::= "[" [0-9]+ ("," [0-9]+)* "]"\n')
        whole = run("grammar", "--grammar", grammar, "--check", scratch("ok.txt", "[1,22,333]"), check=0)
        self.assertIn("a whole sentence", whole.stdout)
        early = run("grammar", "--grammar", grammar, "--check", scratch("early.txt", "[1,22"), check=1)
        self.assertIn("ends early", early.stdout)
        wrong = json.loads(run("grammar", "--grammar", grammar, "--check", scratch("bad.txt", "[1,x]"), "--json",
                               check=1).stdout)
        self.assertEqual(wrong["check"], {"complete": False, "prefix": False, "valid_bytes": 3, "bytes": 5})

    def test_malformed_grammar_names_the_place(self):
        grammar = scratch("broken.gbnf", 'root ::= "a" [b-\n')
        out = run("grammar", "--grammar", grammar, check=1)
        self.assertIn("broken.gbnf: 1:", out.stderr)

    def test_schema_sentences(self):
        schema = scratch("point.json", json.dumps({"type": "object", "properties": {"x": {"type": "integer"}},
                                                   "required": ["x"], "additionalProperties": False}))
        run("grammar", "--json-schema", schema, "--check", scratch("p1.txt", '{"x":12}'), check=0)
        run("grammar", "--json-schema", schema, "--check", scratch("p2.txt", '{ "x" : -3 }'), check=0)
        out = json.loads(run("grammar", "--json-schema", schema, "--check", scratch("p3.txt", '{"x":1.5}'), "--json",
                             check=1).stdout)
        # "1." may still become 1.0, which is an integer: the text stops being a prefix at the 5.
        self.assertEqual(out["check"]["valid_bytes"], 7)

    def test_refused_keyword_and_not_strict(self):
        schema = scratch("unique.json", json.dumps({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}))
        refused = run("grammar", "--json-schema", schema, check=1)
        self.assertIn("keyword 'uniqueItems' at /properties/tags", refused.stderr)
        lenient = json.loads(run("grammar", "--json-schema", schema, "--not-strict", "--json", check=0).stdout)
        self.assertIn({"keyword": "uniqueItems", "pointer": "/properties/tags/uniqueItems"}, lenient["unenforced"])

    def test_json_form_flag(self):
        # `kipp grammar` validates with the exact form; --json-form tidy checks what a model may
        # write: no member the schema does not list, at most one space after ',' and ':'.
        schema = scratch("form.json", json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}))
        unlisted = scratch("unlisted.json", '{"a": 1, "b": 2}')
        spaced = scratch("spaced.json", '{"a":  1}')
        listed = scratch("listed.json", '{"a": 1}')
        run("grammar", "--json-schema", schema, "--check", unlisted, check=0)
        run("grammar", "--json-schema", schema, "--check", spaced, check=0)
        run("grammar", "--json-schema", schema, "--json-form", "tidy", "--check", unlisted, check=1)
        run("grammar", "--json-schema", schema, "--json-form", "tidy", "--check", spaced, check=1)
        run("grammar", "--json-schema", schema, "--json-form", "tidy", "--check", listed, check=0)
        wrong = run("grammar", "--json-schema", schema, "--json-form", "loose")
        self.assertNotEqual(wrong.returncode, 0)
        self.assertIn("--json-form: must be tidy or exact, not 'loose'", wrong.stderr)

    def test_hostile_inputs_are_refused_naming_the_limit(self):
        # Issue 32's reproduction: a schema file nested 3,000 levels deep crashed `kipp grammar`.
        def nested(levels):
            return '{"type":"array","items":' * levels + '{"type":"integer"}' + "}" * levels
        cases = [
            (("--json-schema", scratch("deep3000.json", nested(3000))), "nests deeper than the limit of 512 levels"),
            (("--json-schema", scratch("deep300.json", nested(300))),
             "keyword 'schema' at /items/items/items"),
            (("--json-schema", scratch("pattern.json", json.dumps(
                {"type": "string", "pattern": "(" * 4000 + "a" + ")" * 4000}))),
             "groups nest deeper than the limit of 64 levels"),
            (("--grammar", scratch("groups.gbnf", "root ::= " + "(" * 30000 + '"a"' + ")" * 30000 + "\n")),
             "groups nest deeper than 256 levels"),
            (("--grammar", scratch("nothing.gbnf", 'root ::= "x" a\na ::= "y" a\n')), "matches no text at all"),
        ]
        for args, message in cases:
            with self.subTest(args=args[1]):
                out = run("grammar", *args)
                self.assertEqual(out.returncode, 1, out.stderr[-500:])  # an error, not a signal
                self.assertIn(message, out.stderr)
        # The limit's own depth still compiles.
        run("grammar", "--json-schema", scratch("deep60.json", nested(60)), check=0)

    def test_token_statistics_with_model(self):
        schema = scratch("flag.json", json.dumps({"type": "boolean"}))
        out = json.loads(run("grammar", "--json-schema", schema, "--model", ARGS.model, "--check",
                             scratch("flag.txt", "true"), "--json", check=0).stdout)
        tokens = out["tokens"]
        self.assertGreater(tokens["vocabulary"], 150000)
        # "true" / "false" and their prefixes, and the whitespace tokens (runs of up to 16 spaces,
        # tabs and newlines) that may come before them: a few hundred of the vocabulary.
        self.assertGreater(tokens["allowed_at_start"], 2)
        self.assertLess(tokens["allowed_at_start"], 1000)
        self.assertTrue(tokens["text_tokens_allowed"])

    def test_generate_follows_a_schema(self):
        schema = scratch("choice.json", json.dumps({"enum": ["red", "green", "blue"]}))
        for seed in range(3):
            out = json.loads(run("generate", "--model", ARGS.model, "--prompt", "Colour:", "--json-schema", schema,
                                 "--seed", str(seed), "--temperature", "1", "-n", "40", "--json", check=0).stdout)
            self.assertEqual(out["finish_reason"], "stop_token")
            self.assertIn(json.loads(out["text"]), ["red", "green", "blue"])


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--kipp", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--grammars", required=True)
    parser.add_argument("--scratch", required=True)
    ARGS, rest = parser.parse_known_args()
    os.makedirs(ARGS.scratch, exist_ok=True)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
