// Time to first token of a short request that arrives while a long prompt is being evaluated, as
// opencode sends its ~540-token title request beside its ~7,200-token turn. For each round, on
// fresh prompts (no prefix to reuse): the short request alone, then the long request and, 200 ms
// later, the short one beside it. Medians of --rounds with min and max. Not a test: run it by hand
// (docs/BENCHMARKS.md has the command and the numbers); --kipp picks the binary, so two builds
// compare on the same machine.
//
//   node bench/short_beside_long.mjs --kipp build/src/kipp --model M.gguf [--threads 2]
//        [--long-words 2500] [--short-words 400] [--rounds 3] [--kipp-flags "..."]
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

import { sseData } from '../tests/support/sse.mjs';
import { prose, spread } from './prose.mjs';

const { values: args } = parseArgs({ options: {
  kipp: { type: 'string' }, model: { type: 'string' }, threads: { type: 'string', default: '2' },
  'long-words': { type: 'string', default: '2500' }, 'short-words': { type: 'string', default: '400' },
  rounds: { type: 'string', default: '3' }, 'kipp-flags': { type: 'string', default: '' },
} });
if (!args.kipp || !args.model) {
  console.error('usage: short_beside_long.mjs --kipp KIPP --model GGUF [...]');
  process.exit(2);
}

const child = spawn(args.kipp, ['serve', '--model', args.model, '--port', '0', '--threads', args.threads,
  ...args['kipp-flags'].split(' ').filter(Boolean)], { stdio: ['ignore', 'ignore', 'pipe'] });
const url = await new Promise((resolve, reject) => {
  let log = '';
  child.stderr.on('data', (data) => {
    log += data;
    const port = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
    if (port && log.includes('kipp serve: ready')) resolve(`http://127.0.0.1:${port[1]}`);
  });
  child.on('exit', (code) => reject(new Error(`kipp serve exited with ${code}:\n${log}`)));
});
const model = (await (await fetch(`${url}/v1/models`)).json()).data[0].id;

// One streamed completion: its time to first token and to the end, in ms from `started`, and
// its prompt's length.
async function ask(prompt, started) {
  const response = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: 8, temperature: 0, stream: true,
      stream_options: { include_usage: true } }) });
  let first = null;
  let tokens = 0;
  for await (const data of sseData(response.body)) {
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data);
    if (chunk.usage) tokens = chunk.usage.prompt_tokens;
    if (first === null && chunk.choices?.[0]?.text !== undefined) first = performance.now() - started;
  }
  return { first, end: performance.now() - started, tokens };
}


const alone = [];
const beside = [];
const long = [];
let sizes;
try {
  for (let round = 0; round < Number(args.rounds); ++round) {
    const short = () => `${round} short ${performance.now()} ${prose(1000 + round, Number(args['short-words']))}`;
    alone.push((await ask(short(), performance.now())).first);
    const started = performance.now();
    const longAnswer = ask(`${round} long ${prose(5000 + round, Number(args['long-words']))}`, started);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const shortAnswer = await ask(short(), performance.now());
    const longDone = await longAnswer;
    beside.push(shortAnswer.first);
    long.push(longDone.first);
    sizes = `short ${shortAnswer.tokens} tokens, long ${longDone.tokens} tokens`;
    console.error(`round ${round}: short alone ${alone.at(-1).toFixed(0)} ms, beside ${shortAnswer.first.toFixed(0)} ms; ` +
                  `long TTFT ${longDone.first.toFixed(0)} ms`);
  }
} finally {
  child.kill('SIGTERM');
}
console.log(`${sizes}; TTFT in ms, median (min–max) of ${args.rounds}`);
console.log(`| short alone | short beside the long | long beside the short |`);
console.log(`|---:|---:|---:|`);
console.log(`| ${spread(alone, 0)} | ${spread(beside, 0)} | ${spread(long, 0)} |`);
