#!/usr/bin/env python3
"""Golden prompts with tools: the published chat template of one variant, rendered by Python's
jinja2 the way transformers renders it, compared byte for byte with `kipp template`.

The reference environment is transformers' own: a sandboxed jinja2 environment with trim_blocks
and lstrip_blocks, the loopcontrols extension, and transformers' `tojson` filter (json.dumps with
ensure_ascii=False: the client's key order, non-ASCII kept, Python's number forms). The template
text is read by its SHA-256 from the fact sheet, or, for Qwen3-Coder (whose template the fact
sheet does not hold), from the file given after the other arguments.

The conversations (more than 40, with tools) cover what agents send: tools with nested and
unicode schemas, calls with arguments as JSON strings and as objects, several calls in one turn,
consecutive tool messages, thinking in the history around calls, system and developer messages,
text content parts, null content, an empty tools list. Each is rendered with and without the
generation prompt, and with enable_thinking unset and false.

What Kipp does before the template (documented in docs/SERVER.md) is applied here too, written
independently: the developer role is a system message, text parts are joined with "\\n" (as vLLM
does; the template itself would print nothing for a non-string content), `reasoning` is
`reasoning_content`. For Qwen3-Coder, whose template iterates a call's arguments, arguments given as
a JSON string are parsed into their object first (as vLLM does).

Usage: golden_jinja2.py KIPP FACT_SHEET VARIANT MODEL.gguf SCRATCH_DIR [TEMPLATE_FILE]
"""
import copy
import hashlib
import json
import os
import random
import re
import subprocess
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATES = {
    "instruct": "a55ee1b1660128b7098723e0abcd92caa0788061051c62d51cbe87d9cf1974d8",
    "instruct-2507": "64f85b198065d0fba2a81f37e10ed68161ce2c19a754c7100e67e0ca2ee9c326",
    "thinking-2507": "3802169b2a02b81e6adb7ab4f64f91ff02db753c8c3a64a01c35192d3a61d8d7",
    # Qwen3-Coder-30B-A3B-Instruct@b2cff646 chat_template.jinja (6,211 bytes; docs/MODELS.md).
    "coder": "5a38bfa05833266240066aedc497decc9b00cc0d3e3b8cceea98cf530196ab06",
}


def published_template(sheet_path, sha256, template_file=None):
    if template_file:
        text = open(template_file, "rb").read()
        if hashlib.sha256(text).hexdigest() != sha256:
            sys.exit(f"{template_file}: its SHA-256 is not the published {sha256}")
        return text.decode("utf-8")
    sheet = open(sheet_path, encoding="utf-8").read()
    for block in re.findall(r"^````jinja\n([\s\S]*?)\n````$", sheet, re.M):
        if hashlib.sha256(block.encode("utf-8")).hexdigest() == sha256:
            return block
    sys.exit(f"{sheet_path}: holds no chat template with SHA-256 {sha256}")


def transformers_environment():
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def as_template_sees_it(messages, variant):
    """Kipp's documented normalization, before the template."""
    out = []
    for m in copy.deepcopy(messages):
        if variant == "coder":
            for c in m.get("tool_calls") or []:
                function = c.get("function", c)
                if isinstance(function["arguments"], str):
                    function["arguments"] = json.loads(function["arguments"])
        if m["role"] == "developer":
            m["role"] = "system"
        if isinstance(m.get("content"), list):
            m["content"] = "\n".join(part["text"] for part in m["content"])
        if "reasoning" in m and "reasoning_content" not in m:
            m["reasoning_content"] = m.pop("reasoning")
        out.append(m)
    return out


# Tools as clients write them: key order is theirs (not sorted), descriptions may be unicode.
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"], "additionalProperties": False}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web — returns the top results.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "score": {"type": "number", "minimum": 0.0, "maximum": 1.0, "multipleOf": 0.05}},
        "required": ["query"]}}}
CALENDAR = {"type": "function", "function": {
    "name": "create_event", "strict": True,
    "parameters": {"type": "object", "required": ["title", "when"], "properties": {
        "when": {"type": "object", "properties": {"start": {"type": "string", "format": "date-time"},
                                                  "minutes": {"type": "integer"}}},
        "title": {"type": "string", "maxLength": 120},
        "attendees": {"type": "array", "items": {"type": "string", "format": "email"}},
        "notes": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}}}
NO_PARAMS = {"type": "function", "function": {"name": "now", "description": "The time, «now»."}}
# What Qwen3-Coder's template prints through str() and trim: a type list, padded descriptions
# (Unicode spaces too), booleans, nulls and nested values among a parameter's other keys.
PATCH = {"type": "function", "function": {
    "name": "apply_patch", "description": "\u00a0 Apply a unified diff.\n\n",
    "parameters": {"type": "object", "properties": {
        "path": {"type": ["string", "null"], "description": "  file 'path' \t"},
        "diff": {"type": "string", "description": "The diff.", "examples": ["--- a\n+++ b"]},
        "dry_run": {"type": "boolean", "default": False, "nullable": None},
        "context": {"description": "no type", "x-order": 3.5}},
        "required": ["diff"], "$defs": {"unused": {"type": "string"}}},
    "x-vendor": {"id": 7}}}
TOOLSETS = [[WEATHER], [WEATHER, SEARCH], [SEARCH, CALENDAR, NO_PARAMS], [NO_PARAMS], [CALENDAR], [PATCH, WEATHER]]

ARGUMENT_VALUES = [
    {"city": "Paris"}, {"city": "São Paulo", "unit": "celsius"}, {"unit": "fahrenheit", "city": "New York"},
    {"query": "qwen3 \"tool\" calls", "limit": 3}, {"query": "x", "score": 0.1}, {"query": "y", "score": 1e-05},
    {"query": "big", "limit": 10000000000000000}, {"query": "f", "score": 2.0},
    {"title": "Stand-up", "when": {"start": "2026-12-02T09:00:00Z", "minutes": 15}, "attendees": ["a@b.co"]},
    {"title": "日本語の会議", "when": {}, "notes": None}, {}, {"nested": {"list": [1, 2.5, [True, False, None]]}},
    {"diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n", "dry_run": True, "path": None},
]


def call(name, arguments, as_string, flat=False):
    if flat:  # the template also reads a call given as {name, arguments}
        return {"name": name, "arguments": arguments if not as_string else json.dumps(arguments)}
    function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False) if as_string else arguments}
    return {"id": "call_" + hashlib.sha1(name.encode()).hexdigest()[:8], "type": "function", "function": function}


def handwritten():
    user = lambda text: {"role": "user", "content": text}
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    weather_call = call("get_weather", {"city": "Paris"}, True)
    return [
        ([WEATHER], [user("Weather in Paris?")]),
        ([WEATHER], [sys_msg, user("Weather in Paris?")]),
        ([WEATHER], [{"role": "developer", "content": "Answer briefly."}, user("Weather?")]),
        ([], [sys_msg, user("No tools offered: an empty list.")]),
        ([WEATHER], [user("Paris?"), {"role": "assistant", "content": None, "tool_calls": [weather_call]},
                     {"role": "tool", "tool_call_id": weather_call["id"], "content": "{\"temp\": 21}"}]),
        ([WEATHER], [user("Paris?"), {"role": "assistant", "content": "Let me check.", "tool_calls": [weather_call]},
                     {"role": "tool", "content": "21 °C"}, {"role": "assistant", "content": "It is 21 °C."},
                     user("And tomorrow?")]),
        ([WEATHER, SEARCH], [user("Two things"), {"role": "assistant", "content": "", "tool_calls": [
            call("get_weather", {"city": "Oslo"}, False), call("search", {"query": "Oslo events"}, True)]},
            {"role": "tool", "content": "cold"}, {"role": "tool", "content": "[\"concert\"]"}]),
        ([WEATHER], [user("think first"), {"role": "assistant", "content": "<think>\nI should call.\n</think>\n\n",
                                           "tool_calls": [weather_call]},
                     {"role": "tool", "content": "sunny"}]),
        ([WEATHER], [user("q"), {"role": "assistant", "reasoning_content": "\nneeds a call\n", "content": "\n",
                                 "tool_calls": [weather_call]}, {"role": "tool", "content": "ok"},
                     {"role": "assistant", "reasoning": "got it", "content": "Done."}]),
        ([SEARCH], [user([{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}])]),
        ([SEARCH], [{"role": "system", "content": [{"type": "text", "text": "sys in parts"}]}, user("go")]),
        ([WEATHER], [user("<tool_response>\nlooks like one\n</tool_response>"), {"role": "assistant", "content": "x"}]),
        ([WEATHER], [{"role": "tool", "content": "a tool turn first"}, user("then a user")]),
        ([CALENDAR], [user("book it"), {"role": "assistant", "content": None, "tool_calls": [
            call("create_event", ARGUMENT_VALUES[8], False), call("create_event", ARGUMENT_VALUES[9], False, flat=True)]},
            {"role": "tool", "content": "booked"}, {"role": "tool", "content": "booked too"}, user("thanks")]),
        ([NO_PARAMS, WEATHER], [sys_msg, user("time?"), {"role": "assistant", "content": "",
                                                          "tool_calls": [call("now", {}, False)]},
                                {"role": "tool", "content": "12:00"}, {"role": "assistant", "content": "Noon."}]),
        ([PATCH], [user("fix it"), {"role": "assistant", "content": "  \u3000Patching now.\n ", "tool_calls": [
            call("apply_patch", ARGUMENT_VALUES[12], False)]}, {"role": "tool", "content": "applied"},
            {"role": "assistant", "content": "Done."}]),
        ([WEATHER], [sys_msg, {"role": "tool", "content": "a tool turn right after the system message"},
                     user("then a user")]),
    ]


def generated(count, rng):
    """Multi-step tool loops of random shape."""
    conversations = []
    for _ in range(count):
        tools = rng.choice(TOOLSETS)
        messages = []
        if rng.random() < 0.5:
            messages.append({"role": rng.choice(["system", "developer"]), "content": rng.choice(["Be terse.", "Ünïcödé system", ""])})
        for _turn in range(rng.randint(1, 3)):
            messages.append({"role": "user", "content": rng.choice(["Go.", "Find it\nplease", "¿Qué tiempo hace?"])})
            for _step in range(rng.randint(0, 2)):
                calls = [call(rng.choice(tools)["function"]["name"], rng.choice(ARGUMENT_VALUES), rng.random() < 0.5,
                              flat=rng.random() < 0.1) for _ in range(rng.randint(1, 3))]
                assistant = {"role": "assistant", "content": rng.choice([None, "", "Checking.", "\nlead"]),
                             "tool_calls": calls}
                thinking = rng.random()
                if thinking < 0.3:
                    assistant["reasoning_content"] = rng.choice(["plan: call", "\n\nmulti\nline\n", ""])
                elif thinking < 0.5 and assistant["content"] is not None:
                    assistant["content"] = "<think>\nreason\n</think>\n\n" + assistant["content"]
                messages.append(assistant)
                for c in calls:
                    messages.append({"role": "tool", "tool_call_id": c.get("id", ""),
                                     "content": rng.choice(["42", "{\"ok\": true}", "", "multi\nline"])})
            if rng.random() < 0.7:
                messages.append({"role": "assistant", "content": rng.choice(["Done.", "<think>\nx\n</think>\n\nDone."])})
        conversations.append((tools, messages))
    return conversations


def main():
    kipp, sheet, variant, model, scratch = sys.argv[1:6]
    template_file = sys.argv[6] if len(sys.argv) > 6 else None
    template = transformers_environment().from_string(published_template(sheet, TEMPLATES[variant], template_file))
    os.makedirs(scratch, exist_ok=True)
    conversations = handwritten() + generated(40, random.Random(20261202))
    settings = [([], {"add_generation_prompt": True}),
                (["--no-generation-prompt"], {"add_generation_prompt": False}),
                (["--no-thinking"], {"add_generation_prompt": True, "enable_thinking": False}),
                (["--no-thinking", "--no-generation-prompt"], {"add_generation_prompt": False, "enable_thinking": False})]
    failures = checked = 0
    for index, (tools, messages) in enumerate(conversations):
        path = os.path.join(scratch, f"conversation-{index}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"model": "m", "messages": messages, "tools": tools}, f, ensure_ascii=False)
        for flags, context in settings:
            expected = template.render(messages=as_template_sees_it(messages, variant), tools=tools, **context)
            run = subprocess.run([kipp, "template", "--model", model, "--messages", path, *flags], capture_output=True)
            checked += 1
            if run.returncode != 0:
                failures += 1
                print(f"{path} {flags}: kipp failed: {run.stderr.decode(errors='replace')}")
            elif run.stdout.decode("utf-8") != expected:
                failures += 1
                got = run.stdout.decode("utf-8")
                at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
                print(f"{path} {flags}: differs at char {at}:\n  kipp:      {got[max(0, at - 60):at + 60]!r}\n"
                      f"  reference: {expected[max(0, at - 60):at + 60]!r}")
    print(f"{variant}: {len(conversations)} conversations with tools, {checked} prompts, {failures} differ "
          f"(jinja2 {jinja2.__version__})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
