// Three replicas of the tiny checkpoint behind HAProxy (scripts/fleet.sh with
// deploy/haproxy/kipp.cfg), 8 concurrent clients holding seeded conversations that share
// prefixes:
//   - affinity: every conversation has at least 80% of its turns on one replica (X-Kipp-Replica,
//     set by HAProxy, checked against the replicas' own counters), and no replica takes more than
//     1.5 times the mean;
//   - a replica killed with SIGKILL mid-run: every non-streamed request still gets the answer a
//     lone server gives, a stream cut by the kill ends without [DONE], and the supervisor brings
//     the replica back into HAProxy's pool within 10 s;
//   - a replica sent SIGTERM drains: its running requests complete and it takes no new request;
//     restarted, it is taken back into the pool.
//
//   node fleet_test.mjs KIPP MODEL SCRATCH_DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { metric, metrics, startServer } from './server_process.mjs';

const [kipp, model, scratch] = process.argv.slice(2);
if (!scratch) {
  console.error('usage: fleet_test.mjs KIPP MODEL SCRATCH_DIR');
  process.exit(2);
}
// The registry id of the artifact, which is named after it (the suite also runs on kipp-test/qwen3-moe-tiny).
const MODEL = `kipp-test/${model.split('/').pop().split('.')[0]}`;
const PORT = 15000 + (process.pid % 400) * 10;  // below the ephemeral range other tests' port 0 draws from
const DIR = `${scratch}/fleet-${PORT}`;
const URL = `http://127.0.0.1:${PORT}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fleet = (args, serveFlags = []) => execFileSync('bash', ['scripts/fleet.sh', ...args, '--port', String(PORT),
  '--dir', DIR, ...(serveFlags.length ? ['--', ...serveFlags] : [])], { encoding: 'utf8', timeout: 120000 });
const pidOf = (replica) => Number(readFileSync(`${DIR}/${replica}.pid`, 'utf8'));

// A seeded generator, so the conversations (and so their hashes) are the same every run.
function rng(seed) {
  let state = seed >>> 0;
  return () => ((state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}
const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa'.split(' ');
function conversations(count, seed) {
  const random = rng(seed);
  const text = (n) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
  const system = `You are a helpful assistant. ${text(20)}`;  // shared by all; the first user turn tells them apart
  return Array.from({ length: count }, (_, i) => ({
    id: i,
    messages: [{ role: 'system', content: system }, { role: 'user', content: `Conversation ${i}: ${text(12)}` }],
    turns: 5 + Math.floor(random() * 3),  // one turn sent elsewhere by the load bound still leaves 80%
  }));
}

const body = (messages, fields = {}) => JSON.stringify({ model: MODEL, messages, max_tokens: 8, temperature: 0,
  chat_template_kwargs: { enable_thinking: false }, ...fields });

// `session`: sent as X-Session-Id, which HAProxy hashes instead of the body.
async function chat(messages, fields = {}, session = undefined) {
  const headers = { 'content-type': 'application/json', ...(session ? { 'x-session-id': session } : {}) };
  const started = performance.now();
  const response = await fetch(`${URL}/v1/chat/completions`, { method: 'POST', headers, body: body(messages, fields) });
  const text = await response.text();
  return { status: response.status, replica: response.headers.get('x-kipp-replica'), text, ms: performance.now() - started,
    answer: response.status === 200 ? JSON.parse(text).choices[0].message.content : null };
}

// Plays conversations with `clients` of them at a time, turn after turn; every request is
// recorded with the replica that answered it.
async function play(list, clients, record, during = async () => {}) {
  const queue = [...list];
  const worker = async () => {
    for (let c; (c = queue.shift());) {
      for (let turn = 0; turn < c.turns; ++turn) {
        const result = await chat(c.messages);
        record.push({ conversation: c.id, messages: structuredClone(c.messages), ...result });
        if (result.status !== 200) continue;
        c.messages.push({ role: 'assistant', content: result.answer }, { role: 'user', content: `next ${turn}` });
      }
    }
  };
  await Promise.all([...Array.from({ length: clients }, worker), during()]);
}

// HAProxy's view of the backend (GET /stats;csv): each replica's status, and the retries and
// redispatches it made (the BACKEND row's wretr and wredis).
async function haproxyStats() {
  const csv = await (await fetch(`http://127.0.0.1:${PORT - 1}/stats;csv`)).text();
  const rows = csv.split('\n').filter((l) => l.startsWith('replicas,')).map((l) => l.split(','));
  const backend = rows.find((f) => f[1] === 'BACKEND');
  return { status: Object.fromEntries(rows.filter((f) => f[1].startsWith('replica')).map((f) => [f[1], f[17]])),
    retries: Number(backend[15]) + Number(backend[16]) };
}
const stats = async () => (await haproxyStats()).status;

// The load run's figures, for docs/BENCHMARKS.md: printed, not asserted (wall-clock).
async function figures(phase, record, retriesBefore) {
  const ms = record.map((r) => r.ms).sort((a, b) => a - b);
  const at = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))].toFixed(0);
  console.log(`# load (${phase}): ${record.length} requests, ${record.filter((r) => r.status !== 200).length} failed, ` +
    `${(await haproxyStats()).retries - retriesBefore} retried by HAProxy, latency p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`);
}

describe('a fleet behind HAProxy', () => {
  let lone;
  before(async () => {
    fleet(['up', '3', '--model', model, '--kipp', kipp], ['--threads', '1']);
    lone = await startServer(kipp, model);
  });
  after(async () => {
    fleet(['down']);
    await lone.stop();
  });

  // The answers a lone server gives to every request recorded: the fleet's must be the same.
  async function checkAnswers(record) {
    for (const r of record.filter((r) => r.status === 200)) {
      const response = await fetch(`${lone.url}/v1/chat/completions`, { method: 'POST', body: body(r.messages) });
      assert.equal(r.answer, (await response.json()).choices[0].message.content, `conversation ${r.conversation}`);
    }
  }

  // Each replica's own counters: the requests it finished and its prefix cache's queries and hits
  // (vllm:prefix_cache_*, in tokens).
  async function replicaCounters() {
    const out = {};
    for (let i = 1; i <= 3; ++i) {
      const values = await metrics(`http://127.0.0.1:${PORT + i}`);
      out[`replica${i}`] = { finished: metric(values, 'kipp_requests_total', 'outcome="finished"'),
        queries: metric(values, 'vllm:prefix_cache_queries_total'), hits: metric(values, 'vllm:prefix_cache_hits_total') };
    }
    return out;
  }

  test('affinity: a conversation stays on one replica; the load stays within 1.5x the mean', async () => {
    const record = [];
    const retries = (await haproxyStats()).retries;
    const countersBefore = await replicaCounters();
    await play(conversations(24, 7), 8, record);
    await figures('affinity', record, retries);
    assert.ok(record.every((r) => r.status === 200), record.find((r) => r.status !== 200)?.text);
    // The replicas' own counters tell the same story as HAProxy's X-Kipp-Replica header.
    const countersAfter = await replicaCounters();
    const perReplica = new Map();
    for (const r of record) perReplica.set(r.replica, (perReplica.get(r.replica) ?? 0) + 1);
    let queries = 0, hits = 0;
    for (const [replica, after_] of Object.entries(countersAfter)) {
      assert.equal(after_.finished - countersBefore[replica].finished, perReplica.get(replica) ?? 0, `${replica} finished`);
      queries += after_.queries - countersBefore[replica].queries;
      hits += after_.hits - countersBefore[replica].hits;
    }
    console.log(`# affinity: prefix cache hits ${hits} of ${queries} prompt tokens (${(100 * hits / queries).toFixed(1)}%)`);
    // The load bound places a conversation's first turn (a replica past 1.25 times the mean load in
    // progress hands it to the next on the ring); the stick table keeps the later turns with it:
    // every conversation has at least 80% of its turns on one replica.
    const perConversation = new Map();
    for (const r of record) {
      const counts = perConversation.get(r.conversation) ?? new Map();
      counts.set(r.replica, (counts.get(r.replica) ?? 0) + 1);
      perConversation.set(r.conversation, counts);
    }
    let home = 0;
    for (const [id, counts] of perConversation) {
      const total = [...counts.values()].reduce((a, b) => a + b, 0);
      const most = Math.max(...counts.values());
      assert.ok(most >= 0.8 * total, `conversation ${id}: ${JSON.stringify([...counts])}`);
      home += most;
    }
    console.log(`# affinity: ${home} of ${record.length} turns on their conversation's replica`);
    const mean = record.length / 3;
    assert.equal(perReplica.size, 3, JSON.stringify([...perReplica]));
    for (const [replica, count] of perReplica) assert.ok(count <= 1.5 * mean, `${replica}: ${count} of ${record.length}`);
    await checkAnswers(record);
  });

  test('SIGKILL mid-run: every request is answered right, a cut stream says so, the replica comes back', async () => {
    const record = [];
    const retries = (await haproxyStats()).retries;
    let streamText = '';
    await play(conversations(16, 11), 8, record, async () => {
      // A long stream on replica2 (a session that hashes there, found by asking), killed under it.
      const c = [{ role: 'user', content: 'a long story' }];
      let session;
      for (let i = 0; !session; ++i)
        if ((await chat(c, { max_tokens: 1 }, `stream-${i}`)).replica === 'replica2') session = `stream-${i}`;
      const response = await fetch(`${URL}/v1/chat/completions`, { method: 'POST', headers: { 'x-session-id': session },
        body: body(c, { stream: true, max_tokens: 3000, logit_bias: { 151643: -100, 151645: -100 } }) });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const first = await reader.read();
      streamText += decoder.decode(first.value);
      process.kill(pidOf('replica2'), 'SIGKILL');
      try {
        for (let part; !(part = await reader.read()).done;) streamText += decoder.decode(part.value);
      } catch { /* the connection was cut */ }
    });
    await figures('SIGKILL', record, retries);
    assert.ok(streamText.includes('data: {'), 'the stream had begun');
    assert.ok(!streamText.includes('[DONE]'), 'a stream cut by the kill ends without [DONE]');
    assert.ok(record.every((r) => r.status === 200), record.find((r) => r.status !== 200)?.text);
    await checkAnswers(record);
    let back = false;
    for (let i = 0; i < 100 && !back; ++i) {  // the supervisor restarts it; HAProxy's checks take it back
      back = (await stats()).replica2?.startsWith('UP');
      if (!back) await sleep(100);
    }
    assert.ok(back, `replica2 is back in the pool within 10 s: ${JSON.stringify(await stats())}`);
  });

  test('SIGTERM drains a replica: its running requests complete and it takes no new one', async () => {
    const direct = `http://127.0.0.1:${PORT + 3}`;  // replica3 itself, for its metrics
    const admitted = async () => {
      const text = await (await fetch(`${direct}/metrics`)).text();
      const line = (name) => Number(/\n?(\S+) (\S+)$/m.exec(text.split('\n').find((l) => l.startsWith(`${name}{`)))[2]);
      return { prompts: line('kipp_prompt_tokens_total'), running: line('kipp_requests_running') };
    };
    // Two sessions that hash to replica3, two to replica1: long requests on both keep replica3
    // under HAProxy's load bound, so the requests sent after the signal reach it first (and are
    // retried on 503) unless HAProxy's checks have already seen the drain.
    const sessions = { replica1: [], replica3: [] };
    for (let i = 0; sessions.replica1.length < 2 || sessions.replica3.length < 2; ++i) {
      const replica = (await chat([{ role: 'user', content: 'hi' }], { max_tokens: 1 }, `drain-${i}`)).replica;
      if (sessions[replica]?.length < 2) sessions[replica].push(`drain-${i}`);
    }
    const pid = pidOf('replica3');
    const retries = (await haproxyStats()).retries;
    const long = [...sessions.replica3, ...sessions.replica1].map((session, i) => chat([{ role: 'user', content: `a long story ${i}` }],
      { max_tokens: 1500, logit_bias: { 151643: -100, 151645: -100 } }, session));
    let before_;
    for (let i = 0; i < 600 && (before_ = await admitted()).running < 2; ++i) await sleep(20);
    assert.equal(before_.running, 2, 'both long requests run on replica3');
    process.kill(pid, 'SIGTERM');
    // The drain closes idle keep-alive connections, so the first probe may go out on a pooled one
    // the replica has just closed: a connection error there means "not yet", like a 200.
    const health = () => fetch(`${direct}/health`).then((r) => r.status, () => null);
    let status;
    for (let i = 0; i < 200 && (status = await health()) !== 503; ++i) await sleep(10);
    assert.equal(status, 503, 'replica3 says draining');
    const later = [];
    for (let i = 0; i < 12; ++i) later.push(await chat([{ role: 'user', content: `after ${i}` }], {}, sessions.replica3[i % 2]));
    await figures('SIGTERM, requests sent to the draining replica', later, retries);
    assert.ok(later.every((r) => r.status === 200), later.find((r) => r.status !== 200)?.text);
    assert.ok(later.every((r) => r.replica !== 'replica3'), 'nothing after the signal is answered by the draining replica');
    assert.equal((await admitted()).prompts, before_.prompts, 'replica3 admitted nothing after the signal');
    for (const r of await Promise.all(long)) {
      assert.equal(r.status, 200, r.text);
      assert.equal(JSON.parse(r.text).choices[0].finish_reason, 'length');
    }
    // The drained replica exits and the supervisor starts it again: its new process is taken back
    // into the pool (HAProxy keeps an agent's drain through any number of plain "up" replies).
    let back = false;
    for (let i = 0; i < 600 && !back; ++i) {
      back = (await stats()).replica3?.startsWith('UP');
      if (!back) await sleep(100);
    }
    assert.ok(back, `replica3 is back in the pool after its drain: ${JSON.stringify(await stats())}`);
  });
});
