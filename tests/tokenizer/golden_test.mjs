// Golden cases from the reference tokenizer (npm `tokenizers`, pinned in package-lock.json, on the
// real Qwen3 tokenizer.json), made fresh on every run and compared with `kipp tokenize --jsonl`
// and `kipp detokenize --jsonl`: every case must give the same ids and the same decoded text.
// Usage: node golden_test.mjs KIPP MODEL.gguf TOKENIZER_DIR SCRATCH_DIR
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { xorshift32 } from '../support/xorshift32.mjs';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('tokenizers');

const [kipp, model, tokenizerDir, scratch] = process.argv.slice(2);
if (!scratch) {
  console.error('usage: golden_test.mjs KIPP MODEL TOKENIZER_DIR SCRATCH_DIR');
  process.exit(2);
}
fs.mkdirSync(scratch, { recursive: true });
const reference = Tokenizer.fromFile(path.join(tokenizerDir, 'tokenizer.json'));

// ---- A seeded generator, so a failing case reproduces. ----
const next = xorshift32(0x2545f491);
const int = (n) => Math.floor(next() * n);
const pick = (list) => list[int(list.length)];
const repeat = (n, f) => Array.from({ length: n }, (_, i) => f(i));
const cp = (c) => String.fromCodePoint(c);
const fromRange = (first, last) => cp(first + int(last - first + 1));
const isScalar = (c) => c < 0xd800 || c > 0xdfff;
const randomScalar = () => { for (;;) { const c = int(0x110000); if (isScalar(c)) return cp(c); } };

const cases = [];  // {category, text}
const add = (category, text) => cases.push({ category, text });

// ---- English prose ----
const words = ('the of and to in is was that for on as with by he she it they at from his her an are were ' +
  'which this be or had not but what all when we there can your one about out would up so their if will ' +
  'more no time has two like them other some into could than then people only its over new first also ' +
  'tokenizer model weights prompt context window attention layer kernel memory Monday London Paris API ' +
  'GPU CPU naïve café coöperate résumé façade Zürich').split(' ');
const sentence = () => {
  const n = 3 + int(14);
  let s = repeat(n, () => pick(words)).join(' ');
  s = s[0].toUpperCase() + s.slice(1);
  if (next() < 0.3) s = s.replace(' ', ', ');
  return s + pick(['.', '!', '?', '...', ';', ' —', ':']);
};
const prose = [
  'It was the best of times, it was the worst of times, it was the age of wisdom.',
  'The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX! the quick brown fox?',
  '"Well," she said, "I don\'t think that\'s how it works -- not at all."',
  'In 1969, Apollo 11 landed on the Moon; 600 million people watched.',
  'E-mail me at first.last@example.com before 5:30 p.m. (UTC+02:00), please.',
  'Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal.',
];
for (const p of prose) add('prose', p);
for (let i = 0; i < 600; ++i) add('prose', repeat(1 + int(5), sentence).join(pick([' ', '  ', '\n', '\n\n'])));

// ---- Source code ----
const code = [
  'int main(int argc, char** argv) {\n  std::printf("%d\\n", argc);\n  return 0;\n}\n',
  'def fib(n: int) -> int:\n    """Return the n-th Fibonacci number."""\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n',
  'const sum = (xs) => xs.reduce((a, b) => a + b, 0);\nexport default sum;\n',
  'fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!("{:?}", v);\n}\n',
  '#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n\techo "$f" >> out.log 2>&1\ndone\n',
  '{"name": "kipp", "version": "0.1.0", "deps": [1, 2.5, -3e10, null, true], "nested": {"a": {}}}',
  '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Hi</title></head>\n<body><p class=\'x\'>&amp; &lt;b&gt;</p></body></html>\n',
  'SELECT id, name FROM users WHERE age >= 18 AND email LIKE \'%@example.com\' ORDER BY name DESC;',
  'x += y**2 // 3 % 4; if (a != b && c <= d || !e) { return ~f >> 2 << 1; }',
  '    \t  indented_with_mix = [\r\n        1,\r\n        2,\r\n    ]\r\n',
  '// comment with URL https://example.org/a?b=c&d=e#frag\n/* block\n * comment */\n',
  'template <typename T>\nconcept Addable = requires(T a, T b) { { a + b } -> std::same_as<T>; };\n',
];
for (const c of code) add('code', c);
const identifiers = ['foo', 'bar_baz', 'camelCase', 'PascalCase', 'SCREAMING_CASE', 'x1', 'i', 'tmp2var', '__init__'];
const operators = ['=', '==', '!=', '+=', '->', '=>', '::', '&&', '||', '<<', '>>=', '...', '?.', '??'];
for (let i = 0; i < 400; ++i) {
  const indent = pick(['', '  ', '    ', '\t', '\t\t', '        ']);
  const lines = repeat(1 + int(6), () => indent + pick(identifiers) + ' ' + pick(operators) + ' ' +
    pick(identifiers) + pick(['(', '[', '{', '']) + int(1000) + pick([');', '];', '}', ';', ',', '']));
  add('code', lines.join(pick(['\n', '\r\n', '\n\n'])) + pick(['', '\n']));
}

// ---- URLs, e-mail addresses, paths ----
const hosts = ['example.com', 'sub.domain.co.uk', 'localhost:8080', '127.0.0.1', '[::1]:443', 'xn--bcher-kva.example'];
for (let i = 0; i < 300; ++i) {
  const scheme = pick(['https://', 'http://', 'ftp://', 'file:///', '']);
  const pathParts = repeat(int(5), () => pick(identifiers) + pick(['', '.html', '.tar.gz', '-v2', '%20x']));
  const query = next() < 0.5 ? '?' + repeat(1 + int(3), () => pick(identifiers) + '=' + int(99999)).join('&') : '';
  add('url', scheme + pick(hosts) + '/' + pathParts.join('/') + query + (next() < 0.2 ? '#section-' + int(9) : ''));
  if (i % 3 === 0) add('url', pick(identifiers) + '.' + pick(identifiers) + '@' + pick(hosts));
  if (i % 5 === 0) add('url', pick(['C:\\Users\\me\\', '/usr/local/lib/', '~/.config/', '../../']) + pathParts.join('/'));
}

// ---- Scripts ----
const scripts = {
  cjk: ['我们今天去公园散步。', '中华人民共和国成立于一九四九年。', '這是一個繁體中文的句子。', '机器学习模型需要大量数据进行训练'],
  japanese: ['こんにちは、世界！', 'カタカナとひらがなを混ぜて書きます。', '東京は日本の首都です。ｶﾀｶﾅ', 'ありがとうございました。'],
  korean: ['안녕하세요, 세계!', '한국어 문장을 토큰화합니다.', '서울은 대한민국의 수도입니다.'],
  arabic: ['مرحبا بالعالم', 'اللغة العربية جميلة جداً.', 'السَّلَامُ عَلَيْكُمْ'],
  hebrew: ['שלום עולם', 'עברית נכתבת מימין לשמאל.', 'בְּרֵאשִׁית בָּרָא'],
  devanagari: ['नमस्ते दुनिया', 'हिन्दी भाषा बहुत सुंदर है।', 'संस्कृतम् एका प्राचीना भाषा'],
  thai: ['สวัสดีชาวโลก', 'ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ', 'กรุงเทพมหานคร'],
  cyrillic: ['Привет, мир!', 'Съешь же ещё этих мягких французских булок.', 'Українська мова: ґ, є, і, ї.'],
  greek: ['Γειά σου Κόσμε!', 'Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.', 'ἐν ἀρχῇ ἦν ὁ λόγος'],
};
const blocks = {
  cjk: [0x4e00, 0x9fff], japanese: [0x3040, 0x30ff], korean: [0xac00, 0xd7a3], arabic: [0x0600, 0x06ff],
  hebrew: [0x0590, 0x05ff], devanagari: [0x0900, 0x097f], thai: [0x0e00, 0x0e7f], cyrillic: [0x0400, 0x04ff],
  greek: [0x0370, 0x03ff],
};
for (const [name, samples] of Object.entries(scripts)) {
  for (const s of samples) add('script-' + name, s);
  for (let i = 0; i < 90; ++i) {
    const [first, last] = blocks[name];
    const wordsHere = repeat(1 + int(6), () => repeat(1 + int(8), () => fromRange(first, last)).join(''));
    let text = wordsHere.join(pick([' ', '', '  ', ', ', '\n']));
    if (next() < 0.4) text = pick(samples) + pick([' ', '']) + text + pick(['', ' 123', '!', ' abc']);
    add('script-' + name, text);
  }
}

// ---- Emoji: ZWJ sequences, flags, skin tones, keycaps ----
const emoji = ['😀', '👍', '👍🏽', '👨‍👩‍👧‍👦', '🧑🏿‍💻', '🏳️‍🌈', '❤️', '🇩🇪', '🇯🇵', '🇺🇸', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '1️⃣', '#️⃣', '👩‍❤️‍💋‍👨', '🐕‍🦺', '✈️', '☺︎', '🫠', '🥲'];
for (const e of emoji) add('emoji', e);
for (let i = 0; i < 300; ++i) {
  const parts = repeat(1 + int(6), () => next() < 0.5 ? pick(emoji) : fromRange(0x1f300, 0x1faff));
  add('emoji', parts.join(pick(['', ' ', 'a', '\u200d'])) + pick(['', ' ok', '!', '\n']));
}

// ---- Combining marks (NFC composes, reorders) ----
const marks = repeat(0x70, (i) => cp(0x300 + i));
const bases = ['a', 'e', 'i', 'o', 'u', 'A', 'E', 'n', 'c', 's', 'z', 'w', 'y', 'ω', 'α', 'ι', 'ッ', 'か', 'ᄀ'];
for (let i = 0; i < 400; ++i) {
  const clusters = repeat(1 + int(5), () => pick(bases) + repeat(int(4), () => pick(marks)).join(''));
  add('combining', clusters.join(pick(['', ' ', '-'])));
}
const nfdWords = ['Ame\u0301lie', 'cafe\u0301', 'Pokémon'.normalize('NFD'), 'Ångström'.normalize('NFD'),
  '\u1100\u1161\u11a8', '\u1112\u1161\u11ab\u1100\u1173\u11af', 'ệ'.normalize('NFD'), 'q\u0307\u0323', 'a\u0323\u0302'];
for (const w of nfdWords) add('combining', w);
// Marks the reference's Unicode 9.0 normalizer does not know next to marks it does know.
const lateMarks = [0x7fd, 0x898, 0x8d3, 0x9fe, 0xc3c, 0xd3b, 0x1abf, 0x1df6, 0x1dfa, 0x11930, 0x1e4ec, 0x1133b];
for (const m of lateMarks)
  for (const known of ['\u0301', '\u0316', '\u0334', '\u093c', '\u0345']) {
    add('combining', 'a' + cp(m) + known);
    add('combining', 'a' + known + cp(m));
  }
add('combining', '\u{11935}\u{11930}');
add('combining', 'e\u0301\u{105d2}\u0307');

// ---- Digits and long numbers ----
for (let i = 0; i < 250; ++i) {
  const digits = repeat(1 + int(40), () => String(int(10))).join('');
  add('numbers', pick(['', '$', '#', 'v', '-', '+', 'x=']) + digits + pick(['', '.5', ',000', 'e-7', '%', ' km', '٣٤٥', '१२३', '①②']));
}
add('numbers', '3.14159265358979323846264338327950288419716939937510');
add('numbers', '１２３４５６７８９０ and ¹²³ and ⅠⅡⅢ and ½');

// ---- Contractions in all cases ----
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];
const caseMixes = (s) => {
  const out = new Set();
  for (let mask = 0; mask < (1 << s.length); ++mask)
    out.add([...s].map((ch, i) => (mask >> i) & 1 ? ch.toUpperCase() : ch).join(''));
  return [...out];
};
for (const c of contractions)
  for (const v of caseMixes(c)) {
    add('contractions', 'it' + v);
    add('contractions', 'they' + v + ' here');
    add('contractions', v + 'x');
    add('contractions', ' ' + v);
  }
for (const s of ["don't", "I'M", "We'Re", "you'LL", "she'D", "'ſ", "it'ſ", "'ſup", "''s", "'s's", "o'clock", "rock'n'roll", "'123", "’s", "l'été"])
  add('contractions', s);
for (let i = 0; i < 100; ++i) add('contractions', repeat(1 + int(6), () => pick(words) + pick(contractions.flatMap(caseMixes))).join(' '));

// ---- Whitespace runs ----
const spaces = [' ', '  ', '\t', '\n', '\r\n', '\n\n\n', '\r', '\u00a0', '\u3000', '\u2003', '\u0085', '\u2028', '\u000b', '\u000c', ' \n ', '\t\n'];
for (let i = 0; i < 500; ++i) {
  const parts = repeat(1 + int(6), () => pick(['word', 'x', '!', '1', '中', '😀', '.', '']));
  const text = parts.map((p) => p + repeat(int(4), () => pick(spaces)).join('')).join('');
  add('whitespace', pick(['', ...spaces]) + text);
}
for (const s of spaces) { add('whitespace', s); add('whitespace', s.repeat(5)); add('whitespace', 'a' + s + 'b'); add('whitespace', 'a' + s.repeat(3)); }

// ---- Added tokens: alone, inside words, back to back ----
const added = [];
for (let id = 151643; id < 151669; ++id) added.push(reference.idToToken(id));
for (const t of added) {
  add('added', t);
  add('added', 'abc' + t + 'def');
  add('added', t + t);
  add('added', ' ' + t + ' ');
  add('added', t.slice(0, -1));
  add('added', t.toUpperCase());
}
for (let i = 0; i < 250; ++i)
  add('added', repeat(1 + int(5), () => pick([pick(added), sentence(), '\n', ' ', pick(added).slice(1)])).join(''));
add('added', '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
add('added', '<<think>>' + '<think' + '<|im_end|' + '</think></think>' + 'e\u0301<think>\u0301');

// ---- Seeded random strings over the whole code-point range ----
for (let i = 0; i < 800; ++i) add('random', repeat(1 + int(24), randomScalar).join(''));
for (let i = 0; i < 500; ++i)
  add('random', repeat(1 + int(30), () => next() < 0.6 ? fromRange(0x20, 0x7e) : next() < 0.5 ? fromRange(0x80, 0x2fff) : randomScalar()).join(''));

// ---- Every code point once, in runs, so every class and NFC fact is checked against the reference ----
for (let first = 0; first < 0x110000; first += 1024) {
  let text = '';
  for (let c = first; c < first + 1024; ++c) if (isScalar(c)) text += cp(c) + (c % 3 === 0 ? ' ' : '');
  if (text) add('sweep', text);
}

// ---- Reference ids and decode ----
const encodings = await reference.encodeBatch(cases.map((c) => c.text), { addSpecialTokens: false });
const expectedIds = encodings.map((e) => e.getIds());
const expectedText = await reference.decodeBatch(expectedIds, false);

// Random id sequences: lossy decode of partial characters, unused ids, added tokens.
const decodeCases = repeat(400, () => repeat(1 + int(12), () => next() < 0.1 ? 151643 + int(293) : int(151643)));
const decodeExpected = await reference.decodeBatch(decodeCases, false);

// ---- Kipp ----
const casesPath = path.join(scratch, 'golden_cases.jsonl');
fs.writeFileSync(casesPath, cases.map((c) => JSON.stringify({ text: c.text })).join('\n') + '\n');
const kippIdsText = execFileSync(kipp, ['tokenize', '--model', model, '--jsonl', casesPath], { maxBuffer: 1 << 30 }).toString();
const kippIds = kippIdsText.trim().split('\n').map((line) => JSON.parse(line).ids);
const idsPath = path.join(scratch, 'golden_ids.jsonl');
fs.writeFileSync(idsPath, [...expectedIds, ...decodeCases].map((ids) => JSON.stringify({ ids })).join('\n') + '\n');
const kippTextOut = execFileSync(kipp, ['detokenize', '--model', model, '--jsonl', idsPath], { maxBuffer: 1 << 30 }).toString();
const kippText = kippTextOut.trim().split('\n').map((line) => JSON.parse(line).text);

// ---- Compare ----
const failures = [];
const byCategory = new Map();
const show = (s) => JSON.stringify(s.length > 200 ? s.slice(0, 200) + '…' : s);
for (let i = 0; i < cases.length; ++i) {
  const { category, text } = cases[i];
  byCategory.set(category, (byCategory.get(category) ?? 0) + 1);
  const want = expectedIds[i], got = kippIds[i] ?? [];
  const same = want.length === got.length && want.every((v, k) => v === got[k]);
  if (!same) {
    let at = 0;
    while (at < want.length && want[at] === got[at]) ++at;
    failures.push(`case ${i} (${category}) ${show(text)}: ids differ at ${at}: reference [${want.slice(at, at + 8)}] kipp [${got.slice(at, at + 8)}]`);
  } else if (kippText[i] !== expectedText[i]) {
    failures.push(`case ${i} (${category}) ${show(text)}: decode differs: reference ${show(expectedText[i])} kipp ${show(kippText[i])}`);
  }
}
for (let i = 0; i < decodeCases.length; ++i) {
  const got = kippText[cases.length + i];
  if (got !== decodeExpected[i])
    failures.push(`decode case [${decodeCases[i]}]: reference ${JSON.stringify(decodeExpected[i])} kipp ${JSON.stringify(got)}`);
}
const summary = [...byCategory].map(([k, v]) => `${k} ${v}`).join(', ');
console.log(`golden: ${cases.length} encode cases (${summary}) and ${decodeCases.length} decode cases`);
if (failures.length) {
  for (const f of failures.slice(0, 20)) console.log('MISMATCH ' + f);
  console.log(`${cases.length + decodeCases.length - failures.length} passed, ${failures.length} failed`);
  process.exit(1);
}
console.log(`all ${cases.length + decodeCases.length} cases match the reference (ids and decode)`);
