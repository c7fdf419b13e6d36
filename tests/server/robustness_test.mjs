// What a network can send `kipp serve`, over raw sockets against the real binary: oversized
// headers and bodies, malformed JSON and UTF-8, slow headers, too many connections, a client that
// never reads its stream, a client gone before a non-streamed answer. Each costs only its own
// connection; the server keeps answering, cancels the abandoned work and frees its KV.
//
//   node robustness_test.mjs KIPP INSTRUCT_MODEL SHAPE_MODEL
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import parsePrometheusTextFormat from 'parse-prometheus-text-format';

import { metric, metrics, startServer } from './server_process.mjs';

const [kipp, model, shapeModel] = process.argv.slice(2);
if (!shapeModel) {
  console.error('usage: robustness_test.mjs KIPP INSTRUCT_MODEL SHAPE_MODEL');
  process.exit(2);
}
const MODEL = 'kipp-test/qwen3-tiny';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Sends raw bytes on a fresh connection; resolves with everything received until the server
// closes (or `waitMs` passes), and the status code of the first response.
function exchange(port, bytes, { waitMs = 5000, endAfterSend = false } = {}) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    let closed = false;
    const finish = () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text);
      resolve({ text, status: status ? Number(status[1]) : null, closed });
      socket.destroy();
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (data) => chunks.push(data));
    socket.on('close', () => {
      closed = true;
      clearTimeout(timer);
      finish();
    });
    socket.on('error', () => {});
    socket.on('connect', () => {
      socket.write(bytes);
      if (endAfterSend) socket.end();
    });
  });
}

const post = (path, body, extra = '') => {
  const payload = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${payload.length}\r\nConnection: close\r\n${extra}\r\n`), payload]);
};

async function healthy(server) {
  const response = await fetch(`${server.url}/v1/completions`, { method: 'POST',
    body: JSON.stringify({ model: MODEL, prompt: 'still there?', max_tokens: 3, temperature: 0 }) });
  assert.equal(response.status, 200);
  assert.equal((await response.json()).choices.length, 1);
}

// Waits (up to two minutes: the machine may be busy with other tests) until the server has
// cancelled `count` more requests than in `before_`, then until it is idle.
async function cancelled(server, before_, count = 1) {
  const target = metric(before_, 'kipp_requests_total', 'outcome="cancelled"') + count;
  for (let i = 0; i < 1200; ++i) {
    if (metric(await metrics(server.url), 'kipp_requests_total', 'outcome="cancelled"') >= target) break;
    await sleep(100);
  }
  return settle(server);
}

async function settle(server) {
  for (let i = 0; i < 800; ++i) {
    const values = await metrics(server.url);
    if (metric(values, 'kipp_requests_running') === 0 && metric(values, 'kipp_kv_pool_blocks', 'state="reserved"') === 0)
      return values;
    await sleep(25);
  }
  return metrics(server.url);
}

describe('kipp serve under hostile input', () => {
  let server;
  before(async () => {
    server = await startServer(kipp, model, ['--max-body-bytes', '65536', '--request-timeout', '0.5',
      '--write-timeout', '0.5', '--idle-timeout', '2', '--max-connections', '8', '--kv-pool-mib', '256']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  test('an oversized body is a 413 before it is read, an oversized header a 431', async () => {
    const big = await exchange(server.port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ${1 << 30}\r\n\r\n`);
    assert.equal(big.status, 413);
    assert.match(big.text, /"error"/);
    const header = await exchange(server.port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40000)}\r\n\r\n`);
    assert.equal(header.status, 431);
    await healthy(server);
  });

  test('malformed JSON, invalid UTF-8, NUL bytes and wrong types are 400s with an OpenAI error body', async () => {
    const bodies = [
      Buffer.from('{"model":"kipp-test/qwen3-tiny","prompt":"x"'),
      Buffer.from([0x7b, 0x22, 0x6d, 0x6f, 0x64, 0x65, 0x6c, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      Buffer.concat([Buffer.from('{"model":"kipp-test/qwen3-tiny","prompt":"a'), Buffer.from([0]), Buffer.from('b"}')]),
      Buffer.from('{"model":"kipp-test/qwen3-tiny","prompt":"x","stream":"true"}'),
      Buffer.from('[1,2,3]'),
      Buffer.from(''),
      Buffer.from('{"model":"kipp-test/qwen3-tiny","prompt":' + '['.repeat(5000) + ']'.repeat(5000) + '}'),
    ];
    for (const body of bodies) {
      const response = await exchange(server.port, post('/v1/completions', body));
      assert.equal(response.status, 400, response.text.slice(0, 200));
      const json = JSON.parse(response.text.slice(response.text.indexOf('\r\n\r\n') + 4));
      assert.equal(json.error.type, 'invalid_request_error');
    }
    const nul = await exchange(server.port, Buffer.from('GET /hea\0lth HTTP/1.1\r\nHost: x\r\n\r\n'));
    assert.ok(nul.status === 400 || nul.status === 404, nul.text.slice(0, 100));
    await healthy(server);
  });

  // Issue 32's reproduction: one such request used to overflow the regex compiler's stack and take
  // the whole server down. Every route a schema or grammar can take is refused with a 400 naming
  // the limit, in the route's error shape, and the server keeps serving.
  test('constraints built to exhaust a compiler are 400s naming the limit, on every route', async () => {
    const deepPattern = '('.repeat(4000) + 'a' + ')'.repeat(4000);  // within the length limit
    const patternSchema = { type: 'object', properties: { s: { type: 'string', pattern: deepPattern } } };
    const refChain = { $defs: {}, $ref: '#/$defs/d0' };
    for (let i = 0; i < 300; ++i) refChain.$defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
    refChain.$defs.d300 = { type: 'integer' };
    const messages = [{ role: 'user', content: 'hi' }];
    const openai = (extra) => ({ model: MODEL, messages, max_tokens: 4, ...extra });
    const cases = [
      ['/v1/chat/completions', openai({ response_format: { type: 'json_schema',
        json_schema: { name: 'x', schema: patternSchema } } }), /groups nest deeper than the limit of 64/],
      ['/v1/chat/completions', openai({ tools: [{ type: 'function', function: { name: 'f', parameters: patternSchema } }],
        tool_choice: 'required' }), /groups nest deeper than the limit of 64/],
      ['/v1/chat/completions', openai({ response_format: { type: 'json_schema',
        json_schema: { name: 'x', schema: refChain } } }), /limit of 256/],
      ['/v1/chat/completions', openai({ grammar: `root ::= ${'('.repeat(5000)}"a"${')'.repeat(5000)}` }),
        /nest deeper than 256/],
      ['/v1/chat/completions', openai({ grammar: `root ::= "x" a\na ::= "y" a` }), /matches no text at all/],
      ['/v1/messages', { model: MODEL, messages, max_tokens: 4, tools: [{ name: 'f', input_schema: patternSchema }],
        tool_choice: { type: 'tool', name: 'f' } }, /groups nest deeper than the limit of 64/],
    ];
    for (const [route, body, message] of cases) {
      const response = await fetch(`${server.url}${route}`, { method: 'POST', body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' } });
      const text = await response.text();
      assert.equal(response.status, 400, text.slice(0, 300));
      const error = JSON.parse(text).error;
      assert.equal(error.type, 'invalid_request_error');
      assert.match(error.message, message);
    }
    await healthy(server);
  });

  // Constraints compile on threads of their own. Five requests whose grammar runs the matcher's
  // first state to its limit (most of a second each) are queued for compiling when a request
  // without a constraint, sent after them, comes in: it is answered before all but at most two
  // of them. With one pool of threads for reading and compiling, it waited for four.
  test('a request without a constraint does not wait behind costly compiles', async () => {
    const answered = [];
    const costly = Array.from({ length: 5 }, () => fetch(`${server.url}/v1/chat/completions`, { method: 'POST',
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4,
        grammar: 'root ::= (("a"?){1000}){1000}' }),
    }).then(async (response) => {
      answered.push('costly');
      return { status: response.status, text: await response.text() };
    }));
    await sleep(200);  // the costly ones are in
    await healthy(server);
    answered.push('plain');
    for (const { status, text } of await Promise.all(costly)) {
      assert.equal(status, 400, text.slice(0, 300));
      assert.match(JSON.parse(text).error.message, /limit of 500000 parse stacks/);
    }
    assert.ok(answered.indexOf('plain') <= 2, `answered in the order ${answered.join(', ')}`);
  });

  // Matching is bounded per answer as well as per token set. Each token set of this grammar costs
  // the matcher most of its per-set limit, so an answer of a few dozen tokens reaches the limit
  // for one answer: it ends with a 400 naming that limit, never a 500, and the server serves on.
  // Thinking is off so that the grammar holds from the first token: a thinking answer is free
  // text until </think>, which the tiny model may never write (it did not on CI's CPU).
  test('an answer whose matching costs too much ends with a 400 naming the limit', async () => {
    const body = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 400,
      chat_template_kwargs: { enable_thinking: false }, grammar: 'root ::= (("a"?){160}){160} "a"{4000}' };
    const response = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(body) });
    const text = await response.text();
    assert.equal(response.status, 400, text.slice(0, 300));
    const error = JSON.parse(text).error;
    assert.equal(error.type, 'invalid_request_error');
    assert.match(error.message, /went over a limit while generating: .*limit of 20000000 matcher steps for one answer/);
    await settle(server);
    await healthy(server);
  });

  test('slow headers are cut off; the server keeps serving meanwhile', async () => {
    const slow = exchange(server.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le', { waitMs: 5000 });
    await healthy(server);
    const cut = await slow;
    assert.ok(cut.closed, 'the slow connection was closed');
    assert.ok(cut.status === 408 || cut.status === null, cut.text);
  });

  test('connections beyond the limit get 503 and the limit frees up again', async () => {
    const idle = await Promise.all(Array.from({ length: 8 }, () => new Promise((resolve) => {
      const socket = net.connect(server.port, '127.0.0.1', () => resolve(socket));
      socket.on('error', () => {});
    })));
    await sleep(100);
    const refused = await exchange(server.port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(refused.status, 503);
    assert.match(refused.text, /Retry-After/i);
    for (const socket of idle) socket.destroy();
    await sleep(200);
    await healthy(server);
  });

  test('a client that never reads its stream is dropped and its request cancelled', async () => {
    const before_ = await metrics(server.url);
    // Eight choices with 20 alternatives per token, never read: megabytes of chunks fill the
    // kernel's buffers, and the server's write times out.
    const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'go on' }], max_tokens: 3000,
      temperature: 0, stream: true, n: 8, logprobs: true, top_logprobs: 20 });
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((resolve) => socket.on('connect', resolve));
    socket.pause();
    socket.write(post('/v1/chat/completions', body));
    await healthy(server);  // served while the stalled stream waits
    const values = await cancelled(server, before_);
    assert.equal(metric(values, 'kipp_requests_total', 'outcome="cancelled"') -
      metric(before_, 'kipp_requests_total', 'outcome="cancelled"'), 1);
    assert.ok(metric(values, 'kipp_generation_tokens_total') - metric(before_, 'kipp_generation_tokens_total') < 8 * 3000,
      'cancelled before it finished');
    assert.equal(metric(values, 'vllm:kv_cache_usage_perc'), 0);
    socket.destroy();
  });

  test('a client gone before its non-streamed answer cancels it', async () => {
    const before_ = await metrics(server.url);
    const body = JSON.stringify({ model: MODEL, prompt: 'long answer', max_tokens: 3500, temperature: 0 });
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((resolve) => socket.on('connect', resolve));
    socket.write(post('/v1/completions', body));
    await sleep(150);
    socket.destroy();
    const values = await cancelled(server, before_);
    assert.equal(metric(values, 'kipp_requests_total', 'outcome="cancelled"') -
      metric(before_, 'kipp_requests_total', 'outcome="cancelled"'), 1);
    assert.ok(metric(values, 'kipp_generation_tokens_total') - metric(before_, 'kipp_generation_tokens_total') < 3500);
    await healthy(server);
  });

  test('health, models and unknown routes', async () => {
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    assert.deepEqual(await (await fetch(`${server.url}/health`)).json(), { status: 'ok' });
    const missing = await fetch(`${server.url}/v1/images/generations`, { method: 'POST', body: '{}' });
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'not_found');
    // A route of another role: this checkpoint generates text.
    const embeddings = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', body: '{"model":"m","input":"x"}' });
    assert.equal(embeddings.status, 400);
    assert.equal((await embeddings.json()).error.code, 'model_role');
    assert.equal((await fetch(`${server.url}/v1/completions`)).status, 405);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    for (const name of ['kipp_requests_running', 'kipp_requests_waiting', 'kipp_requests_total', 'kipp_requests_failed_total',
      'kipp_prompt_tokens_total', 'kipp_generation_tokens_total', 'kipp_time_to_first_token_seconds_bucket',
      'kipp_queue_wait_seconds_bucket', 'kipp_batch_size_bucket', 'kipp_kv_pool_blocks', 'kipp_kv_pool_blocks_reused_total',
      'kipp_kv_pool_blocks_evicted_total', 'kipp_prefix_tokens_reused_total', 'vllm:num_requests_running',
      'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'])
      assert.ok(text.includes(`\n${name}{`) || text.startsWith(`${name}{`), name);
  });

  test('/metrics parses as the Prometheus text format; the vLLM names say what vLLM\'s do', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const families = Object.fromEntries(parsePrometheusTextFormat(text).map((family) => [family.name, family]));
    const declared = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)];
    assert.equal(Object.keys(families).length, declared.length, 'every declared family parses');
    for (const [, name, type] of declared) assert.equal(families[name].type, type.toUpperCase(), name);
    const one = (name) => {
      const samples = families[name]?.metrics;
      assert.ok(samples?.length === 1, name);
      assert.equal(samples[0].labels.model_name, 'kipp-test/qwen3-tiny', `${name}: vLLM's label`);
      return samples[0];
    };
    const kipp = (name, labels = '') => metric(Object.fromEntries(text.split('\n').filter((l) => l && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))])), name, labels);
    for (const [name, type] of [['vllm:num_requests_running', 'GAUGE'], ['vllm:num_requests_waiting', 'GAUGE'],
      ['vllm:kv_cache_usage_perc', 'GAUGE'], ['vllm:gpu_cache_usage_perc', 'GAUGE'], ['vllm:cache_config_info', 'GAUGE'],
      ['vllm:prefix_cache_queries_total', 'COUNTER'], ['vllm:prefix_cache_hits_total', 'COUNTER'],
      ['vllm:time_to_first_token_seconds', 'HISTOGRAM'], ['vllm:e2e_request_latency_seconds', 'HISTOGRAM']])
      assert.equal(families[name]?.type, type, name);
    assert.equal(Number(one('vllm:gpu_cache_usage_perc').value), Number(one('vllm:kv_cache_usage_perc').value));
    const cache = one('vllm:cache_config_info').labels;
    assert.equal(cache.block_size, '32');
    assert.equal(Number(cache.num_gpu_blocks), kipp('kipp_kv_pool_blocks', 'state="total"'));
    assert.equal(Number(one('vllm:prefix_cache_queries_total').value), kipp('kipp_prompt_tokens_total'));
    assert.equal(Number(one('vllm:prefix_cache_hits_total').value), kipp('kipp_prefix_tokens_reused_total'));
    // The parser folds labelled histograms lossily (prom2json's shape), so their counts are read raw.
    const vllmLabel = 'model_name="kipp-test/qwen3-tiny"';
    const e2e = kipp('vllm:e2e_request_latency_seconds_count', vllmLabel);
    assert.ok(e2e >= 1 && e2e <= kipp('kipp_requests_total', 'outcome="finished"'), `${e2e} finished requests timed`);
    assert.equal(kipp('vllm:time_to_first_token_seconds_count', vllmLabel), kipp('kipp_time_to_first_token_seconds_count'));
  });
});

// A streamed completion on a fresh connection: `started` resolves with the first bytes of the
// body, `ended` with everything once the server closes the connection.
function openStream(port, body) {
  const socket = net.connect(port, '127.0.0.1');
  const chunks = [];
  let first;
  const started = new Promise((resolve) => { first = resolve; });
  const ended = new Promise((resolve) => {
    socket.on('data', (data) => {
      chunks.push(data);
      if (Buffer.concat(chunks).toString('latin1').includes('data: ')) first();
    });
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
  socket.on('error', () => {});
  socket.on('connect', () => socket.write(post('/v1/completions', JSON.stringify(body))));
  return { started, ended };
}

const LONG = { model: MODEL, prompt: 'Once upon a time', stream: true, temperature: 0,
  logit_bias: { 151643: -100, 151645: -100 } };

describe('graceful shutdown', () => {
  test('SIGTERM drains: health and the agent say draining, new requests get 503, the running one finishes, exit 0', async () => {
    const server = await startServer(kipp, model, ['--agent-port', '0']);
    const agentPort = Number(/agent port [^:]+:(\d+)/.exec(server.log())[1]);
    const agent = async () => (await exchange(agentPort, '')).text;
    assert.match(await agent(), /^up ready \d+%\n$/);
    const stream = openStream(server.port, { ...LONG, max_tokens: 400 });
    await stream.started;
    server.signal('SIGTERM');
    for (let i = 0; i < 200; ++i) {  // the signal is taken by another thread: wait for it to act
      if ((await exchange(server.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status === 503) break;
      await sleep(10);
    }
    const health = await exchange(server.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(health.status, 503);
    assert.match(health.text, /"status":"draining"/);
    const refused = await exchange(server.port, post('/v1/completions', JSON.stringify({ model: MODEL, prompt: 'x', max_tokens: 2 })));
    assert.equal(refused.status, 503);
    assert.match(refused.text, /"code":"draining"/);
    assert.match(refused.text, /Retry-After: 1/i);
    assert.equal(await agent(), 'drain #draining\n');
    const text = await stream.ended;
    assert.ok(text.includes('data: [DONE]'), 'the running request finished');
    const chunks = text.split('\n').filter((line) => line.startsWith('data: {')).map((line) => JSON.parse(line.slice(6)));
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
    assert.equal(await server.exited(), 0);
  });

  test('a second signal stops at once, and so does --drain-timeout; cut streams end without [DONE]', async () => {
    for (const [extra, signals] of [[[], ['SIGINT', 'SIGINT']], [['--drain-timeout', '0.2'], ['SIGTERM']]]) {
      const server = await startServer(kipp, model, extra);
      const stream = openStream(server.port, { ...LONG, max_tokens: 3500 });
      await stream.started;
      for (const name of signals) {
        server.signal(name);
        await sleep(50);
      }
      const text = await stream.ended;
      assert.ok(!text.includes('[DONE]'), `${signals.join(' ')} ${extra.join(' ')}: the stream is cut, and says so by its end`);
      assert.equal(await server.exited(), 0);
    }
  });
});

describe('while the model loads', () => {
  // The model path is a named pipe: the loader's open() waits for a writer, which the test opens
  // only when it is done asking, so the server is certainly still loading when it answers. The
  // pipe is no regular file, so the load then fails, and says so.
  test('health, the API and the agent say "loading" while the model loads', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kipp-loading-'));
    const pipe = path.join(dir, 'model.gguf');
    execFileSync('mkfifo', [pipe]);
    try {
      const server = await startServer(kipp, pipe, ['--agent-port', '0'], { until: 'listening' });
      try {
        const health = await fetch(`${server.url}/health`);
        assert.equal(health.status, 503);
        assert.equal(health.headers.get('retry-after'), '1');
        assert.deepEqual(await health.json(), { status: 'loading' });
        assert.equal((await fetch(`${server.url}/healthz`)).status, 503);
        const early = await fetch(`${server.url}/v1/models`);
        assert.equal(early.status, 503);
        assert.equal(early.headers.get('retry-after'), '1');
        assert.equal((await early.json()).error.code, 'loading');
        const agentPort = Number(/agent port [^:]+:(\d+)/.exec(server.log())[1]);
        assert.equal((await exchange(agentPort, '')).text, 'down #loading\n');
      } finally {
        if (server.alive()) await (await fs.promises.open(pipe, 'w')).close();  // the loader's open() returns
      }
      assert.notEqual(await server.exited(), 0);
      assert.match(server.log(), /model\.gguf: not a regular file/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('health says 503 "loading" until the model is ready, then 200', async () => {
    // The 0.6B shape takes a moment to load (its weights are packed for the CPU kernels); however
    // long, every answer until then is "loading".
    const server = await startServer(kipp, shapeModel, [], { until: 'listening' });
    try {
      let health = await fetch(`${server.url}/health`);
      for (let i = 0; i < 600 && health.status === 503; ++i) {
        assert.deepEqual(await health.json(), { status: 'loading' });
        await sleep(100);  // the deadline only guards against a hang
        health = await fetch(`${server.url}/healthz`);
      }
      assert.equal(health.status, 200);
      assert.equal((await fetch(`${server.url}/v1/models`)).status, 200);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});
