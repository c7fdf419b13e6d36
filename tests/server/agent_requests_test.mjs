// The chat-completions requests coding agents really send (captured from opencode and Qwen Code,
// tests/fixtures/opencode_requests.json and qwen_code_requests.json), sent as captured to a real
// `kipp serve` on the tiny checkpoint: each is answered with a whole stream (chunks, the usage
// chunk it asks for, [DONE]), the tools in the prompt. Their max_tokens is lowered to 32: the
// random weights would spend Qwen Code's 8,000 (cut to the room left, as server.openai_client and
// server.anthropic_client test) in full. Codex's and Claude Code's requests are tested beside their
// APIs (server.responses_client, server.anthropic_client).
//
//   node agent_requests_test.mjs KIPP MODEL
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { startServer } from './server_process.mjs';

const [kipp, model] = process.argv.slice(2);
if (!model) {
  console.error('usage: agent_requests_test.mjs KIPP MODEL');
  process.exit(2);
}

const fixture = (name) => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url)));
const AGENTS = [
  ['opencode', fixture('opencode_requests.json'), 'opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14'],
  ['Qwen Code', fixture('qwen_code_requests.json'), 'QwenCode/0.15.10 (linux; x64)'],
];

let server;
before(async () => {
  server = await startServer(kipp, model);
});
after(async () => {
  assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
});

// The data lines of an SSE body, parsed, and whether it ended with [DONE].
function events(body) {
  const data = body.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
  const done = data.at(-1) === '[DONE]';
  return { chunks: (done ? data.slice(0, -1) : data).map((line) => JSON.parse(line)), done };
}

for (const [agent, { requests }, userAgent] of AGENTS) {
  test(`${agent}'s requests are answered as it sends them`, async () => {
    assert.ok(requests.length >= 2);
    for (const sent of requests) {
      const body = { ...sent, max_tokens: 32 };
      const response = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(body),
        headers: { 'content-type': 'application/json', authorization: 'Bearer unused', 'user-agent': userAgent } });
      assert.equal(response.status, 200, await response.clone().text());
      assert.match(response.headers.get('content-type'), /text\/event-stream/);
      const { chunks, done } = events(await response.text());
      assert.ok(done, 'the stream ends with [DONE]');
      const finish = chunks.flatMap((chunk) => chunk.choices).find((choice) => choice.finish_reason);
      assert.ok(['stop', 'length', 'tool_calls'].includes(finish?.finish_reason), JSON.stringify(finish));
      const usage = chunks.at(-1).usage;
      assert.ok(usage, 'stream_options.include_usage: the last chunk has the usage');
      assert.ok(usage.completion_tokens <= 32);
      // The prompt holds the system prompt and, where offered, the tools.
      const counted = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: sent.model, messages: sent.messages.slice(-1), max_tokens: 1 }) });
      assert.ok(usage.prompt_tokens > (await counted.json()).usage.prompt_tokens + (sent.tools ? 100 : 20),
        `${agent}: the system prompt and tools are in the prompt`);
    }
  });
}
