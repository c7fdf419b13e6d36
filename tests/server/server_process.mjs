// Starts a real `kipp serve` process on a free port and waits until it says it is ready.
import { spawn } from 'node:child_process';

// `until: 'listening'` returns as soon as the socket is bound, while the model may still load.
// KIPP_SERVER_TEST_BACKEND runs the whole suite on another backend (the GPU run sets cuda).
export async function startServer(kipp, model, extraArgs = [], { env = {}, until = 'ready' } = {}) {
  const backend = process.env.KIPP_SERVER_TEST_BACKEND ? ['--backend', process.env.KIPP_SERVER_TEST_BACKEND] : [];
  const child = spawn(kipp, ['serve', '--model', model, '--port', '0', '--threads', '2', ...backend, ...extraArgs], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kipp serve did not become ready:\n${log}`)), 60000);
    child.stderr.on('data', (data) => {
      log += data.toString();
      const port = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (port && (until === 'listening' || log.includes('kipp serve: ready'))) {
        clearTimeout(timer);
        resolve(Number(port[1]));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`kipp serve exited with ${code} before it was ready:\n${log}`));
    });
  });
  const port = await ready;
  const exit = new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    child.on('exit', (code) => resolve(code));
  });
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    log: () => log,
    alive: () => child.exitCode === null && child.signalCode === null,
    signal: (name) => child.kill(name),
    exited: () => exit,  // the exit code, once the process has ended
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      return exited;
    },
  };
}

// The numbers of a Prometheus text exposition, by metric name and labels as written.
export async function metrics(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const values = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values[line.slice(0, space)] = Number(line.slice(space + 1));
  }
  return values;
}

// The value of a metric whose name and extra labels are given, whatever the model label says.
export function metric(values, name, labels = '') {
  for (const [key, value] of Object.entries(values)) {
    if (!key.startsWith(name + '{')) continue;
    if (labels && !key.includes(labels)) continue;
    return value;
  }
  return undefined;
}
