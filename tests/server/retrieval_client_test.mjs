// /v1/embeddings and /v1/rerank (and /rerank) of real `kipp serve` processes on the tiny
// embedding and reranker checkpoints: embeddings through the official `openai` npm client, which
// asks for base64 unless told otherwise, and reranking in Jina's and Cohere's shape with fetch.
// Every vector and score is compared with what `kipp embed` and `kipp rerank` print for the same
// texts on the same backend, bit for bit (the cpu backend is batch-invariant, and the server runs
// the same computation through its scheduler). Also: role refusals both ways, the generation
// endpoints refused on these checkpoints, bad inputs as 4xx with the field named, the API key, a
// request of more inputs than the scheduler's queue, a client gone mid-request, /metrics.
//
//   node retrieval_client_test.mjs KIPP EMBEDDING_MODEL RERANKER_MODEL GENERATION_MODEL
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';

import { metric, metrics, startServer } from './server_process.mjs';

const [kipp, embeddingModel, rerankerModel, generationModel] = process.argv.slice(2);
if (!generationModel) {
  console.error('usage: retrieval_client_test.mjs KIPP EMBEDDING_MODEL RERANKER_MODEL GENERATION_MODEL');
  process.exit(2);
}
const EMBEDDING = 'kipp-test/qwen3-embedding-tiny';
const RERANKER = 'kipp-test/qwen3-reranker-tiny';
const TEXTS = ['The capital of China is Beijing.', 'Gravity is a force.', 'Grüße — 東京', 'x'];

const cli = (...args) => JSON.parse(execFileSync(kipp, [...args, '--threads', '2', '--json'], { encoding: 'utf8' }));
const post = (server, path, body, headers = {}) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
// FP32 values as the server's JSON and the SDK's base64 decoding give them.
const f32 = (values) => Array.from(new Float32Array(values));

describe('embeddings', () => {
  let server, client;
  before(async () => {
    server = await startServer(kipp, embeddingModel, ['--max-waiting', '4']);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(() => server?.stop());

  test('the SDK default (base64) and float both give kipp embed\'s vectors', async () => {
    const want = cli('embed', '--model', embeddingModel, ...TEXTS.flatMap((t) => ['--text', t]));
    const viaBase64 = await client.embeddings.create({ model: EMBEDDING, input: TEXTS });
    const viaFloat = await client.embeddings.create({ model: EMBEDDING, input: TEXTS, encoding_format: 'float' });
    assert.equal(viaBase64.data.length, TEXTS.length);
    for (let i = 0; i < TEXTS.length; ++i) {
      assert.equal(viaBase64.data[i].index, i);
      assert.deepEqual(f32(viaBase64.data[i].embedding), f32(want.data[i].embedding), `text ${i}, base64`);
      assert.deepEqual(viaFloat.data[i].embedding, want.data[i].embedding, `text ${i}, float`);
    }
    assert.equal(viaFloat.usage.prompt_tokens, want.usage.prompt_tokens, 'the appended <|endoftext|> counted');
    assert.equal(viaFloat.model, EMBEDDING);
  });

  test('dimensions cuts and renormalises; token ids are used as given', async () => {
    const cut = await client.embeddings.create({ model: EMBEDDING, input: 'orbit', dimensions: 64,
      encoding_format: 'float' });
    const want = cli('embed', '--model', embeddingModel, '--text', 'orbit', '--dimensions', '64');
    assert.deepEqual(cut.data[0].embedding, want.data[0].embedding);
    const ids = JSON.parse(execFileSync(kipp, ['tokenize', '--model', embeddingModel, '--json', '--text', 'orbit'],
      { encoding: 'utf8' })).ids;
    const asIds = await client.embeddings.create({ model: EMBEDDING, input: [[...ids, 151643]],
      encoding_format: 'float' });
    assert.deepEqual(asIds.data[0].embedding, cli('embed', '--model', embeddingModel, '--text', 'orbit').data[0].embedding);
    const without = await client.embeddings.create({ model: EMBEDDING, input: ids, encoding_format: 'float' });
    assert.equal(without.usage.prompt_tokens, ids.length, 'nothing appended to token ids');
    assert.notDeepEqual(without.data[0].embedding, asIds.data[0].embedding);
  });

  test('more inputs than the queue holds, fed a window at a time', async () => {
    const many = Array.from({ length: 40 }, (_, i) => `input number ${i}`);
    const got = await client.embeddings.create({ model: EMBEDDING, input: many, encoding_format: 'float' });
    assert.equal(got.data.length, 40);
    const want = cli('embed', '--model', embeddingModel, '--text', many[37]);
    assert.deepEqual(got.data[37].embedding, want.data[0].embedding);
    const values = await metrics(server.url);
    assert.ok(metric(values, 'kipp_requests_total', 'outcome="finished"') >= 40);
  });

  test('bad requests are 4xx naming the field', async () => {
    const cases = [
      [{ model: EMBEDDING, input: 'x', dimensions: 16 }, 400, 'dimensions', 'range of 32 to 256'],
      [{ model: EMBEDDING, input: 'x', dimensions: 257 }, 400, 'dimensions', 'range of 32 to 256'],
      [{ model: EMBEDDING, input: '' }, 400, 'input', 'empty string'],
      [{ model: EMBEDDING, input: [] }, 400, 'input', 'at least one element'],
      [{ model: EMBEDDING, input: [[1, 151665]] }, 400, 'input[0][1]', '151664'],
      [{ model: EMBEDDING, input: 'x', encoding_format: 'int8' }, 400, 'encoding_format', 'base64'],
      [{ model: EMBEDDING }, 400, 'input', 'required'],
      [{ input: 'x' }, 400, 'model', 'required'],
      [{ model: 'gpt-4', input: 'x' }, 404, 'model', 'does not exist'],
      [{ model: EMBEDDING, input: 'x', colour: 'red' }, 400, 'colour', 'not a field'],
      [{ model: EMBEDDING, input: 'word '.repeat(5000) }, 400, 'input', 'context'],
    ];
    for (const [body, status, param, words] of cases) {
      const response = await post(server, '/v1/embeddings', body);
      assert.equal(response.status, status, JSON.stringify(body).slice(0, 80));
      const { error } = await response.json();
      assert.equal(error.param, param, error.message);
      assert.match(error.message, new RegExp(words));
    }
    const broken = await post(server, '/v1/embeddings', '{"model": "x", "input": [');
    assert.equal(broken.status, 400);
  });

  test('generation and reranking are refused by role', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { model: EMBEDDING, messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/completions', { model: EMBEDDING, prompt: 'hi' }],
      ['/v1/messages', { model: EMBEDDING, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/rerank', { query: 'q', documents: ['d'] }],
    ]) {
      const response = await post(server, path, body);
      assert.equal(response.status, 400, path);
      const text = await response.text();
      assert.match(text, /has the role embed/, path);
    }
  });

  test('a client gone mid-request leaves the server serving', async () => {
    const controller = new AbortController();
    const many = Array.from({ length: 64 }, (_, i) => `abandoned ${i} `.repeat(50));
    const pending = fetch(`${server.url}/v1/embeddings`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: controller.signal,
      body: JSON.stringify({ model: EMBEDDING, input: many }),
    }).catch(() => null);
    setTimeout(() => controller.abort(), 200);
    await pending;
    const after = await client.embeddings.create({ model: EMBEDDING, input: 'x', encoding_format: 'float' });
    assert.equal(after.data.length, 1);
    assert.ok(server.alive());
  });
});

describe('rerank', () => {
  let server;
  before(async () => { server = await startServer(kipp, rerankerModel, ['--api-key', 'sekret']); });
  after(() => server?.stop());
  const auth = { authorization: 'Bearer sekret' };
  const DOCUMENTS = ['The capital of China is Beijing.', 'Gravity is a force.', 'Paris is in France.'];

  test('scores, order, top_n and documents as kipp rerank gives them, on both paths', async () => {
    const want = cli('rerank', '--model', rerankerModel, '--query', 'capital of China?',
      ...DOCUMENTS.flatMap((d) => ['--document', d]));
    for (const path of ['/v1/rerank', '/rerank']) {
      const response = await post(server, path, { model: RERANKER, query: 'capital of China?',
        documents: [DOCUMENTS[0], { text: DOCUMENTS[1] }, DOCUMENTS[2]], top_n: 2, return_documents: true }, auth);
      assert.equal(response.status, 200, path);
      const got = await response.json();
      assert.equal(got.results.length, 2);
      for (let rank = 0; rank < 2; ++rank) {
        assert.equal(got.results[rank].index, want.results[rank].index, path);
        assert.equal(got.results[rank].relevance_score, want.results[rank].relevance_score, path);
        assert.equal(got.results[rank].document.text, DOCUMENTS[want.results[rank].index]);
      }
      assert.equal(got.usage.total_tokens, want.usage.total_tokens);
      assert.equal(got.model, RERANKER);
    }
  });

  test('an instruction replaces the default, and a long document is cut and said to be', async () => {
    const instructed = await (await post(server, '/v1/rerank', { query: 'q', documents: ['d'],
      instruction: 'Find poems' }, auth)).json();
    const want = cli('rerank', '--model', rerankerModel, '--query', 'q', '--document', 'd', '--instruct', 'Find poems');
    assert.equal(instructed.results[0].relevance_score, want.results[0].relevance_score);
    const long = 'river '.repeat(6000);
    const cut = await (await post(server, '/v1/rerank', { query: 'q', documents: [long, 'short'] }, auth)).json();
    const truncated = Object.fromEntries(cut.results.map((r) => [r.index, r.truncated_tokens ?? 0]));
    assert.ok(truncated[0] > 0);
    assert.equal(truncated[1], 0);
  });

  test('the key, bad requests, and the other roles', async () => {
    assert.equal((await post(server, '/rerank', { query: 'q', documents: ['d'] })).status, 401);
    const cases = [
      [{ documents: ['d'] }, 'query'],
      [{ query: 'q' }, 'documents'],
      [{ query: 'q', documents: [] }, 'documents'],
      [{ query: 'q', documents: [3] }, 'documents[0]'],
      [{ query: 'q', documents: ['d'], top_n: 0 }, 'top_n'],
      [{ query: 'q', documents: ['d'], return_documents: 'yes' }, 'return_documents'],
    ];
    for (const [body, param] of cases) {
      const response = await post(server, '/v1/rerank', body, auth);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal((await response.json()).error.param, param);
    }
    const embed = await post(server, '/v1/embeddings', { model: RERANKER, input: 'x' }, auth);
    assert.equal(embed.status, 400);
    assert.match(await embed.text(), /has the role rerank/);
  });
});

describe('a generation checkpoint', () => {
  let server;
  before(async () => { server = await startServer(kipp, generationModel); });
  after(() => server?.stop());
  test('refuses embeddings and reranking by role', async () => {
    for (const [path, body] of [['/v1/embeddings', { model: 'kipp-test/qwen3-tiny', input: 'x' }],
      ['/v1/rerank', { query: 'q', documents: ['d'] }]]) {
      const response = await post(server, path, body);
      assert.equal(response.status, 400, path);
      assert.match(await response.text(), /has the role generate/);
    }
  });
});
