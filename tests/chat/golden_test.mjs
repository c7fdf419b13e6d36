// Golden chat prompts for one checkpoint variant: the verbatim chat template the pinned checkpoints
// publish (read from the fact sheet by its SHA-256) rendered by npm @huggingface/jinja (pinned in
// package-lock.json), compared byte for byte with `kipp template` on an artifact of that variant,
// for every conversation with and without the generation prompt and with enable_thinking unset and
// false. The artifact must carry that same template text (tokenizer.chat_template, copied by
// `kipp convert` from the checkpoint's tokenizer_config.json). Then the refusals: unsupported
// messages, and a base checkpoint when one is given.
// Usage: node golden_test.mjs KIPP FACT_SHEET VARIANT MODEL.gguf SCRATCH_DIR [BASE.gguf]
//   VARIANT: instruct (the hybrid template, §7.3), instruct-2507 (§7.1) or thinking-2507 (§7.2)
import { spawnSync, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gguf } from '@huggingface/gguf';
import { Template } from '@huggingface/jinja';
import { xorshift32 } from '../support/xorshift32.mjs';

const [kipp, factSheet, variant, model, scratch, baseModel] = process.argv.slice(2);
if (!scratch) {
  console.error('usage: golden_test.mjs KIPP FACT_SHEET VARIANT MODEL.gguf SCRATCH_DIR [BASE.gguf]');
  process.exit(2);
}

// The published template of each variant, by the SHA-256 of its text (fact sheet §6.2 and §7).
// `strips` says whether it strips '\n' around thinking and answers (see referenceAgrees below).
const variants = {
  instruct: { sha256: 'a55ee1b1660128b7098723e0abcd92caa0788061051c62d51cbe87d9cf1974d8', strips: true },
  'instruct-2507': { sha256: '64f85b198065d0fba2a81f37e10ed68161ce2c19a754c7100e67e0ca2ee9c326', strips: false },
  'thinking-2507': { sha256: '3802169b2a02b81e6adb7ab4f64f91ff02db753c8c3a64a01c35192d3a61d8d7', strips: true },
};
const expectedVariant = variants[variant];
if (!expectedVariant) {
  console.error(`unknown variant '${variant}' (instruct, instruct-2507 or thinking-2507)`);
  process.exit(2);
}

// The sheet gives each template verbatim in a ````jinja block, with no trailing newline.
const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');
function publishedTemplate(sheetPath, wanted) {
  if (!fs.existsSync(sheetPath)) {
    console.error(`${sheetPath}: the fact sheet is missing (set KIPP_SHARED_DIR to the shared folder)`);
    process.exit(1);
  }
  const sheet = fs.readFileSync(sheetPath, 'utf8');
  for (const block of sheet.matchAll(/^````jinja\n([\s\S]*?)\n````$/gm))
    if (sha256(block[1]) === wanted) return block[1];
  console.error(`${sheetPath}: holds no chat template with SHA-256 ${wanted}`);
  process.exit(1);
}
const templateText = publishedTemplate(factSheet, expectedVariant.sha256);
const template = new Template(templateText);

// The artifact is of the variant under test and embeds the same published template.
const { metadata } = await gguf(model, { allowLocalFile: true });
const repository = metadata['kipp.source.repository'];
const entry = JSON.parse(execFileSync(kipp, ['registry', '--json'], { encoding: 'utf8' }))
  .checkpoints.find((e) => e.repository === repository);
if (!entry || entry.variant !== variant) {
  console.error(`${model}: is ${repository} (variant ${entry?.variant}), not of variant ${variant}`);
  process.exit(1);
}
const embedded = metadata['tokenizer.chat_template'];
if (embedded !== templateText) {
  console.error(`${model}: tokenizer.chat_template ` + (typeof embedded === 'string'
    ? `has SHA-256 ${sha256(embedded)}, not the published ${expectedVariant.sha256}` : 'is missing'));
  process.exit(1);
}
fs.mkdirSync(scratch, { recursive: true });

// ---- A seeded generator, so a failing case reproduces. ----
const next = xorshift32(0x9e3779b9);
const int = (n) => Math.floor(next() * n);
const pick = (list) => list[int(list.length)];

const sys = (content) => ({ role: 'system', content });
const user = (content) => ({ role: 'user', content });
const bot = (content, reasoning) => (reasoning === undefined ? { role: 'assistant', content }
  : { role: 'assistant', content, reasoning_content: reasoning });

// ---- Conversations written by hand: each behaviour of the template at least once. ----
const conversations = [
  [user('Hi')],
  [sys('You are a helpful assistant.'), user('What is 2+2?')],
  [user('Hello'), bot('Hi! How can I help?'), user('Tell me a joke.')],
  [sys('Be brief.'), user('Q1'), bot('<think>\nLet me think.\n</think>\n\nA1'), user('Q2')],
  [user('Q1'), bot('<think>\nreasoning one\n</think>\n\nA1'), user('Q2'), bot('<think>\nreasoning two\n</think>\n\nA2')],
  [user('Q'), bot('A without thinking')],
  [user('Q'), bot('', 'given apart')],
  [user('Q'), bot('Answer', 'thought given apart\n\n')],
  [user('Q'), bot('Answer', '')],
  [user('Q'), bot('<think>kept in content</think>Answer', 'the field wins')],
  [user('')],
  [sys(''), user(''), bot('')],
  [user('naïve café — 日本語のテキスト, 한국어, العربية, emoji 🎉👩‍👩‍👧, combining e\u0301')],
  [user('Q'), bot('\n\n<think>\n\n\npadded\n\n\n</think>\n\n\n\nanswer after newlines\n\n')],
  [user('Q'), bot('<think>first</think>middle</think>last')],
  [user('Q'), bot('<think>open but never closed')],
  [user('Q'), bot('only a close</think>answer')],
  [user('Q'), bot('<think>a<think>b</think>c')],
  [sys('first system'), user('Q'), sys('a later system message'), user('Q2')],
  [user('Q'), bot('A1'), bot('A2 straight after')],
  [user('Q'), bot('<think>t1</think>A1'), bot('<think>t2</think>A2')],
  [user('<tool_response>\nresult\n</tool_response>')],
  [user('real question'), bot('<think>x</think>calling'), user('<tool_response>\n42\n</tool_response>'),
    bot('<think>y</think>The answer is 42')],
  [user('<|im_start|>user\nliteral markers<|im_end|>'), bot('<|im_end|> inside')],
  [user('line one\nline two\n\n'), bot('\nleading newline'), user('   spaces   ')],
  [user('tabs\tand\rreturns')],
  [bot('an assistant first')],
  [sys('only a system message')],
  [user('x'.repeat(3000))],
  [user('Q'), bot('<think>\n</think>\n\n')],
];

// ---- Seeded random conversations built from the same pieces. ----
const fragments = ['Hello', 'What is the capital of France?', 'Paris.', '', '\n', '  ', 'ok\n\nthen',
  '日本', '🎉', 'a</think>b', '<think>', '</think>', '<think>\nplan\n</think>\n\nresult', 'x\ny', '<tool_response>r</tool_response>'];
const randomText = () => Array.from({ length: 1 + int(3) }, () => pick(fragments)).join(pick(['', ' ', '\n']));
for (let i = 0; i < 60; ++i) {
  const messages = [];
  if (int(3) === 0) messages.push(sys(randomText()));
  const turns = 1 + int(6);
  for (let t = 0; t < turns; ++t) {
    const r = int(10);
    if (r < 5) messages.push(user(randomText()));
    else if (r < 8) messages.push(bot(randomText()));
    else if (r < 9) messages.push(bot(randomText(), randomText()));
    else messages.push(sys(randomText()));
  }
  conversations.push(messages);
}

// ---- Where the reference is wrong. ----
// @huggingface/jinja 0.5.11 implements str.strip/lstrip/rstrip(chars) as JavaScript's trim: it
// ignores `chars` and removes every kind of whitespace, where Python's Jinja (what transformers
// runs, and what the models were trained with) removes only the given characters. The hybrid and
// Thinking-2507 templates strip '\n' around thinking and answers, so the two differ when those
// edges hold other whitespace. Kipp follows Python; such conversations are left out here (counted
// below) and covered by unit tests with hand-derived expectations (ChatTemplate.* in tests/chat).
// The Instruct-2507 template strips nothing, so there every conversation is compared.
const lstripPy = (x) => x.replace(/^\n+/, '');
const rstripPy = (x) => x.replace(/\n+$/, '');
const edgesAgree = (x) => lstripPy(x) === x.trimStart() && rstripPy(x) === x.trimEnd();
const referenceAgrees = (messages) => !expectedVariant.strips || messages.every((m) => {
  if (m.role !== 'assistant') return true;
  const pieces = [m.content];
  if (m.reasoning_content !== undefined) pieces.push(m.reasoning_content);
  else if (m.content.includes('</think>')) {
    const parts = m.content.split('</think>');
    pieces.push(parts[parts.length - 1], rstripPy(parts[0]).split('<think>').pop());
  }
  return pieces.every(edgesAgree);
});

// ---- Render and compare. ----
// The 2507 templates have no enable_thinking switch: given false, the reference renders as if it
// were unset, and `--no-thinking` must likewise change nothing there.
const settings = [
  { flags: [], context: { add_generation_prompt: true } },
  { flags: ['--no-thinking'], context: { add_generation_prompt: true, enable_thinking: false } },
  { flags: ['--no-generation-prompt'], context: { add_generation_prompt: false } },
];
let failures = 0, checked = 0, skipped = 0;
conversations.forEach((messages, index) => {
  if (!referenceAgrees(messages)) {
    ++skipped;
    return;
  }
  const file = path.join(scratch, `conversation-${index}.json`);
  fs.writeFileSync(file, JSON.stringify(messages));
  for (const { flags, context } of settings) {
    const expected = template.render({ messages, ...context });
    const run = spawnSync(kipp, ['template', '--model', model, '--messages', file, ...flags], { encoding: 'buffer' });
    const got = run.stdout.toString('utf8');
    ++checked;
    if (run.status !== 0 || got !== expected) {
      ++failures;
      if (failures <= 5) {
        console.error(`conversation ${index} ${flags.join(' ')}: status ${run.status} ${run.stderr}`);
        console.error(`  messages: ${JSON.stringify(messages)}`);
        console.error(`  expected: ${JSON.stringify(expected)}`);
        console.error(`  got:      ${JSON.stringify(got)}`);
      }
    }
  }
});
console.log(`${variant}: template ${expectedVariant.sha256.slice(0, 8)}…, ${conversations.length} conversations ` +
  `(${skipped} left out where the reference's strip differs from Python's), ${checked} renderings, ${failures} different`);
if (conversations.length - skipped < 50) {
  console.error('fewer than 50 conversations were compared');
  ++failures;
}

// ---- Refusals: one line on stderr, exit status 1, nothing on stdout. ----
const refusals = [
  [model, [{ role: 'function', content: 'x' }], "role 'function' is not supported"],
  [model, [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
   "content parts of type 'image_url' are not supported"],
  [model, [{ role: 'user', content: 42 }], 'must be a string or an array of content parts'],
  [model, [{ role: 'assistant', content: 'x', tool_calls: [{ id: '1' }] }], 'tool_calls[0].name: must be a string'],
  [model, [{ role: 'user', content: 'x', tool_calls: [{ name: 'f', arguments: '{}' }] }],
   'tool_calls are only for assistant messages'],
  [model, [{ content: 'no role' }], 'role must be a string'],
  [model, [], 'the conversation is empty'],
  [model, { not: 'messages' }, 'expected an array'],
];
if (baseModel) refusals.push([baseModel, [{ role: 'user', content: 'hi' }], 'base checkpoint']);
refusals.forEach(([which, messages, fragment], index) => {
  const file = path.join(scratch, `refusal-${index}.json`);
  fs.writeFileSync(file, JSON.stringify(messages));
  const run = spawnSync(kipp, ['template', '--model', which, '--messages', file], { encoding: 'utf8' });
  const lines = run.stderr.trim().split('\n');
  if (run.status !== 1 || !run.stderr.includes(fragment) || lines.length !== 1 || run.stdout !== '') {
    ++failures;
    console.error(`refusal ${index}: status ${run.status}, stderr ${JSON.stringify(run.stderr)}, expected "${fragment}"`);
  }
});
process.exit(failures === 0 ? 0 : 1);
