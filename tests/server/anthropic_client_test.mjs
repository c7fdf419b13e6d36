// Anthropic's Messages API through the official `@anthropic-ai/sdk` npm client against a real
// `kipp serve` on the tiny synthetic checkpoints: every conversation of the shared fixture counts
// the same tokens as its OpenAI twin and answers greedily with the same text; system blocks; a
// tool loop; tool_choice any / tool / none (inputs checked by `ajv` against input_schema); streams
// put back together by the SDK equal to the whole message for the same seed; stop sequences;
// count_tokens; thinking budgets on both APIs closing a think block; errors in Anthropic's shape,
// the HTTP layer's own (413) included; x-api-key.
//
//   node anthropic_client_test.mjs KIPP INSTRUCT_MODEL THINKING_MODEL
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { metric, metrics, startServer } from './server_process.mjs';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;

const [kipp, instructModel, thinkingModel] = process.argv.slice(2);
if (!thinkingModel) {
  console.error('usage: anthropic_client_test.mjs KIPP INSTRUCT_MODEL THINKING_MODEL');
  process.exit(2);
}
// The registry id of the instruct artifact: its file is named after it (qwen3-tiny.bf16.gguf is
// kipp-test/qwen3-tiny; the suite also runs on kipp-test/qwen3-moe-tiny).
const MODEL = `kipp-test/${instructModel.split('/').pop().split('.')[0]}`;
const THINKING_MODEL = 'kipp-test/qwen3-tiny-thinking-2507';
const THINK_CLOSE = 151668;  // </think> in the Qwen3 vocabulary
const fixture = JSON.parse(readFileSync(new URL('../fixtures/anthropic_openai_conversations.json', import.meta.url)));
const TOOLS = fixture.tools.anthropic;
const ajv = new Ajv2020({ strict: false });
const validators = Object.fromEntries(TOOLS.map((tool) => [tool.name, ajv.compile(tool.input_schema)]));

const anthropicFor = (server, options = {}) =>
  new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 120000, ...options });
const openaiFor = (server) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

const text = (message) => message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
const uses = (message) => message.content.filter((b) => b.type === 'tool_use');

function checkMessage(message) {
  assert.equal(message.type, 'message');
  assert.equal(message.role, 'assistant');
  assert.match(message.id, /^msg_/);
  assert.ok(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use'].includes(message.stop_reason), message.stop_reason);
  for (const key of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'])
    assert.ok(Number.isInteger(message.usage[key]), key);
  for (const block of message.content) assert.ok(['text', 'thinking', 'tool_use'].includes(block.type), block.type);
}

function checkUses(message, names) {
  const calls = uses(message);
  assert.ok(calls.length >= 1, JSON.stringify(message.content));
  assert.equal(message.stop_reason, 'tool_use');
  for (const call of calls) {
    assert.match(call.id, /^toolu_[A-Za-z0-9]{24}$/);
    assert.ok(names.includes(call.name), call.name);
    assert.equal(typeof call.input, 'object');
    assert.ok(validators[call.name](call.input), `${JSON.stringify(call.input)}: ${ajv.errorsText(validators[call.name].errors)}`);
  }
}

// What two answers to the same request share: all but the ids (fresh per message and call) and
// the split of the input between fresh and cached tokens (the second request reads the pool).
function comparable(message) {
  const { id, parsed_output: parsed, usage, ...rest } = message;
  return { ...rest, content: message.content.map(({ id: callId, ...block }) => block),
    usage: { input: usage.input_tokens + usage.cache_read_input_tokens, output: usage.output_tokens,
      thinking: usage.output_tokens_details.thinking_tokens } };
}

describe('the Messages API through the Anthropic client', () => {
  let server, client, openai;
  before(async () => {
    server = await startServer(kipp, instructModel);
    client = anthropicFor(server);
    openai = openaiFor(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
  });

  test('every fixture conversation counts and answers as its OpenAI twin', async () => {
    for (const conversation of fixture.conversations) {
      const tools = conversation.tools ? { anthropic: { tools: TOOLS }, openai: { tools: fixture.tools.openai } } : {};
      const counted = await client.messages.countTokens({ model: MODEL, ...conversation.anthropic, ...tools.anthropic });
      const message = await client.messages.create({ model: MODEL, max_tokens: 12, temperature: 0,
        ...conversation.anthropic, ...tools.anthropic, tool_choice: { type: 'none' } });
      checkMessage(message);
      const twin = await openai.chat.completions.create({ model: MODEL, max_tokens: 12, temperature: 0,
        ...conversation.openai, ...tools.openai, ...(conversation.tools ? { tool_choice: 'none' } : {}) });
      assert.equal(counted.input_tokens, twin.usage.prompt_tokens, conversation.name);
      assert.equal(message.usage.input_tokens + message.usage.cache_read_input_tokens, counted.input_tokens, conversation.name);
      assert.equal(message.usage.output_tokens, twin.usage.completion_tokens, conversation.name);
      assert.equal(text(message), twin.choices[0].message.content, conversation.name);
      const thinking = message.content.filter((b) => b.type === 'thinking').map((b) => b.thinking).join('');
      assert.equal(thinking, twin.choices[0].message.reasoning_content ?? '', conversation.name);
    }
  });

  test('models.list reads the served names', async () => {
    const page = await client.models.list();
    const ids = page.data.map((model) => model.id);
    assert.ok(ids.includes(MODEL), ids.join(', '));
    for (const model of page.data) {
      assert.equal(model.type, 'model');
      assert.equal(typeof model.display_name, 'string');
      assert.ok(!Number.isNaN(Date.parse(model.created_at)));
    }
    assert.equal(page.has_more, false);
  });

  test('a plain message: blocks, stop reason and usage; the shared prefix is read from the pool', async () => {
    const request = { model: MODEL, max_tokens: 20, temperature: 0, system: [{ type: 'text', text: 'A long shared system prompt '.repeat(8) }],
      messages: [{ role: 'user', content: 'Hello' }] };
    const first = await client.messages.create(request);
    checkMessage(first);
    assert.equal(first.model, MODEL);
    assert.ok(first.usage.output_tokens >= 1 && first.usage.output_tokens <= 20);
    if (first.stop_reason === 'max_tokens') assert.equal(first.usage.output_tokens, 20);
    const again = await client.messages.create(request);
    assert.ok(again.usage.cache_read_input_tokens >= 32, 'the second request adopts the first one\'s full blocks');
    assert.deepEqual(again.content, first.content, 'greedy answers repeat');
  });

  // Claude Code asks for 32,000 output tokens whatever the context: they are cut to the room left,
  // and the message ends with max_tokens where it runs out.
  test('a max_tokens past the context is cut to the room left', async () => {
    const context = (await (await fetch(`${server.url}/props`)).json()).n_ctx;
    const ask = (words) => ({ model: MODEL, messages: [{ role: 'user', content: 'river '.repeat(words) }] });
    const count = async (words) => (await client.messages.countTokens(ask(words))).input_tokens;
    const [at100, at200] = [await count(100), await count(200)];
    const words = 100 + Math.floor((context - 8 - at100) / ((at200 - at100) / 100));
    const request = { ...ask(words), max_tokens: 32000, temperature: 0 };
    const message = await client.messages.create(request);
    checkMessage(message);
    assert.ok(message.usage.input_tokens + message.usage.output_tokens <= context, JSON.stringify(message.usage));
    if (message.stop_reason === 'max_tokens') assert.equal(message.usage.input_tokens + message.usage.output_tokens, context);
  });

  // The request Claude Code sends (tests/fixtures/claude_code_request.json), streamed as it asks:
  // answered, with thinking blocks that carry no text (display "omitted"). Its max_tokens is the
  // one CLAUDE_CODE_MAX_OUTPUT_TOKENS=64 makes it send: the default 32,000 is cut to the room left
  // (the test above), which the tiny checkpoint's random weights would spend in full.
  test('Claude Code\'s request is answered as it sends it', async () => {
    const sent = { ...JSON.parse(readFileSync(new URL('../fixtures/claude_code_request.json', import.meta.url))).request,
      model: MODEL, max_tokens: 64 };
    const events = [];
    const response = await fetch(`${server.url}/v1/messages?beta=true`, { method: 'POST', body: JSON.stringify(sent),
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'unused',
        'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27' } });
    assert.equal(response.status, 200, await response.clone().text());
    for (const line of (await response.text()).split('\n'))
      if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
    assert.equal(events[0].type, 'message_start');
    assert.equal(events.at(-1).type, 'message_stop');
    for (const event of events) {
      if (event.type === 'content_block_delta') assert.notEqual(event.delta.type, 'thinking_delta', 'omitted');
      if (event.type === 'content_block_start' && event.content_block.type === 'thinking')
        assert.equal(event.content_block.thinking, '');
    }
    const end = events.find((event) => event.type === 'message_delta');
    assert.ok(['end_turn', 'max_tokens'].includes(end.delta.stop_reason), end.delta.stop_reason);
  });

  test('streams put back together equal the message for the same seed', async () => {
    const requests = [
      { max_tokens: 24, temperature: 1, seed: 5, messages: [{ role: 'user', content: 'Tell me a story' }] },
      { max_tokens: 60, temperature: 1, seed: 9, tools: TOOLS, tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: 'Weather in Paris?' }], thinking: { type: 'disabled' } },
    ];
    for (const fields of requests) {
      const request = { model: MODEL, ...fields };
      const whole = await client.messages.create(request);
      const stream = client.messages.stream(request);
      const events = [];
      stream.on('streamEvent', (event) => events.push(event.type));
      const streamed = await stream.finalMessage();
      assert.equal(streamed.parsed_output ?? null, null);  // parsed_output: the SDK's own addition
      assert.deepEqual(comparable(JSON.parse(JSON.stringify(streamed))), comparable(whole));
      assert.equal(events[0], 'message_start');
      assert.equal(events.at(-1), 'message_stop');
      assert.equal(events.at(-2), 'message_delta');
      assert.equal(events.filter((e) => e === 'content_block_start').length, whole.content.length);
      assert.equal(events.filter((e) => e === 'content_block_stop').length, whole.content.length);
    }
  });

  test('the raw stream has the event sequence, ping included', async () => {
    const response = await fetch(`${server.url}/v1/messages`, { method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 8, stream: true, messages: [{ role: 'user', content: 'Hi' }] }) });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type'), /text\/event-stream/);
    const body = await response.text();
    const names = [...body.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    assert.deepEqual(names.slice(0, 2), ['message_start', 'ping']);
    assert.deepEqual(names.slice(-2), ['message_delta', 'message_stop']);
    for (const chunk of body.split('\n\n').filter(Boolean)) {
      const [event, data] = chunk.split('\n');
      assert.equal(JSON.parse(data.slice('data: '.length)).type, event.slice('event: '.length));
    }
  });

  test('tool_choice any, a named tool, none, and one call without parallel use', async () => {
    const ask = (fields) => client.messages.create({ model: MODEL, max_tokens: 120, seed: 11, tools: TOOLS,
      thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], ...fields });
    checkUses(await ask({ tool_choice: { type: 'any' } }), ['get_weather', 'now']);
    const named = await ask({ tool_choice: { type: 'tool', name: 'get_weather' } });
    checkUses(named, ['get_weather']);
    assert.equal(uses(named).length, 1, 'a named tool is called once');
    const single = await ask({ tool_choice: { type: 'any', disable_parallel_tool_use: true } });
    checkUses(single, ['get_weather', 'now']);
    assert.equal(uses(single).length, 1);
    const none = await ask({ tool_choice: { type: 'none' }, max_tokens: 30 });
    assert.equal(uses(none).length, 0);
    assert.notEqual(none.stop_reason, 'tool_use');
    const values = await metrics(server.url);
    assert.ok(metric(values, 'kipp_tool_calls_total', 'outcome="returned"') >= 3);
  });

  test('a tool loop: the call, its result, and the next answer', async () => {
    const question = { role: 'user', content: 'What is the weather in Paris?' };
    const first = await client.messages.create({ model: MODEL, max_tokens: 120, seed: 3, tools: TOOLS,
      thinking: { type: 'disabled' }, tool_choice: { type: 'tool', name: 'get_weather' }, messages: [question] });
    checkUses(first, ['get_weather']);
    const call = uses(first)[0];
    const messages = [question, { role: first.role, content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 C' }] }];
    const next = await client.messages.create({ model: MODEL, max_tokens: 16, temperature: 0, tools: TOOLS,
      thinking: { type: 'disabled' }, tool_choice: { type: 'none' }, messages });
    checkMessage(next);
    const counted = await client.messages.countTokens({ model: MODEL, tools: TOOLS, thinking: { type: 'disabled' }, messages });
    assert.equal(next.usage.input_tokens + next.usage.cache_read_input_tokens, counted.input_tokens);
    // The same turn through the OpenAI endpoint renders the same prompt.
    const twin = await openai.chat.completions.create({ model: MODEL, max_tokens: 16, temperature: 0,
      tools: fixture.tools.openai, tool_choice: 'none', chat_template_kwargs: { enable_thinking: false },
      messages: [question, { role: 'assistant', content: text(first) || null,
        tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.input } }] },
      { role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 C' }] });
    assert.equal(twin.usage.prompt_tokens, counted.input_tokens);
    assert.equal(twin.choices[0].message.content, text(next));
  });

  test('stop sequences end the message and are named', async () => {
    const request = { model: MODEL, max_tokens: 40, temperature: 0, messages: [{ role: 'user', content: 'Count for me' }],
      thinking: { type: 'disabled' } };
    const full = await client.messages.create(request);
    const whole = text(full);
    assert.ok(whole.length >= 12, whole);
    const stop = whole.slice(Math.floor(whole.length / 2), Math.floor(whole.length / 2) + 3);
    for (const stream of [false, true]) {
      const cut = stream ? await client.messages.stream({ ...request, stop_sequences: [stop] }).finalMessage()
                         : await client.messages.create({ ...request, stop_sequences: [stop] });
      assert.equal(cut.stop_reason, 'stop_sequence');
      assert.equal(cut.stop_sequence, stop);
      assert.equal(text(cut), whole.slice(0, whole.indexOf(stop)));
    }
  });

  test('bad requests are answered in Anthropic\'s error shape', async () => {
    const cases = [
      [{ model: MODEL, messages: [{ role: 'user', content: 'x' }] }, 400, 'invalid_request_error', /max_tokens/],
      [{ model: 'nope', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, 404, 'not_found_error', /nope/],
      [{ model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64',
        media_type: 'image/png', data: 'AA==' } }] }] }, 400, 'invalid_request_error', /image/],
      [{ model: MODEL, max_tokens: 5, frequency_penalty: 1, messages: [{ role: 'user', content: 'x' }] }, 400,
        'invalid_request_error', /frequency_penalty/],
      [{ model: MODEL, max_tokens: 5, temperature: 3, messages: [{ role: 'user', content: 'x' }] }, 400,
        'invalid_request_error', /temperature/],
    ];
    for (const [body, status, type, message] of cases) {
      await assert.rejects(client.messages.create(body), (error) => {
        assert.equal(error.status, status);
        assert.equal(error.error.type, 'error');
        assert.equal(error.error.error.type, type);
        assert.match(error.error.error.message, message);
        return true;
      });
    }
    const raw = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: '{"model": ' });
    assert.equal(raw.status, 400);
    assert.equal((await raw.json()).error.type, 'invalid_request_error');
    await assert.rejects(client.messages.countTokens({ model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      (error) => error.status === 400 && /count_tokens/.test(error.error.error.message));
  });
});

describe('thinking budgets', () => {
  test('a budget closes the think block and the answer follows, on both APIs', async () => {
    const server = await startServer(kipp, thinkingModel);
    try {
      const client = anthropicFor(server);
      const messages = [{ role: 'user', content: 'Think about it' }];
      // Without a budget the tiny checkpoint's greedy thought outlasts it: the check below can fail.
      const free = await client.messages.create({ model: THINKING_MODEL, max_tokens: 40, temperature: 0, messages,
        thinking: { type: 'adaptive' } });
      assert.equal(free.content[0].type, 'thinking');
      assert.ok(free.usage.output_tokens_details.thinking_tokens > 12, JSON.stringify(free.usage));
      const budget = 8;
      for (const stream of [false, true]) {
        const request = { model: THINKING_MODEL, max_tokens: 40, temperature: 0, messages,
          thinking: { type: 'enabled', budget_tokens: budget } };
        const message = stream ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
        checkMessage(message);
        assert.equal(message.content[0].type, 'thinking');
        // The budget, then "\n" when the thought did not end one, then </think>.
        const thinking = message.usage.output_tokens_details.thinking_tokens;
        assert.ok(thinking >= budget + 1 && thinking <= budget + 2, `${thinking} tokens of thought`);
        assert.ok(message.usage.output_tokens > thinking, 'the answer began after the block');
        assert.ok(free.content[0].thinking.startsWith(message.content[0].thinking.trimEnd()), 'the thought is the free one, cut');
      }
      const openai = openaiFor(server);
      for (const fields of [{ thinking_budget: budget }, { reasoning_effort: 'none' }]) {
        const answer = await openai.chat.completions.create({ model: THINKING_MODEL, max_tokens: 40, temperature: 0,
          messages, logit_bias: { [THINK_CLOSE]: -100 }, ...fields });
        const reasoning = answer.usage.completion_tokens_details.reasoning_tokens;
        const limit = fields.thinking_budget ?? 0;
        assert.ok(reasoning >= 1 && reasoning <= limit + 2, `${JSON.stringify(fields)}: ${reasoning}`);
        assert.ok(answer.usage.completion_tokens > reasoning, 'the answer began after the block');
      }
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

describe('the HTTP layer\'s own errors', () => {
  test('a body over --max-body-bytes is a 413 the client reads as request_too_large', async () => {
    const server = await startServer(kipp, instructModel, ['--max-body-bytes', '65536']);
    try {
      const request = { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'word '.repeat(20000) }] };
      await assert.rejects(anthropicFor(server).messages.create(request), (error) => {
        assert.equal(error.status, 413);
        assert.equal(error.error.type, 'error');
        assert.equal(error.error.error.type, 'request_too_large');
        assert.match(error.error.error.message, /65536/);
        return true;
      });
      // The same limit on an OpenAI route answers in OpenAI's shape.
      await assert.rejects(openaiFor(server).chat.completions.create({ model: MODEL, max_tokens: 2,
        messages: [{ role: 'user', content: 'word '.repeat(20000) }] }), (error) => {
        assert.equal(error.status, 413);
        assert.equal(error.error.type, 'invalid_request_error');
        assert.equal(error.code, 'request_too_large');
        return true;
      });
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

describe('keys', () => {
  test('--api-key takes x-api-key (the Anthropic client) or Bearer, and refuses in Anthropic\'s shape', async () => {
    const server = await startServer(kipp, instructModel, ['--api-key', 'sesame']);
    try {
      const request = { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'x' }] };
      checkMessage(await anthropicFor(server, { apiKey: 'sesame' }).messages.create(request));
      checkMessage(await anthropicFor(server, { apiKey: null, authToken: 'sesame' }).messages.create(request));
      await assert.rejects(anthropicFor(server, { apiKey: 'wrong' }).messages.create(request), (error) =>
        error.status === 401 && error.error.error.type === 'authentication_error');
      await assert.rejects(anthropicFor(server, { apiKey: 'wrong' }).messages.countTokens({ model: MODEL, messages: request.messages }),
        (error) => error.status === 401);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});
