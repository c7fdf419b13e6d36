// Codex CLI end to end: the real `codex exec` (npm @openai/codex, pinned in package-lock.json)
// pointed at a real `kipp serve` through a model provider with wire_api = "responses", as a user
// configures it, on the synthetic checkpoint of the real 0.6B shape (Codex's first request is
// about 8,650 tokens, past the tiny checkpoints' context). Codex sends no output limit, so the
// server runs with --default-max-tokens; the random weights never end an answer, so the answer is
// cut there and Codex reports the Responses API's incomplete reason, as it does for OpenAI's. What
// is checked: Codex read the stream (it prints the answer), the terminal event (the incomplete
// reason) and its usage (the tokens Codex reports used are those the server counted), and the
// hosted tool it offers was left out and said so.
//
//   node codex_test.mjs KIPP SHAPE_MODEL WORK_DIR
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { metric, metrics, startServer } from './server_process.mjs';

const [kipp, shapeModel, work] = process.argv.slice(2);
if (!work) {
  console.error('usage: codex_test.mjs KIPP SHAPE_MODEL WORK_DIR');
  process.exit(2);
}
const MODEL = 'kipp-test/qwen3-0.6b-shape';
const LIMIT = 8;

// Runs a command to its end: its exit code and what it wrote.
function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data) => { stdout += data; });
    child.stderr.on('data', (data) => { stderr += data; });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

let server;
before(async () => {
  server = await startServer(kipp, shapeModel, ['--default-max-tokens', String(LIMIT)]);
});
after(async () => {
  assert.equal(await server.stop(), 0, 'a clean exit on SIGTERM');
});

test('codex exec answers through /v1/responses', async () => {
  rmSync(work, { recursive: true, force: true });
  const home = join(work, 'home');
  const codexHome = join(work, 'codex');
  mkdirSync(home, { recursive: true });
  mkdirSync(codexHome, { recursive: true });
  // The provider as docs/SERVER.md tells users to write it.
  writeFileSync(join(codexHome, 'config.toml'), [
    `model = "${MODEL}"`,
    'model_provider = "kipp"',
    '',
    '[model_providers.kipp]',
    'name = "Kipp"',
    `base_url = "${server.url}/v1"`,
    'wire_api = "responses"',
    // Codex drops a stream that sends nothing for 5 minutes and asks again; the first prefill of
    // its 8,650 tokens on this checkpoint can take that long on a busy 2-core runner. A longer
    // wait, and no retry, so that a broken stream fails here instead of being asked again.
    'stream_idle_timeout_ms = 1800000',
    'stream_max_retries = 0',
    '',
  ].join('\n'));
  const codex = await run('node_modules/.bin/codex', ['exec', '--skip-git-repo-check', 'Say hi'], {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome },
  });
  const said = `exit ${codex.code}\nstdout:\n${codex.stdout}\nstderr:\n${codex.stderr}\nserver:\n${server.log()}`;
  assert.match(codex.stderr, /provider: kipp/, said);
  assert.match(codex.stderr, /Incomplete response returned, reason: max_output_tokens/, said);
  assert.equal(codex.code, 1, said);
  // Codex prints the answer it read from the stream under its name, then the error.
  const answer = /\ncodex\n([^]*?)\nERROR: Incomplete/.exec(codex.stderr);
  assert.ok(answer && answer[1].trim().length > 0, `Codex printed the streamed answer\n${said}`);

  const values = await metrics(server.url);
  const prompt = metric(values, 'kipp_prompt_tokens_total');
  const generated = metric(values, 'kipp_generation_tokens_total');
  assert.equal(generated, LIMIT, said);
  const used = /tokens used\s*\n\s*([\d,]+)/.exec(codex.stderr);
  assert.ok(used, said);
  assert.equal(Number(used[1].replaceAll(',', '')), prompt + generated, said);
  assert.ok(prompt > 4096, `Codex's instructions and tools are in the prompt (${prompt} tokens)`);
  assert.match(server.log(), /\/v1\/responses accepted with fields it does not honour: tools\[\d+\] \(web_search\)/);
});
