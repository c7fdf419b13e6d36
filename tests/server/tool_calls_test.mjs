// Tool calling through the official `openai` npm client against a real `kipp serve` on the tiny
// synthetic checkpoint: tool_choice in all four forms, streamed and not, calls checked by `ajv`
// against the function's parameter schema, deltas reassembled into the non-streamed message,
// the <tool_call> token told apart from the same text, a multi-turn tool loop, the refusals, and
// reasoning on a thinking checkpoint (usage.reasoning_tokens, a think block cut by max_tokens).
//
//   node tool_calls_test.mjs KIPP INSTRUCT_MODEL THINKING_MODEL
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';

import { metric, metrics, startServer } from './server_process.mjs';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;

const [kipp, instructModel, thinkingModel] = process.argv.slice(2);
if (!thinkingModel) {
  console.error('usage: tool_calls_test.mjs KIPP INSTRUCT_MODEL THINKING_MODEL');
  process.exit(2);
}
// The registry id of the instruct artifact, which is named after it (the suite also runs on
// kipp-test/qwen3-moe-tiny, and on kipp-test/qwen3-coder-tiny, whose calls are XML).
const MODEL = `kipp-test/${instructModel.split('/').pop().split('.')[0]}`;
const CODER = MODEL.includes('coder');  // calls in Qwen3-Coder's XML form
const TOOL_CALL_TOKEN = 151657;  // <tool_call> in the Qwen3 vocabulary
const NO_THINKING = { chat_template_kwargs: { enable_thinking: false } };
const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 },
    days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city'], additionalProperties: false } } };
// Every string bounded and no open objects: the tiny model's random weights would otherwise write
// one string until max_tokens (a real model ends its strings; the bound keeps the test exact).
const NOW = { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {},
  additionalProperties: false } } };
const TOOLS = [WEATHER, NOW];
const ajv = new Ajv2020({ strict: false });
const validators = { get_weather: ajv.compile(WEATHER.function.parameters), now: ajv.compile(NOW.function.parameters) };
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

// The streamed chunks put back together as one message, the way clients do.
async function reassemble(stream) {
  const message = { content: '', tool_calls: [] };
  let finish = null;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      if (choice.finish_reason) finish = choice.finish_reason;
      if (choice.delta.content) message.content += choice.delta.content;
      for (const delta of choice.delta.tool_calls ?? []) {
        const call = (message.tool_calls[delta.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
        if (delta.id) call.id = delta.id;
        if (delta.type) call.type = delta.type;
        if (delta.function?.name) call.function.name += delta.function.name;
        if (delta.function?.arguments) call.function.arguments += delta.function.arguments;
      }
    }
  }
  return { message, finish };
}

function checkCalls(calls, allowedNames) {
  assert.ok(calls.length >= 1);
  for (const call of calls) {
    assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
    assert.equal(call.type, 'function');
    assert.ok(allowedNames.includes(call.function.name), call.function.name);
    const args = JSON.parse(call.function.arguments);
    assert.ok(validators[call.function.name](args), `${call.function.arguments}: ${ajv.errorsText(validators[call.function.name].errors)}`);
  }
}

describe('tool calling through the openai client', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(kipp, instructModel);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
  });
  const ask = (fields) => client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, max_tokens: 400,
    seed: 11, ...NO_THINKING, ...fields });

  test('tool_choice required: a call that validates, streamed deltas equal the message', async () => {
    for (const seed of [1, 2, 3]) {
      const answer = await ask({ tool_choice: 'required', seed, logprobs: true });
      const choice = answer.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice.message));
      checkCalls(choice.message.tool_calls, ['get_weather', 'now']);
      // The call as written: Qwen3-Coder's XML form, or the JSON object of the other checkpoints.
      const raw = choice.logprobs.content.map((t) => t.token).join('');
      assert.match(raw, CODER ? /^<tool_call>\n<function=(get_weather|now)>\n/ : /^<tool_call>\s*\{"(name|arguments)"/, raw);
      const streamed = await reassemble(await ask({ tool_choice: 'required', seed, stream: true }));
      assert.equal(streamed.finish, 'tool_calls');
      assert.equal(streamed.message.content, choice.message.content ?? '');
      assert.deepEqual(streamed.message.tool_calls.map((c) => c.function), choice.message.tool_calls.map((c) => c.function));
      assert.equal(new Set(streamed.message.tool_calls.map((c) => c.id)).size, streamed.message.tool_calls.length);
    }
  });

  test('a named function is the one called, once; n = 3 choices each call it', async () => {
    const answer = await ask({ tool_choice: { type: 'function', function: { name: 'get_weather' } }, n: 3, temperature: 1 });
    assert.equal(answer.choices.length, 3);
    for (const choice of answer.choices) {
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls.length, 1);
      checkCalls(choice.message.tool_calls, ['get_weather']);
    }
  });

  // As pydantic writes a model with a nested one: the shared type under $defs, a local $ref to it.
  test('a forced call to a tool whose schema has $defs and local $refs validates', async () => {
    const ADOPT = { type: 'function', function: { name: 'adopt', parameters: {
      $defs: { Pet: { properties: { name: { maxLength: 10, title: 'Name', type: 'string' } }, required: ['name'],
        title: 'Pet', type: 'object', additionalProperties: false } },
      properties: { pet: { $ref: '#/$defs/Pet' } }, required: ['pet'], title: 'Adopt', type: 'object',
      additionalProperties: false } } };
    const valid = ajv.compile(ADOPT.function.parameters);
    for (const tool_choice of ['required', { type: 'function', function: { name: 'adopt' } }]) {
      const answer = await ask({ tools: [ADOPT, NOW], tool_choice, parallel_tool_calls: false });
      const choice = answer.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice.message));
      for (const call of choice.message.tool_calls) {
        if (call.function.name !== 'adopt') continue;
        const args = JSON.parse(call.function.arguments);
        assert.ok(valid(args), `${call.function.arguments}: ${ajv.errorsText(valid.errors)}`);
      }
    }
  });

  test('the <tool_call> token starts a call; tool_choice none never samples it', async () => {
    const before_ = await metrics(server.url);
    const pushed = { logit_bias: { [TOOL_CALL_TOKEN]: 100 }, max_tokens: 12, temperature: 0 };
    // With auto, a pushed <tool_call> token opens calls that never become JSON: they come back as
    // content, byte for byte, and are counted.
    const auto = await ask({ tool_choice: 'auto', ...pushed, logprobs: true });
    const raw = auto.choices[0].logprobs.content.map((t) => t.token).join('');
    assert.ok(raw.startsWith('<tool_call>'), raw);
    assert.equal(auto.choices[0].message.tool_calls, undefined);
    assert.equal(auto.choices[0].message.content, raw);
    const after_ = await metrics(server.url);
    assert.ok(metric(after_, 'kipp_tool_calls_total', 'outcome="unparsed"') >
      metric(before_, 'kipp_tool_calls_total', 'outcome="unparsed"'));
    // With none, the same push cannot make the model open a call.
    const none = await ask({ tool_choice: 'none', ...pushed, logprobs: true });
    assert.ok(!none.choices[0].logprobs.content.some((t) => t.token === '<tool_call>'));
    assert.equal(none.choices[0].message.tool_calls, undefined);
    // The tools are still in the prompt with none.
    const bare = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1, ...NO_THINKING });
    assert.ok(none.usage.prompt_tokens > bare.usage.prompt_tokens + 50);
  });

  test('a tool loop: the call and its result go back in the history', async () => {
    const first = await ask({ tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    const call = first.choices[0].message.tool_calls[0];
    const history = [...messages, first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature_c: 21 }) }];
    const second = await ask({ messages: history, max_tokens: 8 });
    assert.equal(second.choices.length, 1);
    assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
    // Twice round the loop, the second call on top of the first result.
    const third = await ask({ messages: history, tool_choice: 'required' });
    checkCalls(third.choices[0].message.tool_calls, ['get_weather', 'now']);
  });

  test('parallel_tool_calls false returns one call', async () => {
    for (const seed of [4, 5, 6]) {
      const answer = await ask({ tool_choice: 'required', parallel_tool_calls: false, seed });
      assert.equal(answer.choices[0].message.tool_calls.length, 1);
    }
  });

  test('what cannot be done is a 400 naming the field', async () => {
    const cases = [
      [{ tool_choice: { type: 'function', function: { name: 'missing' } } }, 'tool_choice'],
      [{ tools: undefined, tool_choice: 'required' }, 'tool_choice'],
      [{ tool_choice: 'sometimes' }, 'tool_choice'],
      [{ tools: [{ type: 'retrieval' }] }, 'tools'],
      [{ tools: [WEATHER, WEATHER] }, 'tools'],
      [{ tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice'],
      [{ parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
    ];
    for (const [fields, param] of cases) {
      await assert.rejects(ask(fields), (error) => {
        assert.equal(error.status, 400, JSON.stringify(fields));
        assert.equal(error.param, param, JSON.stringify(fields));
        return true;
      });
    }
    await assert.rejects(client.completions.create({ model: MODEL, prompt: 'x', tools: TOOLS }),
      (error) => error.status === 400 && error.param === 'tools');
  });
});

describe('reasoning on a thinking checkpoint', () => {
  test('a think block cut by max_tokens stays reasoning; reasoning_tokens are counted; history reasoning is read', async () => {
    const server = await startServer(kipp, thinkingModel);
    try {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
      const THINKING = 'kipp-test/qwen3-tiny-thinking-2507';
      const history = [{ role: 'user', content: 'Q1' },
        { role: 'assistant', content: 'A1', reasoning: 'earlier thinking' }, { role: 'user', content: 'Q2' }];
      for (const stream of [false, true]) {
        const request = { model: THINKING, messages: history, max_tokens: 6, temperature: 0, logit_bias: { 151668: -100 } };
        let reasoning = '', content = '', usage;
        if (stream) {
          for await (const chunk of await client.chat.completions.create({ ...request, stream: true,
            stream_options: { include_usage: true } })) {
            if (chunk.usage) usage = chunk.usage;
            for (const choice of chunk.choices) {
              reasoning += choice.delta.reasoning_content ?? '';
              content += choice.delta.content ?? '';
            }
          }
        } else {
          const answer = await client.chat.completions.create(request);
          reasoning = answer.choices[0].message.reasoning_content ?? '';
          content = answer.choices[0].message.content;
          assert.equal(answer.choices[0].finish_reason, 'length');
          usage = answer.usage;
        }
        assert.ok(reasoning.length > 0, 'the cut answer is reasoning');
        assert.equal(content, '');
        assert.equal(usage.completion_tokens_details.reasoning_tokens, usage.completion_tokens);
      }
      // An answer that closes its think block counts the tokens up to </think>, and no more.
      const closed = await client.chat.completions.create({ model: THINKING, messages: history, max_tokens: 12,
        temperature: 0, logit_bias: { 151668: 100 }, logprobs: true });
      const tokens = closed.choices[0].logprobs.content.map((t) => t.token);
      assert.equal(closed.usage.completion_tokens_details.reasoning_tokens, tokens.indexOf('</think>') + 1);
      // A call after the think block: reasoning free, then the forced call, found and returned.
      for (const stream of [false, true]) {
        const request = { model: THINKING, messages: history, max_tokens: 400, seed: 5, tools: TOOLS,
          tool_choice: 'required', logit_bias: { 151668: 100 } };
        const message = stream ? (await reassemble(await client.chat.completions.create({ ...request, stream: true }))).message
          : (await client.chat.completions.create(request)).choices[0].message;
        checkCalls(message.tool_calls, ['get_weather', 'now']);
        assert.ok(!(message.content ?? '').includes('<tool_call>'));
      }
    } finally {
      await server.stop();
    }
  });
});
