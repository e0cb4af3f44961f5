import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/lib.ts';
import { CANON_URL, FLOW_SITE_URL, TEST_DIST } from '../helpers/env.ts';
import { waitFor } from '../helpers/wait.ts';

// A server whose output is appended to a file (`>>`), as deploy/logrotate.conf expects, rotated
// with that file by the real logrotate while it runs.
const dir = mkdtempSync(join(tmpdir(), 'logrotate-'));
const log = join(dir, 'agent-node.log');
let server: ChildProcess;
let url: string;

const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);
const requested = (file: string, path: string) =>
  lines(file).some((l) => l.includes('"msg":"request"') && l.includes(`"path":"${path}"`));

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const out = openSync(log, 'a');
  server = spawn('node_modules/.bin/node', ['api/main.ts'], {
    // DNS_SERVERS: a loopback port nobody answers on; these requests start no lookup anyway.
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'logrotate-data-')),
      DIST_DIR: TEST_DIST,
      SITE_URL: FLOW_SITE_URL,
      CANON_URL,
      LOG_LEVEL: 'info',
      DNS_SERVERS: '127.0.0.1:9',
    },
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  await waitFor(() => lines(log).some((l) => l.includes('"msg":"listening"')), {
    timeoutMs: 30_000,
    what: 'the server listening',
  });
}, 60_000);

afterAll(() => {
  server?.kill('SIGTERM');
});

describe('deploy/logrotate.conf', () => {
  it('rotates the log of a running server, which goes on writing at the start of the cut file', async () => {
    await fetch(`${url}/livez?before`);
    await waitFor(() => requested(log, '/livez'), { what: 'the first request line' });

    const conf = join(dir, 'logrotate.conf');
    writeFileSync(
      conf,
      readFileSync(resolve('deploy/logrotate.conf'), 'utf8')
        .replace('/var/log/agent-node/*.log', join(dir, '*.log'))
        .replace('su agent-node agent-node', 'su root root'),
      { mode: 0o644 },
    );
    const rotated = spawnSync('logrotate', ['--force', '--state', join(dir, 'state'), conf], { encoding: 'utf8' });
    expect(rotated.status, rotated.stderr).toBe(0);
    // The copy keeps what was written; delaycompress leaves the newest copy plain.
    expect(requested(`${log}.1`, '/livez')).toBe(true);

    await fetch(`${url}/readyz`);
    await waitFor(() => requested(log, '/readyz'), { what: 'a request line after the rotation' });
    const after = readFileSync(log);
    // Appended output lands at the start of the cut file: no hole of zeros, no line from before.
    expect(after[0]).toBe('{'.charCodeAt(0));
    expect(after.includes(0)).toBe(false);
    expect(requested(log, '/livez')).toBe(false);
    expect(lines(log).every((l) => JSON.parse(l) && true)).toBe(true);
  });
});
