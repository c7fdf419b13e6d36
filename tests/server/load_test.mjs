// A bounded load run against a real `kipp serve`: for DURATION seconds, 8 concurrent clients send
// a seeded mix of completions and chat requests, streamed and not, some abandoned mid-stream.
// Every answer that completes must equal the same request's answer alone (greedy, so exact);
// nothing may fail; the server's memory must be as large at the end as after warming up.
// Extra arguments are `kipp serve` flags for the server under load (`--spec`: speculation); the
// answers alone then come from a plain server, so they are the reference speculation must equal.
//
//   node load_test.mjs KIPP INSTRUCT_MODEL [DURATION_SECONDS [SERVE_FLAGS...]]
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { sseData } from '../support/sse.mjs';
import { metric, metrics, startServer } from './server_process.mjs';

const [kipp, model, durationArg, ...serveFlags] = process.argv.slice(2);
if (!model) {
  console.error('usage: load_test.mjs KIPP INSTRUCT_MODEL [DURATION_SECONDS]');
  process.exit(2);
}
const duration = Number(durationArg ?? 60) * 1000;
// The registry id of the instruct artifact, which is named after it (the suite also runs on
// kipp-test/qwen3-moe-tiny).
const MODEL = `kipp-test/${model.split('/').pop().split('.')[0]}`;

let state = 20261130;
const random = () => {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  return (state >>> 8) / (1 << 24);
};
const words = ['alpha', 'beta', 'gamma', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
const sentence = (n) => Array.from({ length: n }, () => words[Math.floor(random() * words.length)]).join(' ');

const templates = Array.from({ length: 12 }, (_, i) => (i % 3 === 2
  ? { path: '/v1/chat/completions', body: { model: MODEL, temperature: 0, max_tokens: 8 + (i * 5) % 40,
    messages: [{ role: 'user', content: sentence(5 + (i * 13) % 200) }] } }
  : { path: '/v1/completions', body: { model: MODEL, temperature: 0, max_tokens: 8 + (i * 7) % 48,
    prompt: sentence(3 + (i * 29) % 300) } }));

const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

async function send(url, template, stream, abandon) {
  const controller = new AbortController();
  const response = await fetch(url + template.path, { method: 'POST', signal: controller.signal,
    headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...template.body, stream }) });
  if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
  const chat = template.path.includes('chat');
  if (!stream) {
    const json = await response.json();
    return chat ? json.choices[0].message.content : json.choices[0].text;
  }
  let text = '';
  let done = false;
  for await (const data of sseData(response.body)) {
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    const chunk = JSON.parse(data);
    if (chunk.error) throw new Error(chunk.error.message);
    for (const choice of chunk.choices) text += chat ? (choice.delta.content ?? '') : choice.text;
    if (abandon && text.length > 0) {
      controller.abort();
      return null;
    }
  }
  if (!done) throw new Error('the stream ended without [DONE]');
  return text;
}

const expected = [];
if (serveFlags.length > 0) {
  const plain = await startServer(kipp, model, ['--max-batch', '8']);
  try {
    for (const template of templates) expected.push(await send(plain.url, template, false, false));
  } finally {
    assert.equal(await plain.stop(), 0, 'a clean exit on SIGTERM');
  }
}
const server = await startServer(kipp, model, ['--max-batch', '8', ...serveFlags]);
let failures = 0;
try {
  if (serveFlags.length === 0)
    for (const template of templates) expected.push(await send(server.url, template, false, false));

  const start = Date.now();
  let completed = 0;
  let abandoned = 0;
  let warmRss = null;
  const worker = async () => {
    while (Date.now() - start < duration) {
      const index = Math.floor(random() * templates.length);
      const stream = random() < 0.5;
      const abandon = stream && random() < 0.15;
      try {
        const text = await send(server.url, templates[index], stream, abandon);
        if (text === null) {
          ++abandoned;
        } else if (text !== expected[index]) {
          ++failures;
          console.error(`corrupted answer to template ${index}: ${JSON.stringify(text)}`);
        } else {
          ++completed;
        }
      } catch (error) {
        if (error.name === 'AbortError') {
          ++abandoned;
          continue;
        }
        ++failures;
        console.error(`failed request (template ${index}): ${error.message}`);
      }
      if (warmRss === null && Date.now() - start > duration / 3) warmRss = rss(server.pid);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const endRss = rss(server.pid);
  const values = await metrics(server.url);
  console.log(`load: ${completed} answers checked, ${abandoned} abandoned, ${failures} failed in ` +
    `${((Date.now() - start) / 1000).toFixed(0)} s; RSS ${(warmRss / 2 ** 20).toFixed(1)} MiB after warm-up, ` +
    `${(endRss / 2 ** 20).toFixed(1)} MiB at the end`);
  assert.equal(failures, 0, 'no failed or corrupted answers');
  assert.ok(completed > 50, `only ${completed} answers in the run`);
  assert.equal(metric(values, 'kipp_requests_total', 'outcome="failed"'), 0);
  assert.equal(metric(values, 'kipp_requests_running'), 0);
  assert.equal(metric(values, 'vllm:kv_cache_usage_perc'), 0, 'every block went back to the pool');
  if (serveFlags.includes('--spec')) {
    const drafted = metric(values, 'kipp_draft_tokens_total');
    const accepted = metric(values, 'kipp_accepted_draft_tokens_total');
    console.log(`speculation: ${accepted} of ${drafted} drafted tokens accepted`);
    // The tiny model's greedy answers repeat a token, which lookup drafts right; rejected drafts
    // are exercised by the scheduler's own test (SchedulerTest.SpeculationUnderLoad...).
    assert.ok(accepted > 0 && accepted <= drafted, 'drafts were made and kept');
    // A request's own counts come back in its timings, under llama-server's names.
    const response = await fetch(server.url + '/v1/completions', { method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...templates[1].body, max_tokens: 24 }) });
    const { timings } = await response.json();
    assert.ok(timings.draft_n > 0 && timings.draft_n_accepted <= timings.draft_n, JSON.stringify(timings));
  }
  assert.ok(endRss - warmRss < 16 * 2 ** 20, `RSS grew by ${((endRss - warmRss) / 2 ** 20).toFixed(1)} MiB`);
} finally {
  assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
}
