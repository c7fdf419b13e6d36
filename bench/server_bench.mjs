// Server throughput and latency, Kipp next to llama.cpp's llama-server on the same GGUF file:
//   - aggregate decode tokens/s with 1, 2, 4, 8 and 16 concurrent streams (greedy, end-of-text
//     suppressed by logit_bias so every stream generates exactly --tokens tokens), and the time
//     to first token of those streams (TTFT under load);
//   - prefix reuse: TTFT of a ~2k-token prompt cold, then again with the same long prefix.
// Each figure is the median of --repeats runs, with min and max. Not a test: run it by hand
// (docs/BENCHMARKS.md has the command and the numbers).
//
//   node bench/server_bench.mjs --kipp build/src/kipp --model M.gguf [--llama-server PATH]
//        [--threads 2] [--streams 1,2,4,8,16] [--tokens 64] [--repeats 3] [--prefix-words 1500]
//        [--kipp-flags "--spec --kv-cache q8_0"]   (more `kipp serve` flags)
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

import { sseData } from '../tests/support/sse.mjs';
import { median, prose, spread } from './prose.mjs';

const { values: args } = parseArgs({ options: {
  kipp: { type: 'string' }, model: { type: 'string' }, 'llama-server': { type: 'string' },
  threads: { type: 'string', default: '2' }, streams: { type: 'string', default: '1,2,4,8,16' },
  tokens: { type: 'string', default: '64' }, repeats: { type: 'string', default: '3' },
  'prefix-words': { type: 'string', default: '1500' }, 'skip-throughput': { type: 'boolean', default: false },
  only: { type: 'string' }, 'kipp-flags': { type: 'string', default: '' },
} });
if (!args.kipp || !args.model) {
  console.error('usage: server_bench.mjs --kipp KIPP --model GGUF [--llama-server PATH] [...]');
  process.exit(2);
}
const streams = args.streams.split(',').map(Number);
const tokens = Number(args.tokens);
const repeats = Number(args.repeats);
const maxStreams = Math.max(...streams);
const noEos = { 151643: -100, 151645: -100 };  // <|endoftext|>, <|im_end|>

// Starts a server and resolves once GET /health answers 200 (both servers have it).
function launch(command, argv, url) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LD_LIBRARY_PATH: `${process.env.LD_LIBRARY_PATH ?? ''}:${command.replace(/\/[^/]*$/, '')}` } });
    let log = '';
    const timer = setTimeout(() => reject(new Error(`${command} did not start:\n${log.slice(-2000)}`)), 300000);
    const onData = (data) => { log = (log + data.toString()).slice(-4000); };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${command} exited with ${code}:\n${log.slice(-2000)}`)));
    const poll = async () => {
      try {
        if ((await fetch(`${url}/health`)).status === 200) {
          clearTimeout(timer);
          return resolve(child);
        }
      } catch {
        // not listening yet
      }
      setTimeout(poll, 200);
    };
    poll();
  });
}

const port = () => 20000 + Math.floor(Math.random() * 20000);

async function startKipp() {
  const p = port();
  const child = await launch(args.kipp, ['serve', '--model', args.model, '--port', String(p), '--threads',
    args.threads, '--max-batch', String(maxStreams), ...args['kipp-flags'].split(' ').filter(Boolean)],
  `http://127.0.0.1:${p}`);
  return { name: 'kipp', url: `http://127.0.0.1:${p}`, child, model: JSON.parse(await (await fetch(
    `http://127.0.0.1:${p}/v1/models`)).text()).data[0].id };
}

async function startLlama() {
  const p = port();
  const child = await launch(args['llama-server'], ['-m', args.model, '--port', String(p), '-t', args.threads,
    '-tb', args.threads, '-np', String(maxStreams), '-c', String(maxStreams * 4096), '--no-webui'],
    `http://127.0.0.1:${p}`);
  return { name: 'llama.cpp', url: `http://127.0.0.1:${p}`, child, model: 'model' };
}

// One streamed completion; resolves with its time to first token and its token count.
async function stream(server, prompt, maxTokens, started) {
  const response = await fetch(`${server.url}/v1/completions`, { method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: server.model, prompt, max_tokens: maxTokens, temperature: 0, stream: true,
      logit_bias: noEos }) });
  if (response.status !== 200) throw new Error(`${server.name}: ${response.status} ${await response.text()}`);
  let first = null;
  let pieces = 0;
  for await (const data of sseData(response.body)) {
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data);
    if (chunk.error) throw new Error(`${server.name}: ${JSON.stringify(chunk.error)}`);
    if (chunk.choices?.[0]?.text) {
      ++pieces;
      if (first === null) first = performance.now() - started;
    }
  }
  return { ttft: first, pieces };
}


async function throughput(server) {
  const rows = [];
  let round = 0;
  await stream(server, prose(1, 20), 8, performance.now());  // warm-up
  for (const count of streams) {
    const rates = [];
    const ttfts = [];
    for (let r = 0; r < repeats; ++r) {
      const started = performance.now();
      // Distinct prompts of about 32 tokens, so no engine can share their prefill.
      const results = await Promise.all(Array.from({ length: count }, (_, i) =>
        stream(server, `${++round} ${i} ${prose(round * 100 + i, 24)}`, tokens, started)));
      const seconds = (performance.now() - started) / 1000;
      rates.push(count * tokens / seconds);
      ttfts.push(median(results.map((x) => x.ttft)));
    }
    rows.push({ streams: count, rates, ttfts });
    console.error(`${server.name}: ${count} streams: ${spread(rates, 1)} tok/s, TTFT ${spread(ttfts, 1)} ms`);
  }
  return rows;
}

async function prefixReuse(server) {
  const cold = [];
  const warm = [];
  for (let r = 0; r < repeats; ++r) {
    const shared = `${r} ${prose(9000 + r, Number(args['prefix-words']))}`;
    cold.push((await stream(server, `${shared} question one`, 4, performance.now())).ttft);
    warm.push((await stream(server, `${shared} question two`, 4, performance.now())).ttft);
  }
  console.error(`${server.name}: prefix TTFT cold ${spread(cold, 1)} ms, warm ${spread(warm, 1)} ms`);
  return { cold, warm };
}

const results = {};
const starts = { kipp: startKipp, 'llama.cpp': startLlama };
const engines = args.only ? [args.only] : ['kipp', ...(args['llama-server'] ? ['llama.cpp'] : [])];
for (const start of engines.map((name) => starts[name])) {
  const server = await start();
  try {
    results[server.name] = {
      throughput: args['skip-throughput'] ? [] : await throughput(server),
      prefix: await prefixReuse(server),
    };
  } finally {
    server.child.kill('SIGTERM');
  }
}

console.log('| streams | ' + Object.keys(results).map((n) => `${n} tok/s | ${n} TTFT ms`).join(' | ') +
  (results['llama.cpp'] ? ' | ratio |' : ' |'));
console.log('|---:|' + Object.keys(results).map(() => '---:|---:|').join('') + (results['llama.cpp'] ? '---:|' : ''));
streams.forEach((count, i) => {
  if (args['skip-throughput']) return;
  const cells = Object.values(results).map((r) => `${spread(r.throughput[i].rates, 1)} | ${spread(r.throughput[i].ttfts, 1)}`);
  const ratio = results['llama.cpp']
    ? ` | ${(median(results.kipp.throughput[i].rates) / median(results['llama.cpp'].throughput[i].rates)).toFixed(2)}×`
    : '';
  console.log(`| ${count} | ${cells.join(' | ')}${ratio} |`);
});
for (const [name, r] of Object.entries(results))
  console.log(`${name} prefix reuse: cold TTFT ${spread(r.prefix.cold, 1)} ms, warm ${spread(r.prefix.warm, 1)} ms, ` +
    `ratio ${(median(r.prefix.cold) / median(r.prefix.warm)).toFixed(1)}×`);
