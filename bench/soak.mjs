// The driver of bench/soak.sh: for DURATION seconds against a fleet that scripts/fleet.sh runs,
//   - normal clients: chat on the OpenAI and Anthropic routes, streamed and not, some under a JSON
//     schema; each request is served (2xx and a complete answer), failed (an HTTP error status, or
//     an error the server sent inside the answer), lost (reset, hung, or a stream cut without its
//     end marker) or wrong (complete, but not what was asked);
//   - hostile clients, each in a loop of its own, at HAProxy and straight at the replicas: slow
//     readers, abandoned streams, slowloris headers, pipelined garbage, oversized bodies, deeply
//     nested JSON, and schemas whose `pattern` nests groups deeply;
//   - chaos: every --chaos-every seconds one replica (never replica1, below) gets SIGKILL or
//     SIGTERM in turn, and the supervisor of scripts/fleet.sh starts it again;
//   - sampling: every --sample-every seconds the RSS of every replica and of HAProxy.
// It prints a summary, writes it with the raw records into OUT (summary.json, rss.csv,
// normal.csv, hostile.csv), and exits 1 when a check fails (`checks`, near the end).
//
// replica1 is never signalled: its one process lives through the whole run under every kind of
// load, so its memory is the leak witness; the others' processes live only between signals.
//
//   node bench/soak.mjs --port P --fleet-dir DIR --replicas N --out DIR [--duration 1800]
//        [--clients 3] [--chaos-every 30] [--sample-every 5] [--warmup S] [--rss-growth 25] [--seed 1]
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { parseArgs } from 'node:util';

import { xorshift32 } from '../tests/support/xorshift32.mjs';
import { metric, metrics } from '../tests/server/server_process.mjs';

const { values: args } = parseArgs({ options: {
  port: { type: 'string' }, 'fleet-dir': { type: 'string' }, replicas: { type: 'string' }, out: { type: 'string' },
  duration: { type: 'string', default: '1800' }, clients: { type: 'string', default: '3' },
  'chaos-every': { type: 'string', default: '30' }, 'sample-every': { type: 'string', default: '5' },
  warmup: { type: 'string' }, 'rss-growth': { type: 'string', default: '25' }, seed: { type: 'string', default: '1' },
} });
if (!args.port || !args['fleet-dir'] || !args.replicas || !args.out) {
  console.error('usage: soak.mjs --port P --fleet-dir DIR --replicas N --out DIR [--duration S] [...]');
  process.exit(2);
}
const PORT = Number(args.port);
const FLEET = args['fleet-dir'];
const REPLICAS = Number(args.replicas);
const DURATION = Number(args.duration);
const CHAOS_EVERY = Number(args['chaos-every']);
const SAMPLE_EVERY = Number(args['sample-every']);
const WARMUP = args.warmup === undefined ? Math.min(60, DURATION / 4) : Number(args.warmup);
const RSS_GROWTH = Number(args['rss-growth']) / 100;
const FRONT = `http://127.0.0.1:${PORT}`;  // HAProxy
const WINDOW = 30;  // seconds: the unit of "normal clients keep being served" and of the latency spread
const NORMAL_TIMEOUT_MS = 60000;
const NO_EOS = { 151643: -100, 151645: -100 };  // <|endoftext|>, <|im_end|>: a stream as long as max_tokens

const t0 = performance.now();
const now = () => (performance.now() - t0) / 1000;  // seconds into the run
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const random = xorshift32(Number(args.seed) * 2654435761 || 1);
const pick = (list) => list[Math.floor(random() * list.length)];
const WORDS = 'amber birch cedar delta ember fjord glade harbor island juniper kestrel lagoon meadow nectar'.split(' ');
const words = (n) => Array.from({ length: n }, () => pick(WORDS)).join(' ');

const model = (await (await fetch(`${FRONT}/v1/models`)).json()).data[0].id;

// ---- the fleet, as scripts/fleet.sh leaves it in its folder and HAProxy reports it

const pidOf = (name) => {
  try {
    return Number(readFileSync(`${FLEET}/${name}.pid`, 'utf8'));
  } catch {
    return null;  // between an exit and the supervisor's restart
  }
};
const rssMiB = (pid) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return null;  // the process has just exited
  }
};

// HAProxy's view of the backend: each replica's status, and the retries and redispatches it made;
// nothing while HAProxy itself is being restarted.
async function haproxyStats() {
  try {
    const csv = await (await fetch(`http://127.0.0.1:${PORT - 1}/stats;csv`)).text();
    const rows = csv.split('\n').filter((line) => line.startsWith('replicas,')).map((line) => line.split(','));
    const backend = rows.find((fields) => fields[1] === 'BACKEND');
    return { status: Object.fromEntries(rows.filter((f) => f[1].startsWith('replica')).map((f) => [f[1], f[17]])),
      retries: Number(backend[15]), redispatches: Number(backend[16]) };
  } catch {
    return { status: {}, retries: NaN, redispatches: NaN };
  }
}

// ---- normal clients

const SCHEMA = { type: 'object', additionalProperties: false, required: ['name', 'count', 'ok'], properties: {
  name: { type: 'string', maxLength: 8 }, count: { type: 'integer', minimum: 0, maximum: 999 }, ok: { type: 'boolean' } } };
const KINDS = ['openai', 'anthropic'].flatMap((api) => [false, true].flatMap((stream) => [false, true].map((schema) => ({
  name: `${api}${stream ? '-stream' : ''}${schema ? '-schema' : ''}`, api, stream, schema,
  route: api === 'openai' ? '/v1/chat/completions' : '/v1/messages' }))));

function normalBody(kind) {
  // A few openings shared between requests, so that some prompts reuse pooled prefixes and some do not.
  const messages = [{ role: 'user', content: `${pick(['Tell me about', 'Describe', 'List'])} ${words(3 + Math.floor(random() * 12))}` }];
  const common = { model, messages, max_tokens: 16 + Math.floor(random() * 40), stream: kind.stream,
    seed: Math.floor(random() * 1e6) };
  if (kind.api === 'openai') return { ...common, chat_template_kwargs: { enable_thinking: false },
    ...(kind.schema && { response_format: { type: 'json_schema', json_schema: { name: 'item', strict: true, schema: SCHEMA } } }) };
  return { ...common, thinking: { type: 'disabled' },
    ...(kind.schema && { output_config: { format: { type: 'json_schema', schema: SCHEMA } } }) };
}

// The events of a server-sent event stream as { event, data }; Anthropic's name their event in an
// `event:` line, OpenAI's carry only data. Comments (keep-alives) are skipped.
async function* sseEvents(body) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let end; (end = buffer.indexOf('\n\n')) >= 0;) {
      const lines = buffer.slice(0, end).split('\n').filter((line) => !line.startsWith(':'));
      buffer = buffer.slice(end + 2);
      const field = (name) => lines.filter((l) => l.startsWith(`${name}: `)).map((l) => l.slice(name.length + 2));
      if (lines.length) yield { event: field('event')[0] ?? null, data: field('data').join('\n') };
    }
  }
}

// A whole answer's text, and how it ended: `complete` when it carries its end (a finish reason),
// `stopped` when the model ended it rather than max_tokens.
function answerOf(kind, json) {
  if (kind.api === 'openai') {
    const choice = json.choices?.[0];
    return { text: choice?.message?.content ?? '', complete: typeof choice?.finish_reason === 'string',
      stopped: choice?.finish_reason === 'stop' };
  }
  return { text: (json.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join(''),
    complete: json.type === 'message' && typeof json.stop_reason === 'string', stopped: json.stop_reason === 'end_turn' };
}

// A stream's text and end. `error` is an error the server sent inside the stream.
async function streamedAnswer(kind, body) {
  let text = '';
  let finish = null;
  let ended = false;
  for await (const { event, data } of sseEvents(body)) {
    if (data === '[DONE]') {
      ended = true;
      continue;
    }
    const chunk = JSON.parse(data);
    if (chunk.error || event === 'error') return { error: JSON.stringify(chunk.error ?? chunk).slice(0, 200) };
    if (kind.api === 'openai') {
      text += chunk.choices?.[0]?.delta?.content ?? '';
      finish = chunk.choices?.[0]?.finish_reason ?? finish;
    } else if (chunk.type === 'content_block_delta' && chunk.delta.type === 'text_delta') {
      text += chunk.delta.text;
    } else if (chunk.type === 'message_delta') {
      finish = chunk.delta.stop_reason;
    } else if (chunk.type === 'message_stop') {
      ended = true;
    }
  }
  return { text, complete: ended, stopped: finish === 'stop' || finish === 'end_turn' };
}

const normal = [];  // one record per request

async function normalRequest(kind) {
  const record = { kind: kind.name, start: now(), end: null, outcome: null, reason: '', replica: '', ms: null, checked: false };
  try {
    const response = await fetch(FRONT + kind.route, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify(normalBody(kind)), signal: AbortSignal.timeout(NORMAL_TIMEOUT_MS) });
    record.replica = response.headers.get('x-kipp-replica') ?? '';
    if (!response.ok) {
      await response.arrayBuffer();
      Object.assign(record, { outcome: 'failed', reason: `HTTP ${response.status}` });
    } else {
      let answer;
      try {
        answer = kind.stream ? await streamedAnswer(kind, response.body) : answerOf(kind, await response.json());
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        answer = { malformed: `not JSON: ${error.message}` };
      }
      Object.assign(record, judge(kind, answer));
    }
  } catch (error) {
    const reason = error.name === 'TimeoutError' ? `no answer within ${NORMAL_TIMEOUT_MS / 1000} s`
      : error.cause?.code ?? error.message;
    Object.assign(record, { outcome: 'lost', reason });
  }
  record.end = now();
  if (record.outcome === 'served') record.ms = (record.end - record.start) * 1000;
  normal.push(record);
}

function judge(kind, answer) {
  if (answer.error) return { outcome: 'failed', reason: `error inside the answer: ${answer.error}` };
  if (answer.malformed) return { outcome: 'wrong', reason: answer.malformed };
  if (!answer.complete) return kind.stream ? { outcome: 'lost', reason: 'the stream ended before its end marker' }
    : { outcome: 'wrong', reason: 'an answer without its end' };
  // An answer cut by max_tokens may stop inside the JSON; one the model ended must be whole.
  if (kind.schema && answer.stopped) {
    let value;
    try {
      value = JSON.parse(answer.text);
    } catch {
      value = null;
    }
    if (!value || !SCHEMA.required.every((key) => key in value))
      return { outcome: 'wrong', reason: `not the schema's JSON: ${answer.text.slice(0, 100)}` };
    return { outcome: 'served', checked: true };
  }
  return { outcome: 'served' };
}

async function normalClient() {
  while (now() < DURATION) {
    await normalRequest(pick(KINDS));
    await sleep(100 + random() * 300);
  }
}

// ---- hostile clients, over raw sockets

// One connection to 127.0.0.1:port; `drive(socket, stop)` writes what the attack writes and may
// end it by calling stop(). Resolves once the server closes it, stop() is called or limitMs passes,
// with the first 16 KiB received and the status of every response in them, the last bytes
// received and how it ended: 'closed' (by the server), 'stopped' (by us), 'limit', or the socket
// error's code.
function rawConnection(port, limitMs, drive) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let head = '';
    let tail = '';
    let received = 0;
    let how = null;
    const finish = (reason) => {
      if (how) return;
      how = reason;
      clearTimeout(timer);
      socket.destroy();
      // Anywhere, not only after a CRLF: a body without a length ends where the next response begins.
      const statuses = [...head.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
      resolve({ head, statuses, tail, received, how });
    };
    const timer = setTimeout(() => finish('limit'), limitMs);
    socket.on('data', (data) => {
      received += data.length;
      const text = data.toString('latin1');
      if (head.length < 16384) head += text;
      tail = (tail + text).slice(-256);
    });
    socket.on('error', (error) => finish(error.code ?? 'error'));
    socket.on('close', () => finish('closed'));
    socket.on('connect', () => drive(socket, () => finish('stopped')));
  });
}

const request = (path, body, headers = '') => Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${headers}\r\n`), body]);
const writeOnce = (bytes) => (socket) => socket.write(bytes);
// Resolves once the socket can take more, or is gone.
const writable = (socket) => new Promise((resolve) => {
  const done = () => {
    socket.off('drain', done).off('close', done);
    resolve();
  };
  socket.on('drain', done).on('close', done);
});
const chatBody = (fields) => Buffer.from(JSON.stringify({ model, messages: [{ role: 'user', content: words(6) }],
  temperature: 0, stream: true, logit_bias: NO_EOS, chat_template_kwargs: { enable_thinking: false }, ...fields }));
const firstStatus = (result) => (result.statuses.length ? `status ${result.statuses[0]}` : null);

// What a request that must be refused got: a 4xx is right; a 503 (no replica free, draining) or a
// connection refused by a replica being restarted is no answer about the request.
function refusal(result) {
  const status = result.statuses[0];
  if (status >= 400 && status < 500) return { outcome: `status ${status}` };
  if (status === 503 || result.how === 'ECONNREFUSED') return { outcome: firstStatus(result) ?? 'refused', unanswered: true };
  // A constraint accepted but not enforced says so in a header: worth naming in the outcome.
  const unenforced = /\r\nx-kipp-unenforced: ([^\r]*)/i.exec(result.head);
  return { outcome: `${firstStatus(result) ?? `${result.how} without an answer`}${unenforced ? ` (unenforced: ${unenforced[1]})` : ''}`,
    wrong: true };
}

// Within the length limit of a pattern (8,192 code points), so that the nesting limit is what refuses it.
const DEEP_PATTERN = '('.repeat(4000) + 'a' + ')'.repeat(4000);
const patternSchema = { type: 'object', properties: { s: { type: 'string', pattern: DEEP_PATTERN } } };
const nested = '['.repeat(5000) + ']'.repeat(5000);

// Each attack: its pace (seconds between two), the longest one may take, and what it does to a
// port; it returns { outcome, wrong?, unanswered?, bytes? (received, where the pace matters) }.
const ATTACKS = {
  // Reads a long stream at about 2 KiB/s. Half of them ask for two choices with 20 logprobs a
  // token: megabytes that wait in socket buffers, and in the server up to --max-queued-bytes.
  'slow-reader': { every: 3, limit: 40, async run(port) {
    const flood = random() < 0.5;
    const body = chatBody({ max_tokens: flood ? 800 : 1000, ...(flood && { n: 2, logprobs: true, top_logprobs: 20 }) });
    let timer;
    const result = await rawConnection(port, 40000, (socket) => {
      socket.pause();
      socket.write(request('/v1/chat/completions', body));
      // In paused mode read() hands over what is buffered and lets the socket fetch more, up to
      // its high-water mark; the kernel's buffers then fill and the server's writes wait.
      timer = setInterval(() => socket.read(Math.min(1024, socket.readableLength)), 500);
    });
    clearInterval(timer);
    const kind = flood ? 'flood' : 'plain';
    const bytes = result.received;
    if (result.statuses[0] !== 200) return { outcome: `${kind}: ${firstStatus(result) ?? result.how}`, bytes };
    if (result.tail.includes('data: [DONE]')) return { outcome: `${kind}: read to the end`, bytes };
    return { outcome: `${kind}: ${result.how === 'limit' ? 'left by us at 40 s' : `cut (${result.how})`}`, bytes };
  } },
  // Starts a stream and goes: half before any answer, half after its first event.
  abandoned: { every: 2, limit: 30, async run(port) {
    const early = random() < 0.5;
    const result = await rawConnection(port, 30000, (socket, stop) => {
      socket.write(request('/v1/chat/completions', chatBody({ max_tokens: 1000 })));
      if (early) setTimeout(stop, random() * 200);
      else socket.on('data', (data) => data.includes('data: ') && stop());
    });
    if (result.how === 'stopped') return { outcome: early ? 'left before an answer' : 'left after the first event' };
    return { outcome: `${firstStatus(result) ?? result.how} before we left` };
  } },
  // Headers a byte every 400 ms, never ending: the server (or HAProxy) must cut them off
  // (--request-timeout, `timeout http-request`: 30 s).
  slowloris: { every: 2, limit: 45, async run(port) {
    const header = 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Slow: ';
    let timer;
    const result = await rawConnection(port, 45000, (socket) => {
      let sent = 0;
      timer = setInterval(() => socket.write(sent < header.length ? header[sent++] : 'a'), 400);
    });
    clearInterval(timer);
    if (result.how === 'limit') return { outcome: 'still open at 45 s', wrong: true };
    return { outcome: firstStatus(result) ?? `${result.how} without an answer` };
  } },
  // Several requests in one write: a good one, one with a malformed body, one that is not HTTP,
  // then random bytes; or random bytes alone. Any answer but a server error is right.
  garbage: { every: 3, limit: 40, async run(port) {
    const noise = Buffer.from(Array.from({ length: 64 + Math.floor(random() * 4000) }, () => Math.floor(random() * 256)));
    const bytes = random() < 0.5 ? Buffer.concat([noise, Buffer.from('\r\n\r\n')]) : Buffer.concat([
      Buffer.from('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
      Buffer.from('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 11\r\n\r\n{"model":[}'),
      Buffer.from('BREW /pot HTCPCP/1.0\r\n\0\0\0\r\n\r\n'), noise]);
    const result = await rawConnection(port, 40000, writeOnce(bytes));
    const outcome = result.statuses.length ? `statuses ${result.statuses.join(' ')}` : `${result.how} without an answer`;
    const wrong = result.how === 'limit' || result.statuses.some((s) => s >= 500 && s !== 503);
    return { outcome, wrong };
  } },
  // A body past --max-body-bytes (8 MiB): declared in Content-Length, or sent in chunks without one.
  oversized: { every: 5, limit: 40, async run(port) {
    const declared = random() < 0.5;
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${
      declared ? `Content-Length: ${16 << 20}` : 'Transfer-Encoding: chunked'}\r\n\r\n`;
    const piece = Buffer.alloc(64 << 10, 0x20);
    const result = await rawConnection(port, 40000, async (socket) => {
      socket.write(head);
      let answered = false;
      socket.once('data', () => { answered = true; });
      // Written as a client uploads: piece by piece, each once the last has gone out, until the
      // server answers or closes; a declared body stops at 64 KiB, the server answering from the header.
      for (let sent = 0; !answered && !socket.destroyed && sent < (declared ? 1 : 144); ++sent) {
        const more = declared ? piece : Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
        if (!socket.write(more)) await writable(socket);
      }
    });
    const verdict = refusal(result);
    return { ...verdict, outcome: `${declared ? 'declared' : 'chunked'}: ${verdict.outcome}` };
  } },
  // JSON nested 5,000 deep (the limit is 64), on both APIs.
  'nested-json': { every: 3, limit: 20, async run(port) {
    const anthropic = random() < 0.5;
    const body = Buffer.from(`{"model":${JSON.stringify(model)},"max_tokens":4,"messages":${nested}}`);
    return refusal(await rawConnection(port, 20000, writeOnce(request(anthropic ? '/v1/messages' : '/v1/chat/completions', body))));
  } },
  // A `pattern` with groups nested 4,000 deep (the limit is 64): a response format, or a forced tool.
  'nested-pattern': { every: 3, limit: 20, async run(port) {
    const anthropic = random() < 0.5;
    const messages = [{ role: 'user', content: 'hi' }];
    const body = anthropic
      ? { model, messages, max_tokens: 4, tools: [{ name: 'f', input_schema: patternSchema }], tool_choice: { type: 'tool', name: 'f' } }
      : { model, messages, max_tokens: 4, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: patternSchema } } };
    const path = anthropic ? '/v1/messages' : '/v1/chat/completions';
    return refusal(await rawConnection(port, 20000, writeOnce(request(path, Buffer.from(JSON.stringify(body))))));
  } },
};

const hostile = [];  // one record per attack

// Sends its attacks in turn to HAProxy and to a replica straight, starting none that could run past the end.
async function hostileClient(name) {
  const attack = ATTACKS[name];
  for (let i = 0; now() + attack.limit <= DURATION; ++i) {
    const replica = i % 2 ? 1 + Math.floor(random() * REPLICAS) : 0;
    const start = now();
    const result = await attack.run(PORT + replica);
    hostile.push({ kind: name, target: replica ? `replica${replica}` : 'haproxy', start, end: now(), ...result });
    await sleep(attack.every * 1000 * (0.5 + random()));
  }
}

// ---- chaos

// { t, replica, signal, pid, back, state }: back is the seconds until HAProxy had it UP again,
// state what HAProxy said of it last.
const signals = [];

// The pid in REPLICA.pid, if it is a running `kipp serve` (not a pid reused since it exited).
function servingPid(replica) {
  const pid = pidOf(replica);
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('serve') ? pid : null;
  } catch {
    return null;
  }
}

async function recovery(event) {
  for (;;) {
    const pid = servingPid(event.replica);
    event.state = (await haproxyStats()).status[event.replica] ?? 'nothing';
    if (pid && pid !== event.pid && event.state.startsWith('UP')) {
      event.back = now() - event.t;
      return;
    }
    if (now() - event.t > 120) return;  // never back: a failed check below
    await sleep(250);
  }
}

// Signals only while HAProxy's health checks pass on every replica, so that one always serves
// (a replica its agent left in DRAIN counts: it could serve); each replica alternates SIGKILL and
// SIGTERM.
async function chaos() {
  const targets = Array.from({ length: REPLICAS - 1 }, (_, i) => `replica${i + 2}`);
  const recoveries = [];
  for (let next = CHAOS_EVERY; targets.length && next < DURATION;) {
    await sleep((next - now()) * 1000);
    const states = Object.values((await haproxyStats()).status);
    if (states.length < REPLICAS || !states.every((s) => s.startsWith('UP') || s.startsWith('DRAIN'))) {
      next = now() + 1;
      continue;
    }
    const replica = targets[signals.length % targets.length];
    const signal = signals.filter((s) => s.replica === replica).length % 2 ? 'SIGTERM' : 'SIGKILL';
    const pid = servingPid(replica);
    if (!pid) {
      next = now() + 1;
      continue;
    }
    try {
      process.kill(pid, signal);
    } catch {  // it exited since servingPid looked
      next = now() + 1;
      continue;
    }
    const event = { t: now(), replica, signal, pid, back: null, state: null };
    signals.push(event);
    recoveries.push(recovery(event));
    next = event.t + CHAOS_EVERY;
  }
  await Promise.all(recoveries);
}

// ---- sampling

const processes = [...Array.from({ length: REPLICAS }, (_, i) => `replica${i + 1}`), 'haproxy'];
const samples = [];  // { t, replica1: { pid, rss }, ..., haproxy: {...} }

function sample() {
  const row = { t: now() };
  for (const name of processes) {
    const pid = pidOf(name);
    row[name] = { pid, rss: pid ? rssMiB(pid) : null };
  }
  samples.push(row);
}

// ---- the run

const statsBefore = await haproxyStats();
sample();
const sampler = setInterval(sample, SAMPLE_EVERY * 1000);
await Promise.all([
  ...Array.from({ length: Number(args.clients) }, normalClient),
  ...Object.keys(ATTACKS).map(hostileClient),
  chaos(),
]);
clearInterval(sampler);
sample();
const statsAfter = await haproxyStats();

// Every replica idle once the clients are gone: nothing running, every KV block back in the pool.
async function idle(replica) {
  let values = {};
  for (let i = 0; i < 300; ++i) {
    values = await metrics(`http://127.0.0.1:${PORT + replica}`).catch(() => ({}));
    if (metric(values, 'kipp_requests_running') === 0 && metric(values, 'vllm:kv_cache_usage_perc') === 0) return null;
    await sleep(100);
  }
  return `running ${metric(values, 'kipp_requests_running')}, KV in use ${metric(values, 'vllm:kv_cache_usage_perc')}`;
}
const busy = {};
for (let i = 1; i <= REPLICAS; ++i) busy[`replica${i}`] = await idle(i);
const witness = await metrics(`http://127.0.0.1:${PORT + 1}`).catch(() => ({}));

// ---- figures

const countBy = (list, key) => list.reduce((counts, x) => ({ ...counts, [key(x)]: (counts[key(x)] ?? 0) + 1 }), {});
const quantile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null);
const median = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5);
const round = (x, digits = 1) => (x === null || x === undefined ? null : Number(x.toFixed(digits)));
const spread = (xs) => (xs.length ? { median: round(median(xs)), min: round(Math.min(...xs)), max: round(Math.max(...xs)) } : null);

// A lost normal request is excused when a SIGKILL hit its replica (or, unknown, any replica) while it ran.
const killedUnder = (r) => signals.some((s) => s.signal === 'SIGKILL' && s.t >= r.start && s.t <= r.end + 1 &&
  (!r.replica || r.replica === s.replica));
const lost = normal.filter((r) => r.outcome === 'lost');
const lostOutside = lost.filter((r) => !killedUnder(r));
const served = normal.filter((r) => r.outcome === 'served');

const windowCount = Math.max(1, Math.floor(DURATION / WINDOW));  // the last one takes the rest
const windows = Array.from({ length: windowCount }, (_, i) => {
  const from = i * WINDOW;
  const to = i === windowCount - 1 ? Infinity : from + WINDOW;
  const inside = normal.filter((r) => r.end >= from && r.end < to);
  const ms = inside.filter((r) => r.outcome === 'served').map((r) => r.ms).sort((a, b) => a - b);
  return { from, ...countBy(inside, (r) => r.outcome), p50_ms: round(quantile(ms, 0.5)), p99_ms: round(quantile(ms, 0.99)),
    served: ms.length };
});
const latencies = served.map((r) => r.ms).sort((a, b) => a - b);
const fullWindows = windows.filter((w) => w.served >= 10);

// RSS per process, over the load (the samples while recoveries are awaited are in rss.csv only):
// a replica's samples split by pid, the first WARMUP seconds of each process left out; growth
// compares the medians of the first and last quarter of the rest.
function rssReport(name) {
  const points = samples.filter((s) => s[name].rss !== null && s.t <= DURATION)
    .map((s) => ({ t: s.t, pid: s[name].pid, rss: s[name].rss }));
  const lives = [];
  for (const point of points) {
    if (lives.at(-1)?.pid !== point.pid) lives.push({ pid: point.pid, points: [] });
    lives.at(-1).points.push(point);
  }
  return {
    first_mib: round(points[0]?.rss), last_mib: round(points.at(-1)?.rss), max_mib: round(Math.max(...points.map((p) => p.rss))),
    processes: lives.map(({ pid, points: all }) => {
      const born = all[0].t < SAMPLE_EVERY ? 0 : all[0].t;
      const warm = all.filter((p) => p.t - born >= WARMUP);
      const life = { pid, from_s: round(all[0].t), to_s: round(all.at(-1).t), samples: all.length };
      if (warm.length < 8) return { ...life, judged: false };
      const quarter = Math.floor(warm.length / 4);
      const early = median(warm.slice(0, quarter).map((p) => p.rss));
      const late = median(warm.slice(-quarter).map((p) => p.rss));
      const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const tm = mean(warm.map((p) => p.t));
      const rm = mean(warm.map((p) => p.rss));
      const slope = warm.reduce((a, p) => a + (p.t - tm) * (p.rss - rm), 0) / warm.reduce((a, p) => a + (p.t - tm) ** 2, 0);
      return { ...life, judged: true, first_quarter_mib: round(early), last_quarter_mib: round(late),
        growth_pct: round(100 * (late - early) / early), slope_mib_per_min: round(slope * 60, 2) };
    }),
  };
}
const rss = Object.fromEntries(processes.map((name) => [name, rssReport(name)]));

// Exits the supervisor saw: each must be one of ours (SIGKILL: 137, SIGTERM: a drain ending in 0).
let fleetLog = '';  // fleet.sh writes it at the first restart
try {
  fleetLog = readFileSync(`${FLEET}/fleet.log`, 'utf8');
} catch { /* no process exited */ }
const exits = [...fleetLog.matchAll(/^fleet: (\S+) exited \((\d+)\)/gm)]
  .map((m) => `${m[1]} ${m[2]}`);
const expectedExits = signals.map((s) => `${s.replica} ${s.signal === 'SIGKILL' ? 137 : 0}`);
const unexplained = [...exits];
for (const expected of expectedExits) {
  const at = unexplained.indexOf(expected);
  if (at >= 0) unexplained.splice(at, 1);
}

const hostileWrong = hostile.filter((h) => h.wrong && !signals.some((s) => s.t >= h.start && s.t <= h.end + 1 &&
  (h.target === 'haproxy' || h.target === s.replica)));
const byKind = Object.fromEntries(Object.keys(ATTACKS).map((kind) => {
  const list = hostile.filter((h) => h.kind === kind);
  return [kind, { sent: list.length, outcomes: countBy(list, (h) => `${h.target === 'haproxy' ? 'haproxy' : 'replica'}: ${h.outcome}`) }];
}));

const checks = [
  ['no normal request lost outside a SIGKILL of its replica', lostOutside.length === 0,
    lostOutside.slice(0, 5).map((r) => `${r.kind} at ${r.start.toFixed(1)}-${r.end.toFixed(1)} s on ${r.replica || '?'}: ${r.reason}`)],
  ['no wrong answers', !normal.some((r) => r.outcome === 'wrong'),
    normal.filter((r) => r.outcome === 'wrong').slice(0, 5).map((r) => `${r.kind}: ${r.reason}`)],
  [`normal clients served in every ${WINDOW} s window`, windows.every((w) => w.served > 0),
    windows.filter((w) => !w.served).map((w) => `from ${w.from} s`)],
  ['hostile requests refused or cut off as they should be', hostileWrong.length === 0,
    hostileWrong.slice(0, 5).map((h) => `${h.kind} to ${h.target} at ${h.start.toFixed(1)} s: ${h.outcome}`)],
  ['no process exited but those signalled', unexplained.length === 0, unexplained],
  ['every signalled replica back in HAProxy within 120 s', signals.every((s) => s.back !== null),
    signals.filter((s) => s.back === null).map((s) => `${s.signal} ${s.replica} at ${s.t.toFixed(1)} s: HAProxy says ${s.state}`)],
  ['every replica idle after the run, its KV back in the pool', Object.values(busy).every((b) => b === null),
    Object.entries(busy).filter(([, b]) => b).map(([r, b]) => `${r}: ${b}`)],
  [`no replica's RSS grew more than ${RSS_GROWTH * 100}% after warm-up`,
    processes.filter((n) => n !== 'haproxy').every((n) => rss[n].processes.every((p) => !p.judged || p.growth_pct <= RSS_GROWTH * 100)),
    processes.filter((n) => n !== 'haproxy').flatMap((n) => rss[n].processes.filter((p) => p.judged && p.growth_pct > RSS_GROWTH * 100)
      .map((p) => `${n} pid ${p.pid}: ${p.first_quarter_mib} -> ${p.last_quarter_mib} MiB`))],
  ['some replica process lived long enough to judge its RSS', processes.some((n) => n !== 'haproxy' && rss[n].processes.some((p) => p.judged)), []],
].map(([name, ok, details]) => ({ name, ok, details }));

const summary = {
  duration_s: DURATION, wall_s: round(now()), replicas: REPLICAS, model, chaos_every_s: CHAOS_EVERY, warmup_s: WARMUP,
  normal: {
    sent: normal.length, ...Object.fromEntries(['served', 'failed', 'lost', 'wrong'].map((o) => [o, normal.filter((r) => r.outcome === o).length])),
    lost_under_sigkill: lost.length - lostOutside.length,
    schema_answers_checked: normal.filter((r) => r.checked).length,
    by_kind: Object.fromEntries(KINDS.map((k) => [k.name, countBy(normal.filter((r) => r.kind === k.name), (r) => r.outcome)])),
    reasons: countBy(normal.filter((r) => r.outcome !== 'served'), (r) => `${r.outcome}: ${r.reason}`),
    latency_ms: { p50: round(quantile(latencies, 0.5)), p99: round(quantile(latencies, 0.99)), max: round(latencies.at(-1)),
      window_p50: spread(fullWindows.map((w) => w.p50_ms)), window_p99: spread(fullWindows.map((w) => w.p99_ms)) },
    windows,
  },
  hostile: { sent: hostile.length, by_kind: byKind },
  chaos: { sigkill: signals.filter((s) => s.signal === 'SIGKILL').length, sigterm: signals.filter((s) => s.signal === 'SIGTERM').length,
    back_s: spread(signals.filter((s) => s.back !== null).map((s) => s.back)), events: signals.map((s) => ({ ...s, t: round(s.t), back: round(s.back) })),
    haproxy_retries: statsAfter.retries - statsBefore.retries, haproxy_redispatches: statsAfter.redispatches - statsBefore.redispatches,
    exits },
  rss,
  replica1_counters: Object.fromEntries(['finished', 'cancelled', 'failed'].map((o) => [o, metric(witness, 'kipp_requests_total', `outcome="${o}"`)])),
  checks,
  pass: checks.every((c) => c.ok),
};

// ---- output

const csv = (rows) => rows.map((row) => row.map((x) => (typeof x === 'string' && /[",\n]/.test(x) ? `"${x.replaceAll('"', '""')}"` : x ?? '')).join(',')).join('\n') + '\n';
writeFileSync(`${args.out}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
writeFileSync(`${args.out}/rss.csv`, csv([['t_s', ...processes.flatMap((n) => [`${n}_pid`, `${n}_rss_mib`])],
  ...samples.map((s) => [round(s.t), ...processes.flatMap((n) => [s[n].pid, round(s[n].rss)])])]));
writeFileSync(`${args.out}/normal.csv`, csv([['start_s', 'end_s', 'kind', 'outcome', 'reason', 'replica', 'ms', 'json_checked'],
  ...normal.map((r) => [round(r.start, 3), round(r.end, 3), r.kind, r.outcome, r.reason, r.replica, round(r.ms), r.checked ? 1 : 0])]));
writeFileSync(`${args.out}/hostile.csv`, csv([['start_s', 'end_s', 'kind', 'target', 'outcome', 'wrong', 'bytes_received'],
  ...hostile.map((h) => [round(h.start, 3), round(h.end, 3), h.kind, h.target, h.outcome, h.wrong ? 1 : 0, h.bytes])]));

const n = summary.normal;
const shown = (x) => (x ? `${x.median} (${x.min}–${x.max})` : 'none');
const tally = (counts) => Object.entries(counts).map(([what, count]) => `${count} ${what}`).join(', ');
const lines = [
  `soak: ${DURATION} s of load (${summary.wall_s} s in all), ${REPLICAS} replicas of ${model}`,
  `normal: ${n.sent} requests: ${n.served} served, ${n.failed} failed, ${n.lost} lost (${n.lost_under_sigkill} under a SIGKILL), ` +
    `${n.wrong} wrong; ${n.schema_answers_checked} schema answers ended by the model checked as the schema's JSON`,
  ...Object.entries(n.by_kind).map(([kind, counts]) => `  ${kind}: ${tally(counts)}`),
  ...Object.entries(n.reasons).map(([reason, count]) => `  ${count} × ${reason}`),
  `latency of served requests: p50 ${n.latency_ms.p50} ms, p99 ${n.latency_ms.p99} ms, max ${n.latency_ms.max} ms; ` +
    `over ${fullWindows.length} windows of ${WINDOW} s, median (range): p50 ${shown(n.latency_ms.window_p50)} ms, ` +
    `p99 ${shown(n.latency_ms.window_p99)} ms`,
  `hostile: ${hostile.length} attacks`,
  ...Object.entries(byKind).map(([kind, k]) => `  ${kind} (${k.sent}): ${Object.entries(k.outcomes).map(([o, c]) => `${c} × ${o}`).join('; ')}`),
  `chaos: ${summary.chaos.sigkill} SIGKILL, ${summary.chaos.sigterm} SIGTERM; UP in HAProxy again after ${shown(summary.chaos.back_s)} s; ` +
    `HAProxy retried ${summary.chaos.haproxy_retries}, redispatched ${summary.chaos.haproxy_redispatches}`,
  ...processes.map((name) => `rss ${name}: first ${rss[name].first_mib} MiB, last ${rss[name].last_mib} MiB, max ${rss[name].max_mib} MiB; ` +
    (rss[name].processes.filter((p) => p.judged).map((p) => `pid ${p.pid} (${p.from_s}-${p.to_s} s) after warm-up: ` +
      `${p.first_quarter_mib} -> ${p.last_quarter_mib} MiB (${p.growth_pct}%), ${p.slope_mib_per_min} MiB/min`).join('; ') ||
      'no process lived long enough past its warm-up to judge')),
  ...checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.details.length ? `: ${c.details.join('; ')}` : ''}`),
  `soak: ${summary.pass ? 'pass' : 'FAIL'} (${args.out})`,
];
console.log(lines.join('\n'));
process.exit(summary.pass ? 0 : 1);
