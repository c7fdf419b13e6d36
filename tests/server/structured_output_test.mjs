// Structured output through the official `openai` npm client, as applications ask for it:
// response_format json_schema (strict and not) and json_object, streamed and not, n = 3, seeds,
// logprobs of the constrained distribution, llama.cpp's `json_schema` and `grammar` fields, and
// refusals before any byte of a stream. Answers are validated by ajv, the reference validator.
//
//   node structured_output_test.mjs KIPP INSTRUCT_MODEL THINKING_2507_MODEL
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';

import { startServer } from './server_process.mjs';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;

const [kipp, instructModel, thinkingModel] = process.argv.slice(2);
if (!thinkingModel) {
  console.error('usage: structured_output_test.mjs KIPP INSTRUCT_MODEL THINKING_2507_MODEL');
  process.exit(2);
}
// The registry id of the instruct artifact, which is named after it (the suite also runs on
// kipp-test/qwen3-moe-tiny).
const MODEL = `kipp-test/${instructModel.split('/').pop().split('.')[0]}`;
const NO_THINKING = { chat_template_kwargs: { enable_thinking: false } };

// Small enough that random weights finish an answer well within max_tokens.
const VERDICT = {
  type: 'object',
  properties: {
    answer: { enum: ['yes', 'no', 'unsure'] },
    confidence: { type: 'integer', minimum: 0, maximum: 100 },
    flags: { type: 'array', items: { type: 'boolean' }, maxItems: 3 },
  },
  required: ['answer', 'confidence'],
  additionalProperties: false,
};
const validVerdict = new Ajv2020({ strict: false }).compile(VERDICT);

const messages = [{ role: 'user', content: 'Is the river north of the garden? Answer in JSON.' }];

async function chatStream(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const content = [];
  const finish = [];
  for await (const chunk of stream)
    for (const choice of chunk.choices) {
      content[choice.index] = (content[choice.index] ?? '') + (choice.delta.content ?? '');
      if (choice.finish_reason) finish[choice.index] = choice.finish_reason;
    }
  return { content, finish };
}

describe('structured output', () => {
  let server, client;
  before(async () => {
    server = await startServer(kipp, instructModel, ['--max-batch', '8']);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  });
  after(async () => {
    await server?.stop();
  });

  const strictFormat = { type: 'json_schema', json_schema: { name: 'verdict', strict: true, schema: VERDICT } };

  test('json_schema strict, n = 3: every choice is an instance ajv accepts', async () => {
    const response = await client.chat.completions.create({
      model: MODEL, messages, n: 3, seed: 11, temperature: 1, max_tokens: 200, response_format: strictFormat,
      ...NO_THINKING,
    });
    assert.equal(response.choices.length, 3);
    for (const choice of response.choices) {
      assert.equal(choice.finish_reason, 'stop', choice.message.content);
      const instance = JSON.parse(choice.message.content);
      assert.ok(validVerdict(instance), `${choice.message.content}: ${JSON.stringify(validVerdict.errors)}`);
    }
    assert.equal(response.x_kipp_unenforced, undefined);  // strict: nothing is left out
  });

  test('streamed equals non-streamed for the same seed, each choice', async () => {
    const body = { model: MODEL, messages, n: 3, seed: 5, temperature: 1, max_tokens: 200, response_format: strictFormat,
      ...NO_THINKING };
    const whole = await client.chat.completions.create(body);
    const streamed = await chatStream(client, body);
    for (const choice of whole.choices) {
      assert.equal(streamed.content[choice.index], choice.message.content);
      assert.equal(streamed.finish[choice.index], choice.finish_reason);
    }
  });

  test('greedy answers are the same alone and under load', async () => {
    const body = { model: MODEL, messages, temperature: 0, max_tokens: 120, response_format: strictFormat, ...NO_THINKING };
    const alone = await client.chat.completions.create(body);
    const others = Array.from({ length: 5 }, (_, i) => client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: `noise ${i}` }], temperature: 1, seed: i, max_tokens: 60,
      ...(i % 2 ? { response_format: { type: 'json_object' } } : {}), ...NO_THINKING,
    }));
    const [loaded] = await Promise.all([client.chat.completions.create(body), ...others]);
    assert.equal(loaded.choices[0].message.content, alone.choices[0].message.content);
  });

  test('json_object: a JSON object', async () => {
    const response = await client.chat.completions.create({
      model: MODEL, messages, seed: 3, temperature: 1, max_tokens: 300, n: 2, response_format: { type: 'json_object' },
      ...NO_THINKING,
    });
    let finished = 0;
    for (const choice of response.choices) {
      if (choice.finish_reason !== 'stop') continue;
      finished += 1;
      const value = JSON.parse(choice.message.content);
      assert.equal(typeof value, 'object');
      assert.ok(value !== null && !Array.isArray(value));
    }
    // Object members are free strings, so a walk may run long; a cut answer is still a prefix.
    for (const choice of response.choices) assert.match(choice.message.content, /^\s*\{/);
    assert.ok(finished + response.choices.length > 0);
  });

  test('logprobs are of the constrained distribution', async () => {
    const response = await client.chat.completions.create({
      model: MODEL, messages, temperature: 0, max_tokens: 60, logprobs: true, top_logprobs: 5,
      response_format: strictFormat, ...NO_THINKING,
    });
    const steps = response.choices[0].logprobs.content;
    assert.ok(steps.length > 3);
    for (const step of steps) {
      // Greedy takes the most likely allowed token: the top of the constrained distribution.
      assert.equal(step.top_logprobs[0].token, step.token);
      const mass = step.top_logprobs.reduce((sum, t) => sum + Math.exp(t.logprob), 0);
      assert.ok(mass <= 1 + 1e-4, `probabilities sum to ${mass}`);
    }
    // Raw logits of random weights would give the chosen tokens tiny probabilities; renormalized
    // over the allowed set, the first step's choice is likely.
    assert.ok(Math.exp(steps[0].logprob) > 1e-3, `first token probability ${Math.exp(steps[0].logprob)}`);
  });

  test('strict: false names what it left unenforced, in a header and the body', async () => {
    const schema = { type: 'object', properties: { tags: { type: 'array', items: { enum: ['a', 'b'] }, uniqueItems: true } },
      required: ['tags'], additionalProperties: false };
    const { data, response } = await client.chat.completions.create({
      model: MODEL, messages, seed: 2, temperature: 1, max_tokens: 100,
      response_format: { type: 'json_schema', json_schema: { name: 'tags', strict: false, schema } }, ...NO_THINKING,
    }).withResponse();
    assert.equal(response.headers.get('x-kipp-unenforced'), 'uniqueItems at /properties/tags/uniqueItems');
    assert.deepEqual(data.x_kipp_unenforced, [{ keyword: 'uniqueItems', pointer: '/properties/tags/uniqueItems' }]);
    const tags = JSON.parse(data.choices[0].message.content).tags;
    assert.ok(tags.every((t) => t === 'a' || t === 'b'));
  });

  test('a keyword Kipp cannot enforce is a 400 naming it, before any byte of a stream', async () => {
    const schema = { type: 'array', items: { type: 'integer' }, uniqueItems: true };
    const format = { type: 'json_schema', json_schema: { name: 'u', strict: true, schema } };
    for (const stream of [false, true]) {
      await assert.rejects(
        client.chat.completions.create({ model: MODEL, messages, max_tokens: 10, response_format: format, stream }),
        (error) => {
          assert.equal(error.status, 400);
          assert.match(error.message, /keyword 'uniqueItems' at \/uniqueItems: /);
          assert.equal(error.param, 'response_format.json_schema.schema');
          return true;
        });
    }
    const raw = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages, stream: true, response_format: format }),
    });
    assert.equal(raw.status, 400);
    assert.match(raw.headers.get('content-type'), /application\/json/);
  });

  test('completions with llama.cpp json_schema and grammar fields', async () => {
    const schema = { type: 'array', items: { type: 'integer', minimum: 1, maximum: 9 }, minItems: 2, maxItems: 2 };
    const response = await client.completions.create({
      model: MODEL, prompt: 'Two digits:', json_schema: schema, max_tokens: 40, temperature: 1, seed: 4, n: 3,
    });
    for (const choice of response.choices) {
      assert.equal(choice.finish_reason, 'stop');
      const value = JSON.parse(choice.text);
      assert.equal(value.length, 2);
      assert.ok(value.every((v) => Number.isInteger(v) && v >= 1 && v <= 9), choice.text);
    }
    const gbnf = await client.completions.create({
      model: MODEL, prompt: 'Say:', grammar: 'root ::= ("yes" | "no") "!"', max_tokens: 10, temperature: 1, seed: 1,
    });
    assert.match(gbnf.choices[0].text, /^(yes|no)!$/);
    assert.equal(gbnf.choices[0].finish_reason, 'stop');
  });

  test('bad structured-output fields are refused by name', async () => {
    const cases = [
      [{ response_format: { type: 'xml' } }, 'response_format.type'],
      [{ response_format: { type: 'json_schema' } }, 'response_format.json_schema'],
      // Both constrain: the second one read is named (the body's keys are read in the client's order).
      [{ response_format: { type: 'json_object' }, grammar: 'root ::= "a"' }, 'grammar'],
      [{ grammar: 'root ::= "a"', response_format: { type: 'json_object' } }, 'response_format'],
      [{ grammar: 'root ::= "a' }, 'grammar'],
      [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { $ref: '#/nowhere' } } } } } },
        'response_format.json_schema.schema'],
    ];
    for (const [extra, param] of cases) {
      await assert.rejects(client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, ...extra }), (error) => {
        assert.equal(error.status, 400, JSON.stringify(extra));
        assert.equal(error.param, param, `${JSON.stringify(extra)}: ${error.message}`);
        return true;
      });
    }
    // type text is no constraint at all.
    const plain = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, seed: 1,
      response_format: { type: 'text' }, ...NO_THINKING });
    assert.equal(plain.choices.length, 1);
  });
});

// A thinking-2507 checkpoint's prompt opens <think>: the reasoning is free, and the constraint
// starts after </think>. logit_bias on </think> (151668) makes the model close it at once: the
// answer after it follows the schema; without it, the random weights reason on to max_tokens.
describe('structured output after thinking', () => {
  let server, client;
  before(async () => {
    server = await startServer(kipp, thinkingModel);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  });
  after(async () => {
    await server?.stop();
  });
  const format = { type: 'json_schema', json_schema: { name: 'yn', strict: true, schema: { enum: ['yes', 'no'] } } };

  test('the reasoning is free and the answer after </think> follows the schema', async () => {
    const closed = await client.chat.completions.create({
      model: 'kipp-test/qwen3-tiny-thinking-2507', messages, max_tokens: 40, seed: 1, temperature: 1,
      logit_bias: { 151668: 100 }, response_format: format,
    });
    const choice = closed.choices[0];
    assert.equal(choice.finish_reason, 'stop');
    assert.ok(['yes', 'no'].includes(JSON.parse(choice.message.content)), choice.message.content);
    const free = await client.chat.completions.create({
      model: 'kipp-test/qwen3-tiny-thinking-2507', messages, max_tokens: 20, seed: 1, temperature: 1,
      response_format: format,
    });
    assert.equal(free.choices[0].finish_reason, 'length');
    assert.ok(free.choices[0].message.reasoning_content.length > 0, 'the reasoning was not free');
    assert.equal(free.choices[0].message.content, '');
  });
});
