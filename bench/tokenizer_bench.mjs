// Tokenizer throughput: Kipp (`kipp tokenize --bench`) against the reference (npm `tokenizers`,
// the Hugging Face Rust library) on the same corpus in the same run, single thread, median of 5.
// Also checks that both produce the same ids for the whole corpus, and how Kipp's time grows with
// pathological inputs (one short unit repeated to 1 MiB).
// Usage: node bench/tokenizer_bench.mjs KIPP MODEL.gguf TOKENIZER_DIR CORPUS_OUT
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('tokenizers');
const [kipp, model, tokenizerDir, corpusPath] = process.argv.slice(2);

// The corpus: real text on this machine — English prose (package READMEs and docs), source code
// (TypeScript, JavaScript, C++), JSON — plus multi-script prose, about 8 MiB in a fixed order.
const roots = ['node_modules/openai', 'node_modules/@huggingface', 'node_modules/tokenizers', 'docs', 'src', 'tests'];
const files = [];
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full);
    else if (/\.(md|ts|js|mjs|cpp|h|json|txt|py)$/.test(entry.name) && fs.statSync(full).size < 512 * 1024) files.push(full);
  }
};
for (const root of roots) if (fs.existsSync(root)) walk(root);
const multiScript = ['我们今天去公园散步，然后回家吃饭。', 'こんにちは、世界！今日はいい天気ですね。', '안녕하세요, 오늘 날씨가 좋네요.',
  'Привет, мир! Как дела?', 'Γειά σου Κόσμε!', 'مرحبا بالعالم، كيف حالك؟', 'שלום עולם, מה שלומך?', 'नमस्ते दुनिया, आप कैसे हैं?',
  'สวัสดีชาวโลก วันนี้อากาศดี', 'Ça va? Déjà vu, naïve façade, Zürich, São Paulo. 👍🏽 🇩🇪 👨‍👩‍👧‍👦'];
let corpus = '';
const limit = 8 << 20;
let used = 0;
for (let i = 0; corpus.length < limit && i < files.length; ++i, ++used) {
  corpus += fs.readFileSync(files[i], 'utf8') + '\n';
  if (i % 10 === 0) corpus += multiScript[i / 10 % multiScript.length] + '\n';
}
corpus = Buffer.from(corpus, 'utf8').subarray(0, limit).toString('utf8').replace(/\uFFFD$/, '');
fs.writeFileSync(corpusPath, corpus);
const bytes = Buffer.byteLength(corpus, 'utf8');

const reference = Tokenizer.fromFile(path.join(tokenizerDir, 'tokenizer.json'));
const seconds = [];
let referenceIds = [];
for (let run = 0; run < 5; ++run) {
  const started = process.hrtime.bigint();
  const encoding = await reference.encode(corpus, null, { addSpecialTokens: false });
  seconds.push(Number(process.hrtime.bigint() - started) / 1e9);
  referenceIds = encoding.getIds();
}
seconds.sort((a, b) => a - b);
const referenceSeconds = seconds[2];
const referenceMbPerS = bytes / 1e6 / referenceSeconds;

// The reference again on 8 KiB documents (split at line ends), the setting ANCHORS.md measured:
// one call per document, which is where the reference is fastest.
const documents = [];
let current = '';
for (const line of corpus.split('\n')) {
  current += line + '\n';
  if (Buffer.byteLength(current, 'utf8') >= 8192) { documents.push(current); current = ''; }
}
if (current) documents.push(current);
const documentSeconds = [];
for (let run = 0; run < 5; ++run) {
  const started = process.hrtime.bigint();
  for (const document of documents) await reference.encode(document, null, { addSpecialTokens: false });
  documentSeconds.push(Number(process.hrtime.bigint() - started) / 1e9);
}
documentSeconds.sort((a, b) => a - b);
const documentBytes = documents.reduce((sum, d) => sum + Buffer.byteLength(d, 'utf8'), 0);
const referenceDocumentMbPerS = documentBytes / 1e6 / documentSeconds[2];

const kippResult = JSON.parse(execFileSync(kipp, ['tokenize', '--model', model, '--file', corpusPath, '--bench']).toString());
const kippIds = JSON.parse(execFileSync(kipp, ['tokenize', '--model', model, '--file', corpusPath, '--json'],
  { maxBuffer: 1 << 30 }).toString()).ids;
const same = kippIds.length === referenceIds.length && kippIds.every((id, i) => id === referenceIds[i]);

console.log(`corpus: ${corpusPath}, ${bytes} bytes from ${used} files, ${referenceIds.length} tokens; ids identical: ${same}`);
console.log(`kipp       ${kippResult.mb_per_s.toFixed(2)} MB/s (median ${kippResult.seconds.toFixed(4)} s of 5)`);
console.log(`reference  ${referenceMbPerS.toFixed(2)} MB/s (median ${referenceSeconds.toFixed(4)} s of 5, tokenizers ${require('tokenizers/package.json').version})`);
console.log(`reference  ${referenceDocumentMbPerS.toFixed(2)} MB/s on ${documents.length} documents of ~8 KiB (median of 5)`);
console.log(`ratio      ${(kippResult.mb_per_s / referenceMbPerS).toFixed(1)}x (whole corpus), ` +
            `${(kippResult.mb_per_s / referenceDocumentMbPerS).toFixed(1)}x (against the reference's per-document figure)`);

// Scaling on pathological inputs: one unit repeated to 128 KiB and to 1 MiB. Eight times the text
// should cost about eight times the time (a little more for the BPE's heap on one giant word); a
// ratio far above that means quadratic behaviour somewhere between the added-token scan and the
// merges. Kipp's own timing of its encode call (median of 5), so process start-up is left out.
const units = [['one letter', 'a'], ['spaces', ' '], ['one emoji', '\u{1F600}'], ['digits', '7'],
  ['alternating scripts', 'a\u0431\u4E2D\u0627\u03B1'], ['newlines and spaces', '\n \n  '],
  ['combining marks', '\u0301\u0316'], ['apostrophes', "'"]];
const repeatTo = (unit, size) => unit.repeat(Math.floor(size / Buffer.byteLength(unit, 'utf8')));
const timeOf = (text, name) => {
  const file = path.join(path.dirname(corpusPath), `scaling-${name}.txt`);
  fs.writeFileSync(file, text);
  return JSON.parse(execFileSync(kipp, ['tokenize', '--model', model, '--file', file, '--bench']).toString()).seconds;
};
console.log('\nscaling: 128 KiB -> 1 MiB of one repeated unit (8x the text)');
for (const [name, unit] of units) {
  const small = timeOf(repeatTo(unit, 128 << 10), 'small'), large = timeOf(repeatTo(unit, 1 << 20), 'large');
  console.log(`${name.padEnd(20)} ${small.toFixed(4)} s -> ${large.toFixed(4)} s, ratio ${(large / small).toFixed(1)}`);
}
if (!same) process.exit(1);
