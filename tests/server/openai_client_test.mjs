// `kipp serve` driven by the official `openai` npm client, as users' programs drive it:
// completions and chat, streamed and not, n choices, logprobs, stop strings (one split across
// tokens while streaming), seeds, errors, concurrency, disconnects, a tiny KV pool, prefix reuse,
// overload and API keys; what real clients send (content parts, the developer role, tool turns in
// the history, model aliases). Every server is a real process on a synthetic checkpoint.
//
//   node openai_client_test.mjs KIPP INSTRUCT_MODEL BASE_MODEL
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gguf } from '@huggingface/gguf';
import OpenAI from 'openai';

import { metric, metrics, startServer } from './server_process.mjs';

const [kipp, instructModel, baseModel] = process.argv.slice(2);
if (!baseModel) {
  console.error('usage: openai_client_test.mjs KIPP INSTRUCT_MODEL BASE_MODEL');
  process.exit(2);
}
// The registry id of the instruct artifact: its file is named after it (qwen3-tiny.bf16.gguf is
// kipp-test/qwen3-tiny; the suite also runs on kipp-test/qwen3-moe-tiny).
const MODEL = `kipp-test/${instructModel.split('/').pop().split('.')[0]}`;
const clientFor = (server, options = {}) =>
  new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000, ...options });

// A deterministic word salad of `words` words (the tiny model has no taste in prompts).
function prose(seed, words) {
  const vocabulary = ['river', 'stone', 'light', 'north', 'garden', 'quiet', 'number', 'engine', 'paper', 'window',
    'seven', 'orange', 'market', 'cloud', 'silver', 'answer'];
  let state = seed >>> 0 || 1;
  const out = [];
  for (let i = 0; i < words; ++i) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out.push(vocabulary[(state >>> 16) % vocabulary.length]);  // the low bits of an LCG cycle fast
  }
  return out.join(' ');
}

async function collectCompletionStream(stream) {
  const texts = [];
  const finish = [];
  let usage = null;
  let timings = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (chunk.timings) timings = chunk.timings;
    for (const choice of chunk.choices) {
      texts[choice.index] = (texts[choice.index] ?? '') + choice.text;
      if (choice.finish_reason) finish[choice.index] = choice.finish_reason;
    }
  }
  return { texts, finish, usage, timings };
}

async function collectChatStream(stream) {
  const content = [];
  const reasoning = [];
  const finish = [];
  const roles = [];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      const i = choice.index;
      if (choice.delta.role) roles[i] = (roles[i] ?? 0) + 1;
      content[i] = (content[i] ?? '') + (choice.delta.content ?? '');
      reasoning[i] = (reasoning[i] ?? '') + (choice.delta.reasoning_content ?? '');
      if (choice.finish_reason) finish[i] = choice.finish_reason;
    }
  }
  return { content, reasoning, finish, roles, usage };
}

describe('kipp serve through the openai client', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(kipp, instructModel, ['--max-batch', '16']);
    client = clientFor(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
  });

  test('lists its model', async () => {
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id), [MODEL]);
  });

  test('a greedy completion equals kipp generate on the same prompt', async () => {
    const prompt = prose(1, 12);
    const completion = await client.completions.create({ model: MODEL, prompt, max_tokens: 24, temperature: 0 });
    const cli = JSON.parse(execFileSync(kipp, ['generate', '--model', instructModel, '--prompt', prompt, '-n', '24',
      '--greedy', '--json', '--threads', '2'], { encoding: 'utf8' }));
    assert.equal(completion.choices[0].text, cli.text);
    assert.equal(completion.choices[0].finish_reason, cli.finish_reason === 'length' ? 'length' : 'stop');
    assert.equal(completion.usage.completion_tokens, cli.tokens.length);
    assert.equal(completion.usage.prompt_tokens + completion.usage.completion_tokens, completion.usage.total_tokens);
    assert.match(completion.id, /^cmpl-/);
    assert.equal(completion.object, 'text_completion');
    assert.equal(completion.model, MODEL);
    assert.ok(completion.timings.predicted_n === completion.usage.completion_tokens);
  });

  test('streamed and non-streamed completions of a seeded request are identical, n = 3', async () => {
    const request = { model: MODEL, prompt: prose(2, 20), max_tokens: 20, temperature: 2, top_k: 0, top_p: 1,
      seed: 42, n: 3 };
    const whole = await client.completions.create(request);
    const streamed = await collectCompletionStream(await client.completions.create({ ...request, stream: true,
      stream_options: { include_usage: true } }));
    assert.equal(whole.choices.length, 3);
    assert.deepEqual(whole.choices.map((c) => c.index), [0, 1, 2]);
    assert.deepEqual(streamed.texts, whole.choices.map((c) => c.text));
    assert.deepEqual(streamed.finish, whole.choices.map((c) => c.finish_reason));
    assert.deepEqual(streamed.usage.completion_tokens, whole.usage.completion_tokens);
    assert.ok(streamed.timings, 'the last choice chunk carries timings');
    // Choice i samples with seed + i (docs/SERVER.md): each equals a one-choice request so seeded.
    for (let i = 0; i < 3; ++i) {
      const one = await client.completions.create({ ...request, n: 1, seed: 42 + i });
      assert.equal(one.choices[0].text, whole.choices[i].text, `choice ${i}`);
    }
  });

  test('the same seed gives the same text; seeds give different texts', async () => {
    // The synthetic model is nearly certain of most tokens: take the prompt (of a few) whose next
    // token it is least sure of, so that seeds can make a difference there.
    let prompt = null;
    let best = 0;
    for (let i = 0; i < 12; ++i) {
      const candidate = prose(600 + i, 4);
      const probe = await client.completions.create({ model: MODEL, prompt: candidate, max_tokens: 1, temperature: 0,
        logprobs: 1 });
      const surprise = -probe.choices[0].logprobs.token_logprobs[0];
      if (surprise >= best) [prompt, best] = [candidate, surprise];
    }
    const request = { model: MODEL, prompt, max_tokens: 4, temperature: 2, top_p: 1, top_k: 0 };
    const texts = new Set();
    for (let seed = 1; seed <= 24; ++seed) {
      const a = await client.completions.create({ ...request, seed });
      const b = await client.completions.create({ ...request, seed });
      assert.equal(a.choices[0].text, b.choices[0].text, `seed ${seed}`);
      texts.add(a.choices[0].text);
    }
    assert.ok(texts.size >= 2, `24 seeds gave ${texts.size} distinct text(s); surprise ${best}`);
  });

  test('chat: streamed and non-streamed agree; roles, finish and usage are OpenAI-shaped', async () => {
    const request = { model: MODEL, messages: [{ role: 'system', content: 'Be brief.' },
      { role: 'user', content: prose(4, 8) }], max_tokens: 16, temperature: 0 };
    const whole = await client.chat.completions.create(request);
    const streamed = await collectChatStream(await client.chat.completions.create({ ...request, stream: true,
      stream_options: { include_usage: true } }));
    assert.equal(whole.object, 'chat.completion');
    assert.match(whole.id, /^chatcmpl-/);
    assert.equal(whole.choices[0].message.role, 'assistant');
    assert.equal(streamed.content[0], whole.choices[0].message.content);
    assert.equal(streamed.reasoning[0], whole.choices[0].message.reasoning_content ?? '');
    assert.equal(streamed.roles[0], 1, 'the role comes once, with the first delta');
    assert.equal(streamed.finish[0], whole.choices[0].finish_reason);
    // The same prompt a second time: every token but the last (evaluated for the first logits) is
    // copied from the first request's KV.
    const { prompt_tokens_details: details, ...usage } = streamed.usage;
    const { prompt_tokens_details: _, ...wholeUsage } = whole.usage;
    assert.deepEqual(usage, wholeUsage);
    assert.equal(details.cached_tokens, whole.usage.prompt_tokens - 1);
    // The rendered prompt is the chat template's: its token count is what `kipp template` gives.
    const messagesFile = `${process.env.TMPDIR ?? '/tmp'}/kipp-chat-${process.pid}.json`;
    (await import('node:fs')).writeFileSync(messagesFile, JSON.stringify(request.messages));
    const rendered = execFileSync(kipp, ['template', '--model', instructModel, '--messages', messagesFile],
      { encoding: 'utf8' });
    const ids = JSON.parse(execFileSync(kipp, ['tokenize', '--model', instructModel, '--text', rendered, '--json'],
      { encoding: 'utf8' }));
    assert.equal(whole.usage.prompt_tokens, (ids.ids ?? ids).length);
  });

  test('completion logprobs: tokens concatenate to the text, greedy picks the top alternative', async () => {
    const completion = await client.completions.create({ model: MODEL, prompt: prose(5, 10), max_tokens: 12,
      temperature: 0, logprobs: 3 });
    const { logprobs, text } = completion.choices[0];
    assert.equal(logprobs.tokens.join(''), text);
    assert.equal(logprobs.tokens.length, completion.usage.completion_tokens - (completion.choices[0].finish_reason
      === 'stop' ? 1 : 0));
    for (let i = 0; i < logprobs.tokens.length; ++i) {
      const alternatives = Object.values(logprobs.top_logprobs[i]);
      assert.ok(alternatives.length >= 1 && alternatives.length <= 3);
      assert.ok(logprobs.token_logprobs[i] <= 0);
      assert.ok(Math.abs(Math.max(...alternatives) - logprobs.token_logprobs[i]) < 1e-5, 'greedy = the most likely');
      assert.equal(logprobs.text_offset[i], [...logprobs.tokens.slice(0, i).join('')].length, 'in characters');
    }
  });

  test('chat logprobs: top_logprobs in order, tokens concatenate to the content', async () => {
    const completion = await client.chat.completions.create({ model: MODEL, max_tokens: 10, temperature: 0,
      messages: [{ role: 'user', content: prose(6, 6) }], logprobs: true, top_logprobs: 5,
      chat_template_kwargs: { enable_thinking: false } });
    const content = completion.choices[0].logprobs.content;
    assert.equal(content.map((t) => t.token).join(''), completion.choices[0].message.content);
    for (const token of content) {
      assert.equal(token.top_logprobs.length, 5);
      const values = token.top_logprobs.map((t) => t.logprob);
      assert.deepEqual([...values].sort((a, b) => b - a), values);
      assert.ok(Math.abs(values[0] - token.logprob) < 1e-5);
      assert.deepEqual(token.bytes, [...Buffer.from(token.token, 'utf8')]);
    }
  });

  test('a stop string split across tokens stops the stream exactly before it', async () => {
    const prompt = prose(7, 10);
    const free = await client.completions.create({ model: MODEL, prompt, max_tokens: 24, temperature: 0, logprobs: 0 });
    const tokens = free.choices[0].logprobs.tokens;
    // A stop string that starts inside one token and ends inside a later one.
    let at = 0;
    let stop = null;
    for (let i = 0; i + 1 < tokens.length && !stop; ++i) {
      if (tokens[i].length >= 2 && tokens[i + 1].length >= 1) {
        stop = tokens[i].slice(1) + tokens[i + 1].slice(0, 1);
        at = tokens.slice(0, i).join('').length + 1;
      }
    }
    assert.ok(stop, `no two-token stop string in ${JSON.stringify(tokens)}`);
    const expected = free.choices[0].text.slice(0, free.choices[0].text.indexOf(stop));
    assert.ok(expected.length <= at);
    const streamed = await collectCompletionStream(await client.completions.create({ model: MODEL, prompt,
      max_tokens: 24, temperature: 0, stop: [stop], stream: true }));
    assert.equal(streamed.texts[0], expected);
    assert.equal(streamed.finish[0], 'stop');
    const whole = await client.completions.create({ model: MODEL, prompt, max_tokens: 24, temperature: 0, stop });
    assert.equal(whole.choices[0].text, expected);
  });

  test('bad requests are 400s naming the field, through the client', async () => {
    const cases = [
      [{ temperature: 5 }, 'temperature'],
      [{ n: 9 }, 'n'],
      [{ max_tokens: 0 }, 'max_tokens'],
      [{ top_p: 0 }, 'top_p'],
      [{ logprobs: 6 }, 'logprobs'],
      [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
      [{ echo: true }, 'echo'],
      [{ best_of: 2 }, 'best_of'],
      [{ suffix: 'x' }, 'suffix'],
      [{ frobnicate: 1 }, 'frobnicate'],
      [{ prompt: [1, 2, 10 ** 9] }, 'prompt'],
      [{ logit_bias: { abc: 1 } }, 'logit_bias'],
    ];
    for (const [fields, param] of cases) {
      await assert.rejects(client.completions.create({ model: MODEL, prompt: 'hi', max_tokens: 4, ...fields }),
        (error) => {
          assert.equal(error.status, 400, JSON.stringify(fields));
          assert.equal(error.param, param);
          assert.equal(error.type, 'invalid_request_error');
          return true;
        });
    }
    // Fields that cannot change the output are accepted.
    const ok = await client.completions.create({ model: MODEL, prompt: 'hi', max_tokens: 2, user: 'u', store: false,
      metadata: { a: 'b' }, service_tier: 'auto' });
    assert.equal(ok.choices.length, 1);
    await assert.rejects(client.completions.create({ model: 'gpt-4o', prompt: 'hi' }), (error) =>
      error.status === 404 && error.code === 'model_not_found');
    await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }],
      functions: [{ name: 'f' }] }), (error) => error.status === 400 && error.param === 'functions');
  });

  test('several prompts in one completions request: their choices in order, each as if sent alone', async () => {
    const prompts = [prose(301, 6), prose(302, 17), [9707, 11, 1879]];
    const alone = await Promise.all(prompts.map((prompt) =>
      client.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 0 })));
    const together = await client.completions.create({ model: MODEL, prompt: prompts, max_tokens: 8, temperature: 0, n: 2 });
    assert.equal(together.choices.length, 6);
    together.choices.forEach((choice, index) => {
      assert.equal(choice.index, index);
      assert.equal(choice.text, alone[Math.floor(index / 2)].choices[0].text, `choice ${index}`);
    });
    // The n choices of a prompt share it: each prompt is counted once.
    assert.equal(together.usage.prompt_tokens, alone.reduce((sum, a) => sum + a.usage.prompt_tokens, 0));
    const streamed = await collectCompletionStream(await client.completions.create({ model: MODEL, prompt: prompts,
      max_tokens: 8, temperature: 0, n: 2, stream: true }));
    assert.deepEqual(streamed.texts, together.choices.map((c) => c.text));
    await assert.rejects(client.completions.create({ model: MODEL, prompt: ['ok', ''], max_tokens: 2 }),
      (e) => e.status === 400 && /prompt\[1\]/.test(e.message));
    await assert.rejects(client.completions.create({ model: MODEL, prompt: Array(33).fill('x'), max_tokens: 2 }),
      (e) => e.status === 400 && e.param === 'prompt');
  });

  test('a prompt beyond the context is a 400 even when streaming', async () => {
    const long = Array.from({ length: 5000 }, (_, i) => (i * 7919) % 150000);
    for (const stream of [false, true]) {
      await assert.rejects(client.completions.create({ model: MODEL, prompt: long, max_tokens: 4, stream }),
        (error) => error.status === 400 && error.code === 'context_length_exceeded');
    }
  });

  // Agents ask for more than a local context holds (Claude Code 32,000 tokens, Qwen Code 32,768):
  // max_tokens is cut to the room left, and the answer ends with `length` where it runs out.
  test('a max_tokens past the context is cut to the room left', async () => {
    const context = (await (await fetch(`${server.url}/props`)).json()).n_ctx;
    const prompt = Array.from({ length: context - 6 }, (_, i) => 1000 + ((i * 7919) % 50000));
    const request = { model: MODEL, prompt, max_tokens: 32000, temperature: 0,
      logit_bias: { 151643: -100, 151645: -100 } };
    const whole = await client.completions.create(request);
    assert.equal(whole.choices[0].finish_reason, 'length');
    assert.equal(whole.usage.completion_tokens, 6);
    const streamed = await collectCompletionStream(await client.completions.create({ ...request, stream: true }));
    assert.deepEqual(streamed.texts, [whole.choices[0].text]);
    assert.deepEqual(streamed.finish, ['length']);
  });

  // The 16 queue behind a streamed request that has reserved the whole KV pool (by default the
  // pool holds one context), so none can start on its own as it arrives; once all 16 are seen
  // waiting, that request is cancelled and the scheduler admits them together. The steps that
  // follow do not depend on when each arrived.
  test('16 concurrent greedy requests each equal the same request sent alone', async () => {
    const requests = Array.from({ length: 16 }, (_, i) => ({
      model: MODEL,
      prompt: prose(100 + i, 5 + ((i * 37) % 90)),
      max_tokens: 4 + ((i * 11) % 28),
      temperature: 0,
    }));
    const context = (await (await fetch(`${server.url}/props`)).json()).n_ctx;
    // One token: none of its rows can be borrowed from a cached block, which would be held
    // while it reserves, so the whole pool is free for it.
    const holderPrompt = [9707];
    const controller = new AbortController();
    const holder = await client.completions.create({ model: MODEL, prompt: holderPrompt, stream: true, temperature: 0,
      max_tokens: context - holderPrompt.length, logit_bias: { 151643: -100, 151645: -100 } },
    { signal: controller.signal });
    const holding = holder[Symbol.asyncIterator]();
    assert.equal((await holding.next()).done, false, 'the holding request generates');
    const answers = requests.map((r, i) => (i % 2
      ? client.completions.create({ ...r, stream: true }).then(collectCompletionStream).then((s) => s.texts[0])
      : client.completions.create(r).then((c) => c.choices[0].text)));
    let before_ = await metrics(server.url);
    for (let wait = 0; wait < 600 && metric(before_, 'kipp_requests_waiting') < 16; ++wait) {
      await new Promise((r) => setTimeout(r, 50));  // the deadline only guards against a hang
      before_ = await metrics(server.url);
    }
    assert.equal(metric(before_, 'kipp_requests_waiting'), 16, 'all 16 waited behind the holding request');
    assert.equal(metric(before_, 'kipp_requests_running'), 1);
    controller.abort();  // the holding request is cancelled and its KV freed
    await holding.return().catch(() => {});
    const together = await Promise.all(answers);
    const values = await metrics(server.url);
    for (let i = 0; i < requests.length; ++i) {
      const alone = await client.completions.create(requests[i]);
      assert.equal(together[i], alone.choices[0].text, `request ${i}`);
    }
    // Since the 16 were all waiting, the holding request ran alone (steps of one); so steps of
    // more than 8 sequences are the 16's, admitted together.
    const delta = (name, labels) => metric(values, name, labels) - metric(before_, name, labels);
    const above8 = delta('kipp_batch_size_count') - delta('kipp_batch_size_bucket', 'le="8"');
    assert.ok(above8 > 0, `a step evaluated more than 8 of the 16 together (${above8} steps did)`);
  });

  test('a client that disconnects mid-stream is cancelled and disturbs nobody', async () => {
    const before_ = await metrics(server.url);
    const bystanders = Array.from({ length: 3 }, (_, i) => ({ model: MODEL, prompt: prose(200 + i, 30),
      max_tokens: 40, temperature: 0 }));
    const expected = [];
    for (const r of bystanders) expected.push((await client.completions.create(r)).choices[0].text);
    const controller = new AbortController();
    const victim = client.completions.create({ model: MODEL, prompt: prose(300, 10), max_tokens: 3000,
      temperature: 0, stream: true }, { signal: controller.signal });
    const running = bystanders.map((r) => client.completions.create(r));
    const stream = await victim;
    let chunks = 0;
    for await (const chunk of stream) {
      if (chunk && ++chunks === 5) {
        controller.abort();  // the connection closes under the server's feet
        break;
      }
    }
    assert.equal(chunks, 5);
    const texts = (await Promise.all(running)).map((c) => c.choices[0].text);
    assert.deepEqual(texts, expected);
    for (let wait = 0; wait < 100; ++wait) {
      const now = await metrics(server.url);
      if (metric(now, 'kipp_requests_running') === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const now = await metrics(server.url);
    assert.equal(metric(now, 'kipp_requests_total', 'outcome="cancelled"') -
      metric(before_, 'kipp_requests_total', 'outcome="cancelled"'), 1);
    assert.equal(metric(now, 'kipp_requests_running'), 0);
    assert.equal(metric(now, 'kipp_kv_pool_blocks', 'state="reserved"'), 0, 'its reservation went back');
    assert.equal(metric(now, 'vllm:kv_cache_usage_perc'), 0, 'and its blocks');
  });

  test('a long shared prefix is adopted by the next request, token by token, and reported as cached', async () => {
    const shared = prose(400, 700);
    // The shared part's own tokens (it ends at a word boundary, so a prompt that goes on after it
    // starts with the same ids).
    const sharedIds = JSON.parse(execFileSync(kipp, ['tokenize', '--model', instructModel, '--text', shared, '--json'],
      { encoding: 'utf8' })).ids;
    const first = await client.completions.create({ model: MODEL, prompt: shared + ' alpha', max_tokens: 4,
      temperature: 0 });
    const before_ = await metrics(server.url);
    const second = await client.completions.create({ model: MODEL, prompt: shared + ' beta gamma', max_tokens: 4,
      temperature: 0 });
    const cached = second.usage.prompt_tokens_details.cached_tokens;
    // Its full blocks adopted, the rest of it copied from the first request's last block.
    assert.equal(cached, sharedIds.length, 'every token of the shared part, none after it');
    assert.equal(second.timings.cache_n, cached);
    const now = await metrics(server.url);
    assert.equal(metric(now, 'kipp_prefix_tokens_reused_total') - metric(before_, 'kipp_prefix_tokens_reused_total'),
      cached);
    assert.ok(metric(now, 'kipp_kv_pool_blocks_reused_total') > metric(before_, 'kipp_kv_pool_blocks_reused_total'));
    // The answer with an adopted prefix is the answer without one.
    const fresh = await startServer(kipp, instructModel);
    try {
      const alone = await clientFor(fresh).completions.create({ model: MODEL, prompt: shared + ' beta gamma',
        max_tokens: 4, temperature: 0 });
      assert.equal(alone.usage.prompt_tokens_details.cached_tokens, 0);
      assert.equal(second.choices[0].text, alone.choices[0].text);
    } finally {
      await fresh.stop();
    }
  });
});

describe('what real clients send', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(kipp, instructModel, ['--served-model-name', 'tiny-alias', '--served-model-name', 'second',
      '--cors-origin', 'http://localhost:5173', '--ignore-unknown-fields']);
    client = clientFor(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
  });
  const ask = (fields) => client.chat.completions.create({ model: MODEL, max_tokens: 3, temperature: 0, ...fields });

  test('--served-model-name adds names; responses use the first', async () => {
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id), ['tiny-alias', 'second', MODEL]);
    for (const name of ['second', MODEL]) {
      const answer = await client.completions.create({ model: name, prompt: 'hi', max_tokens: 2 });
      assert.equal(answer.model, 'tiny-alias');
    }
    await assert.rejects(client.completions.create({ model: 'third', prompt: 'hi' }), (e) => e.status === 404 &&
      e.code === 'model_not_found' && e.message.includes('`tiny-alias`, `second`'));
  });

  test('--cors-origin: a browser preflight and the request after it, streamed too; other origins get no grant', async () => {
    // What a browser sends before a page's fetch() with the openai SDK's headers.
    const preflight = await fetch(`${server.url}/v1/chat/completions`, { method: 'OPTIONS', headers: {
      Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization,content-type,x-stainless-os,x-stainless-retry-count,x-evil' } });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://localhost:5173');
    assert.match(preflight.headers.get('access-control-allow-methods'), /POST/);
    assert.equal(preflight.headers.get('access-control-allow-headers'),
      'authorization, content-type, x-stainless-os, x-stainless-retry-count');
    for (const stream of [false, true]) {
      const response = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: {
        Origin: 'http://localhost:5173', 'Content-Type': 'application/json', 'x-stainless-os': 'Linux' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, stream }) });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('access-control-allow-origin'), 'http://localhost:5173');
      await response.text();
    }
    const other = await fetch(`${server.url}/v1/models`, { headers: { Origin: 'http://evil.example' } });
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    await other.text();
    const otherPreflight = await fetch(`${server.url}/v1/models`, { method: 'OPTIONS', headers: {
      Origin: 'http://evil.example', 'Access-Control-Request-Method': 'GET' } });
    assert.equal(otherPreflight.headers.get('access-control-allow-origin'), null);
    await otherPreflight.text();
  });

  test('--ignore-unknown-fields accepts what Kipp cannot honour and says so in a header', async () => {
    const { data, response } = await client.completions.create({ model: MODEL, prompt: 'hi', max_tokens: 2,
      echo: true, best_of: 2, some_future_field: { a: 1 } }).withResponse();
    assert.equal(data.choices.length, 1);
    assert.equal(response.headers.get('x-kipp-ignored-fields'), 'echo, best_of, some_future_field');
    // Known fields are still checked.
    await assert.rejects(client.completions.create({ model: MODEL, prompt: 'hi', n: 0, echo: true }),
      (e) => e.status === 400 && e.param === 'n');
  });

  test('/tokenize, /detokenize and /props in llama.cpp\'s shapes', async () => {
    const post = async (route, body) => {
      const response = await fetch(`${server.url}${route}`, { method: 'POST', body: JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
    const text = 'Hello, wörld! <|im_start|>';
    const ids = await post('/tokenize', { content: text });
    assert.equal(ids.status, 200);
    assert.equal(ids.body.tokens.at(-1), 151644);  // the special token written in the text is that token
    const pieces = await post('/tokenize', { content: 'wö', with_pieces: true });
    assert.ok(pieces.body.tokens.every((t) => typeof t.id === 'number' && (typeof t.piece === 'string' || Array.isArray(t.piece))));
    const back = await post('/detokenize', { tokens: ids.body.tokens });
    assert.deepEqual(back, { status: 200, body: { content: text } });
    assert.equal((await post('/detokenize', { tokens: [10 ** 9] })).status, 400);
    assert.equal((await post('/tokenize', { text: 'x' })).body.error.param, 'content');
    const props = await (await fetch(`${server.url}/props`)).json();
    const { metadata } = await gguf(instructModel, { allowLocalFile: true });
    assert.equal(props.chat_template, metadata['tokenizer.chat_template']);
    assert.equal(props.chat_template_caps.supports_tools, true);
    assert.equal(props.model_alias, 'tiny-alias');
  });

  test('text content parts, the developer role and a tool loop in the history are read as the template does', async () => {
    // The same prompt, said two ways, must give the same prompt tokens and the same greedy answer.
    const plain = await ask({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'one\ntwo' }] });
    const sdkStyle = await ask({ messages: [{ role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }],
    modalities: ['text'], prompt_cache_key: 'k', safety_identifier: 's' });
    assert.equal(sdkStyle.usage.prompt_tokens, plain.usage.prompt_tokens);
    assert.equal(sdkStyle.choices[0].message.content, plain.choices[0].message.content);
    // A history with a call and its result: accepted, and it is in the prompt (more tokens than without).
    const history = [{ role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' }];
    const withLoop = await ask({ messages: history });
    const without = await ask({ messages: history.slice(0, 1) });
    assert.ok(withLoop.usage.prompt_tokens > without.usage.prompt_tokens + 20);
    // What these checkpoints cannot read is named.
    await assert.rejects(ask({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }),
      (e) => e.status === 400 && e.param === 'messages' && /image_url/.test(e.message));
    await assert.rejects(ask({ messages: [{ role: 'user', content: 'x' }], modalities: ['text', 'audio'] }),
      (e) => e.status === 400 && e.param === 'modalities');
  });
});

describe('a server with a tiny KV pool', () => {
  test('delays admission but answers every request correctly', async () => {
    // 1 MiB of KV on the tiny model is 4 blocks (128 positions): one of these requests at a time.
    const server = await startServer(kipp, instructModel, ['--kv-pool-mib', '1']);
    const client = clientFor(server);
    try {
      const requests = Array.from({ length: 8 }, (_, i) => ({ model: MODEL, prompt: prose(500 + i, 20 + i * 9),
        max_tokens: 24, temperature: 0 }));
      const together = await Promise.all(requests.map((r) => client.completions.create(r)));
      for (let i = 0; i < requests.length; ++i) {
        const alone = await client.completions.create(requests[i]);
        assert.equal(together[i].choices[0].text, alone.choices[0].text, `request ${i}`);
      }
      const values = await metrics(server.url);
      assert.equal(metric(values, 'kipp_requests_total', 'outcome="failed"'), 0);
    } finally {
      await server.stop();
    }
  });
});

describe('a server that refuses long max_tokens', () => {
  test('--refuse-long-max-tokens answers a max_tokens past the context with a 400', async () => {
    const server = await startServer(kipp, instructModel, ['--refuse-long-max-tokens']);
    try {
      for (const stream of [false, true]) {
        await assert.rejects(clientFor(server).completions.create({ model: MODEL, prompt: 'hello', max_tokens: 32000,
          stream }), (error) => error.status === 400 && error.param === 'max_tokens'
          && error.code === 'context_length_exceeded');
      }
    } finally {
      await server.stop();
    }
  });
});

describe('overload, API keys and base checkpoints', () => {
  test('a full queue answers 503 with Retry-After', async () => {
    const server = await startServer(kipp, instructModel, ['--max-batch', '1', '--max-waiting', '1']);
    try {
      const body = JSON.stringify({ model: MODEL, prompt: 'hello', max_tokens: 200, temperature: 0 });
      const responses = await Promise.all(Array.from({ length: 6 }, () => fetch(`${server.url}/v1/completions`,
        { method: 'POST', body, headers: { 'content-type': 'application/json' } })));
      const statuses = responses.map((r) => r.status);
      assert.ok(statuses.includes(200), statuses.join());
      const busy = responses.filter((r) => r.status === 503);
      assert.ok(busy.length >= 1, statuses.join());
      assert.equal(busy[0].headers.get('retry-after'), '1');
      const error = await busy[0].json();
      assert.equal(error.error.code, 'overloaded');
      for (const r of responses) if (r.status === 200) assert.equal((await r.json()).choices.length, 1);
      assert.ok(metric(await metrics(server.url), 'kipp_requests_rejected_total', 'reason="overloaded"') >= 1);
    } finally {
      await server.stop();
    }
  });

  test('--api-key guards every /v1 route; health and metrics stay open', async () => {
    const server = await startServer(kipp, instructModel, [], { env: { KIPP_API_KEY: 'sesame' } });
    try {
      await assert.rejects(clientFor(server, { apiKey: 'wrong' }).models.list(), (e) => e.status === 401);
      await assert.rejects(clientFor(server, { apiKey: 'wrong' }).completions.create({ model: MODEL, prompt: 'x' }),
        (e) => e.status === 401 && e.type === 'authentication_error');
      const none = await fetch(`${server.url}/v1/completions`, { method: 'POST', body: '{}' });
      assert.equal(none.status, 401);
      const ok = await clientFor(server, { apiKey: 'sesame' }).completions.create({ model: MODEL, prompt: 'x',
        max_tokens: 2 });
      assert.equal(ok.choices.length, 1);
      assert.equal((await fetch(`${server.url}/health`)).status, 200);
      assert.equal((await fetch(`${server.url}/metrics`)).status, 200);
    } finally {
      await server.stop();
    }
  });

  test('a base checkpoint refuses chat and serves completions', async () => {
    const server = await startServer(kipp, baseModel);
    try {
      const client = clientFor(server);
      await assert.rejects(client.chat.completions.create({ model: 'kipp-test/qwen3-tiny-untied',
        messages: [{ role: 'user', content: 'hi' }] }), (e) => e.status === 400 && /base checkpoint/.test(e.message));
      const ok = await client.completions.create({ model: 'kipp-test/qwen3-tiny-untied', prompt: 'hi', max_tokens: 3 });
      assert.equal(ok.choices.length, 1);
    } finally {
      await server.stop();
    }
  });
});
