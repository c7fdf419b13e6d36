// OpenAI's Responses API through the official `openai` npm client (responses.create,
// responses.stream, responses.inputTokens.count) against a real `kipp serve` on the tiny synthetic
// checkpoints: answers equal to the chat endpoint's for the same conversation (items and their
// chat-message twins count the same tokens); streams put back together by the SDK equal to the
// whole response for the same seed, in OpenAI's event order; function calls (namespaced too)
// checked by `ajv`, and a tool loop; text.format checked by `ajv`; reasoning items and efforts on
// a thinking checkpoint; max_output_tokens cutting an answer; the two requests Codex sends
// (tests/fixtures/codex_request.json); hosted tools left out; and what is refused, naming the field.
//
//   node responses_client_test.mjs KIPP INSTRUCT_MODEL THINKING_MODEL
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';

import { startServer } from './server_process.mjs';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;

const [kipp, instructModel, thinkingModel] = process.argv.slice(2);
if (!thinkingModel) {
  console.error('usage: responses_client_test.mjs KIPP INSTRUCT_MODEL THINKING_MODEL');
  process.exit(2);
}
// The registry id of the instruct artifact, which is named after it (the suite also runs on
// kipp-test/qwen3-moe-tiny).
const MODEL = `kipp-test/${instructModel.split('/').pop().split('.')[0]}`;
const THINKING_MODEL = 'kipp-test/qwen3-tiny-thinking-2507';
// Every string bounded and no open objects: the tiny model's random weights would otherwise write
// one string until the limit.
const WEATHER = { type: 'function', name: 'get_weather', description: 'Weather for a city', strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'],
    additionalProperties: false } };
const LOOKUP = { type: 'function', name: 'lookup', description: 'A customer by id',
  parameters: { type: 'object', properties: { id: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['id'],
    additionalProperties: false } };
const CRM = { type: 'namespace', name: 'crm', description: 'The customer database', tools: [LOOKUP] };
const ajv = new Ajv2020({ strict: false });
const validators = { get_weather: ajv.compile(WEATHER.parameters), lookup: ajv.compile(LOOKUP.parameters) };

const clientFor = (server) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const reasoningOf = (response) => response.output.filter((item) => item.type === 'reasoning')
  .flatMap((item) => item.content ?? []).map((part) => part.text).join('');
const calls = (response) => response.output.filter((item) => item.type === 'function_call');

function checkResponse(response) {
  assert.equal(response.object, 'response');
  assert.match(response.id, /^resp_[0-9a-f]{48}$/);
  assert.ok(['completed', 'incomplete'].includes(response.status), response.status);
  assert.equal(response.store, false);
  assert.equal(response.previous_response_id, null);
  const usage = response.usage;
  assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
  assert.ok(usage.output_tokens_details.reasoning_tokens <= usage.output_tokens);
  assert.ok(usage.input_tokens_details.cached_tokens <= usage.input_tokens);
  if (response.status === 'incomplete') assert.deepEqual(response.incomplete_details, { reason: 'max_output_tokens' });
  for (const item of response.output) {
    assert.ok(['reasoning', 'message', 'function_call'].includes(item.type), item.type);
    if (item.type === 'message') {
      assert.match(item.id, /^msg_/);
      assert.equal(item.role, 'assistant');
      assert.deepEqual(item.content.map((part) => part.type), ['output_text']);
    }
    if (item.type === 'reasoning') assert.deepEqual(item.content.map((part) => part.type), ['reasoning_text']);
  }
}

function checkCalls(response, names) {
  const made = calls(response);
  assert.ok(made.length >= 1, JSON.stringify(response.output));
  for (const call of made) {
    assert.match(call.id, /^fc_/);
    assert.match(call.call_id, /^call_[A-Za-z0-9]{24}$/);
    assert.equal(call.status, 'completed');
    assert.ok(names.includes(call.name), call.name);
    const args = JSON.parse(call.arguments);
    assert.ok(validators[call.name](args), `${call.arguments}: ${ajv.errorsText(validators[call.name].errors)}`);
    assert.equal(call.namespace, call.name === 'lookup' ? 'crm' : undefined);
  }
  return made;
}

// What two answers to the same request share: everything but ids, times and the prefix the
// second found cached.
function comparable(response) {
  const copy = JSON.parse(JSON.stringify(response));
  delete copy.id;
  delete copy.created_at;
  delete copy.usage.input_tokens_details.cached_tokens;
  delete copy.output_text;  // the SDK's own additions
  delete copy.output_parsed;
  for (const item of copy.output) delete item.id;
  for (const item of copy.output) delete item.parsed_arguments;
  for (const item of copy.output) for (const part of item.content ?? []) delete part.parsed;
  for (const item of copy.output) if (item.call_id) item.call_id = 'call';
  return copy;
}

describe('the Responses API through the openai client', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(kipp, instructModel);
    client = clientFor(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
  });

  test('an answer equals the chat endpoint\'s for the same conversation', async () => {
    const response = await client.responses.create({ model: MODEL, instructions: 'Be brief.', input: 'Tell me a story',
      max_output_tokens: 24, temperature: 0 });
    checkResponse(response);
    const chat = await client.chat.completions.create({ model: MODEL, max_tokens: 24, temperature: 0,
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me a story' }] });
    const message = chat.choices[0].message;
    assert.equal(response.output_text, message.content);
    assert.equal(reasoningOf(response), message.reasoning_content ?? '');
    assert.equal(response.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(response.usage.output_tokens, chat.usage.completion_tokens);
    assert.equal(response.status, chat.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');
    assert.equal(response.instructions, 'Be brief.');
    assert.equal(response.max_output_tokens, 24);
  });

  test('items count the same tokens as their chat-message twins', async () => {
    const call = { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city": "Paris"}' };
    const input = [
      { role: 'developer', content: 'Answer in French.' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
      { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'I should look.' }] },
      call,
      { type: 'function_call_output', call_id: 'call_1', output: 'Sunny, 21 C' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Il fait beau.', annotations: [] }] },
      { role: 'user', content: 'And tomorrow?' },
    ];
    const messages = [
      { role: 'system', content: 'Answer in French.' },
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '', reasoning_content: 'I should look.', tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21 C' },
      { role: 'assistant', content: 'Il fait beau.' },
      { role: 'user', content: 'And tomorrow?' },
    ];
    const counted = await client.responses.inputTokens.count({ model: MODEL, input, tools: [WEATHER] });
    assert.equal(counted.object, 'response.input_tokens');
    const chat = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1,
      tools: [{ type: 'function', function: { name: WEATHER.name, description: WEATHER.description,
        parameters: WEATHER.parameters, strict: true } }] });
    assert.equal(counted.input_tokens, chat.usage.prompt_tokens);
    const response = await client.responses.create({ model: MODEL, input, tools: [WEATHER], max_output_tokens: 4 });
    assert.equal(response.usage.input_tokens, counted.input_tokens);
  });

  test('a stream put back together by the SDK equals the whole response for the same seed', async () => {
    const requests = [
      { input: 'Tell me a story', max_output_tokens: 24, temperature: 1, seed: 5 },
      { input: 'Weather in Paris, and customer 7?', tools: [WEATHER, CRM], tool_choice: 'required',
        max_output_tokens: 80, seed: 9, reasoning: { effort: 'none' } },
    ];
    for (const fields of requests) {
      const request = { model: MODEL, ...fields };
      const whole = await client.responses.create(request);
      checkResponse(whole);
      const stream = client.responses.stream(request);
      const events = [];
      stream.on('event', (event) => events.push(event));
      const streamed = await stream.finalResponse();
      assert.deepEqual(comparable(streamed), comparable(whole));
      assert.deepEqual(events.map((event) => event.sequence_number), events.map((_, i) => i));
      assert.deepEqual(events.slice(0, 2).map((event) => event.type), ['response.created', 'response.in_progress']);
      assert.equal(events.at(-1).type, whole.status === 'completed' ? 'response.completed' : 'response.incomplete');
      // Each item is added, then done, before the next is added.
      const itemEvents = events.filter((event) => event.type.startsWith('response.output_item.'));
      assert.deepEqual(itemEvents.map((event) => `${event.type}:${event.output_index}`),
        whole.output.flatMap((_, i) => [`response.output_item.added:${i}`, `response.output_item.done:${i}`]));
    }
  });

  test('forced calls: required, a named function, a namespaced one, and a tool loop', async () => {
    const ask = (fields) => client.responses.create({ model: MODEL, input: 'Weather in Paris, and customer 7?',
      tools: [WEATHER, CRM], max_output_tokens: 80, seed: 3, reasoning: { effort: 'none' }, ...fields });
    checkCalls(await ask({ tool_choice: 'required' }), ['get_weather', 'lookup']);
    const named = await ask({ tool_choice: { type: 'function', name: 'lookup' }, parallel_tool_calls: false });
    const [call] = checkCalls(named, ['lookup']);
    assert.equal(calls(named).length, 1);
    // The call item sent back as the SDK returned it (id, status and namespace included), and its output.
    const loop = [{ role: 'user', content: 'Customer 7?' }, call,
      { type: 'function_call_output', call_id: call.call_id, output: 'Ada Lovelace' }];
    const next = await ask({ tool_choice: 'none', input: loop });
    checkResponse(next);
    assert.equal(calls(next).length, 0);
    const alone = await client.responses.inputTokens.count({ model: MODEL, tools: [WEATHER, CRM], input: loop.slice(0, 1) });
    assert.ok(next.usage.input_tokens > alone.input_tokens + 10, 'the call and its output are in the prompt');
  });

  test('text.format json_schema: the output validates', async () => {
    const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 10 },
      age: { type: 'integer', minimum: 0, maximum: 120 } }, required: ['name', 'age'], additionalProperties: false };
    // Room for the longest valid output: ten \u00XX escapes can cost six tokens each.
    const response = await client.responses.create({ model: MODEL, input: 'A person', max_output_tokens: 200, seed: 2,
      text: { format: { type: 'json_schema', name: 'person', schema, strict: true } }, reasoning: { effort: 'none' } });
    checkResponse(response);
    assert.equal(response.status, 'completed');
    assert.deepEqual(response.text.format.name, 'person');
    const value = JSON.parse(response.output_text);
    assert.ok(ajv.validate(schema, value), `${response.output_text}: ${ajv.errorsText()}`);
  });

  test('max_output_tokens cuts the answer: incomplete, as OpenAI reports it', async () => {
    const response = await client.responses.create({ model: MODEL, input: 'Tell me a long story', max_output_tokens: 3,
      reasoning: { effort: 'none' }, temperature: 0 });
    checkResponse(response);
    assert.equal(response.status, 'incomplete');
    assert.equal(response.usage.output_tokens, 3);
    assert.equal(response.output.at(-1).status, 'incomplete');
  });

  test('the two requests Codex sends are answered as it sends them', async () => {
    const fixture = JSON.parse(readFileSync(new URL('../fixtures/codex_request.json', import.meta.url)));
    for (const sent of fixture.requests) {
      const response = await fetch(`${server.url}/v1/responses`, { method: 'POST',
        body: JSON.stringify({ ...sent, model: MODEL, max_output_tokens: 16 }),
        headers: { 'content-type': 'application/json', authorization: 'Bearer unused', originator: 'codex_exec' } });
      assert.equal(response.status, 200, await response.clone().text());
      // web_search runs on OpenAI's service: left out of the prompt, and said so.
      assert.match(response.headers.get('x-kipp-ignored-fields'), /tools\[4\] \(web_search\)/);
      const events = [];
      for (const line of (await response.text()).split('\n'))
        if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
      assert.equal(events[0].type, 'response.created');
      assert.ok(['response.completed', 'response.incomplete'].includes(events.at(-1).type), events.at(-1).type);
      assert.ok(events.at(-1).response.usage.input_tokens > 500, 'the tools and instructions are in the prompt');
    }
  });

  test('what Kipp cannot do is refused, naming the field', async () => {
    const refusals = [
      [{ store: true }, 'store'],
      [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{ background: true }, 'background'],
      [{ truncation: 'auto' }, 'truncation'],
      [{ include: ['message.output_text.logprobs'] }, 'include[0]'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
      [{ tool_choice: { type: 'web_search' } }, 'tool_choice'],
      [{ tools: [WEATHER, { ...WEATHER }] }, 'tools[1].name'],
      [{ input: [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }] }, 'input[0].type'],
      [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
      [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:,' }] }] }, 'input[0].content[0]'],
      [{ input: [{ type: 'function_call_output', call_id: 'call_9', output: 'x' }] }, 'input[0].call_id'],
      [{ input: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hel' }] }, 'input'],
      [{ reasoning: { effort: 'extreme' } }, 'reasoning.effort'],
      [{ text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema'],
      [{ echo: true }, 'echo'],
    ];
    for (const [fields, param] of refusals) {
      await assert.rejects(client.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 4, ...fields }),
        (error) => {
          assert.equal(error.status, 400, JSON.stringify(fields));
          assert.equal(error.param, param, `${JSON.stringify(fields)}: ${error.message}`);
          return true;
        });
    }
    await assert.rejects(client.responses.create({ model: 'gpt-5', input: 'Hi' }), (error) => error.status === 404);
  });
});

describe('reasoning on a thinking checkpoint', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(kipp, thinkingModel);
    client = clientFor(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
  });

  test('the thought is a reasoning item; effort none closes it at once, a named effort bounds it', async () => {
    const ask = (reasoning) => client.responses.create({ model: THINKING_MODEL, input: 'Think about it',
      max_output_tokens: 40, temperature: 0, ...(reasoning ? { reasoning } : {}) });
    const free = await ask(null);
    checkResponse(free);
    assert.equal(free.output[0].type, 'reasoning');
    assert.equal(free.usage.output_tokens_details.reasoning_tokens, 40, 'random weights think past the limit');
    const none = await ask({ effort: 'none', summary: 'auto' });
    checkResponse(none);
    assert.ok(none.usage.output_tokens_details.reasoning_tokens <= 1, JSON.stringify(none.usage));
    assert.equal(reasoningOf(none), '');
    assert.deepEqual(none.reasoning, { effort: 'none', summary: 'auto' });
    const chat = await client.chat.completions.create({ model: THINKING_MODEL, max_tokens: 40, temperature: 0,
      messages: [{ role: 'user', content: 'Think about it' }], reasoning_effort: 'none' });
    assert.equal(none.output_text, chat.choices[0].message.content);
  });
});
