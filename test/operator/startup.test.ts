import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_DIST } from '../helpers/env.ts';
import { startServerProcess } from '../helpers/server.ts';
import { sharedDnsResponder } from '../helpers/dns-responder.ts';
import { runNode } from '../helpers/run.ts';

/** `node api/main.ts` run to its end: exit code and every line it printed. */
function runToEnd(env: Record<string, string>): Promise<{ code: number | null; lines: string[] }> {
  return runNode(['api/main.ts'], { HOST: '127.0.0.1', DIST_DIR: TEST_DIST, LOG_LEVEL: 'info', ...env });
}

describe('one writer per data folder', () => {
  it('a second process on the same DATA_DIR refuses to start with one line naming the holder, and writes nothing there', async () => {
    const first = await startServerProcess({ WRITE_RATE_LIMIT: '0' });
    try {
      const before = readdirSync(first.dataDir).sort();
      const second = await runToEnd({ PORT: '0', DATA_DIR: first.dataDir });
      expect(second.code).toBe(1);
      expect(second.lines).toHaveLength(1);
      expect(second.lines[0]).toContain(`is in use by process ${first.child.pid}`);
      expect(second.lines[0]).toContain(first.url);
      expect(readdirSync(first.dataDir).sort()).toEqual(before);
      // The holder is unharmed.
      expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    } finally {
      await first.stop();
    }
  });

  it('holds the folder, not its path: renamed under its process (as a bind mount is another path to it), a second start is refused', async () => {
    const first = await startServerProcess({ WRITE_RATE_LIMIT: '0' });
    const moved = `${first.dataDir}-moved`;
    try {
      renameSync(first.dataDir, moved);
      const second = await runToEnd({ PORT: '0', DATA_DIR: moved });
      expect(second.code).toBe(1);
      expect(second.lines[0]).toContain(`is in use by process ${first.child.pid}`);
    } finally {
      await first.stop();
    }
  });

  it('the lock dies with its process: after kill -9 the next start takes the folder at once', async () => {
    const first = await startServerProcess({ WRITE_RATE_LIMIT: '0' });
    const oath = await fetch(`${first.url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'lock-holder', purpose: 'to be kept' }),
    });
    expect(oath.status).toBe(201);
    await first.stop('SIGKILL');
    const again = await startServerProcess({ DATA_DIR: first.dataDir });
    try {
      const list = (await (await fetch(`${again.url}/api/citizens`)).json()) as { citizens: { name: string }[] };
      expect(list.citizens.map((c) => c.name)).toContain('lock-holder');
    } finally {
      await again.stop();
    }
  });

  it('a busy port is one line that says how to pick another, before the data folder is touched', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    const dataDir = join(mkdtempSync(join(tmpdir(), 'busy-port-')), 'data');
    try {
      const run = await runToEnd({ PORT: String(port), DATA_DIR: dataDir });
      expect(run.code).toBe(1);
      expect(run.lines).toEqual([
        `agent-node cannot start: port ${port} on 127.0.0.1 is in use by another process: pick another with PORT=${port + 1} npm start`,
      ]);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      busy.close();
    }
  });

  it('a bad configuration is one line per variable, without a stack', async () => {
    const run = await runToEnd({ PORT: 'eighty', DATA_DIR: ':memory:' });
    expect(run.code).toBe(1);
    expect(run.lines[0]).toBe('agent-node cannot start: invalid configuration:');
    expect(run.lines.slice(1).join('\n')).toMatch(/^ {2}PORT: /);
    expect(run.lines.join('\n')).not.toMatch(/\n\s+at /);
  });
});

describe('one store, said once', () => {
  it('DATA_DIR and DATABASE_URL both set refuse to start, in one line naming both, and touch neither', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'agentnode-two-')), 'data');
    const run = await runToEnd({ PORT: '0', DATA_DIR: dir, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' });
    expect(run.code).toBe(1);
    expect(run.lines).toHaveLength(1);
    expect(run.lines[0]).toMatch(/DATA_DIR .*and DATABASE_URL are both set/);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('private by default', () => {
  it('under umask 022 the data folder is 0700 (an existing 0755 one too) and every file in it 0600', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'agentnode-umask-')), 'data');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const child = spawn('sh', ['-c', 'umask 022 && exec node_modules/.bin/node api/main.ts'], {
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: '0',
        DIST_DIR: TEST_DIST,
        DATA_DIR: dir,
        LOG_LEVEL: 'info',
        DNS_SERVERS: (await sharedDnsResponder()).address,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        const m = /"msg":"listening"/.test(line) && /"url":"([^"]+)"/.exec(line);
        if (m) resolve(m[1]!);
      });
      void exited.then(() => reject(new Error('the server exited')));
    });
    const oath = await fetch(`${url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': randomUUID() },
      body: JSON.stringify({ name: 'private-citizen', purpose: 'Keep my hash to the service.' }),
    });
    expect(oath.status).toBe(201);
    // A graceful stop writes what it holds: the snapshot, the journal, the signing key.
    child.kill('SIGTERM');
    await exited;
    const modes = Object.fromEntries(
      readdirSync(dir).map((f) => [f, (statSync(join(dir, f)).mode & 0o777).toString(8)]),
    );
    expect(Object.keys(modes).length).toBeGreaterThan(0);
    expect(modes).toEqual(Object.fromEntries(Object.keys(modes).map((f) => [f, '600'])));
    expect((statSync(dir).mode & 0o777).toString(8)).toBe('700');
  });
});
