import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createInterface } from 'node:readline';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_DIST } from '../helpers/env.ts';
import { startServerProcess } from '../helpers/server.ts';
import { sharedDnsResponder } from '../helpers/dns-responder.ts';
import { runNode } from '../helpers/run.ts';
import { PG_ADMIN, postgresAvailable } from '../helpers/postgres.ts';

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

/** A refusal as the operator sees it: exit code 1 and one line, no stack. */
function expectOneLine(run: { code: number | null; lines: string[] }, pattern: RegExp): void {
  expect(run.lines, run.lines.join('\n')).toHaveLength(1);
  expect(run.lines[0]).toMatch(/^agent-node cannot start: /);
  expect(run.lines[0]).toMatch(pattern);
  expect(run.code).toBe(1);
}

/** A TCP server on loopback; `onSocket` says what it does with each connection. */
async function listening(onSocket: (socket: import('node:net').Socket) => void = () => undefined): Promise<Server> {
  const server = createServer(onSocket);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
const portOf = (server: Server) => (server.address() as AddressInfo).port;

describe('a start refused for an operator-caused reason is one line, without a stack', () => {
  it('HOST that is no name or address of this machine', async () => {
    expectOneLine(await runToEnd({ PORT: '0', DATA_DIR: ':memory:', HOST: 'not-a-host' }), /HOST not-a-host /);
  });

  it('METRICS_PORT in use, as the main port is', async () => {
    const busy = await listening();
    try {
      const port = portOf(busy);
      expectOneLine(
        await runToEnd({ PORT: '0', DATA_DIR: ':memory:', METRICS_PORT: String(port) }),
        new RegExp(`METRICS_PORT ${port} on 127.0.0.1 is in use by another process`),
      );
    } finally {
      busy.close();
    }
  });

  it('CONTENT_DIR that does not exist', async () => {
    expectOneLine(
      await runToEnd({ PORT: '0', DATA_DIR: ':memory:', CONTENT_DIR: '/nonexistent-content' }),
      /CONTENT_DIR \/nonexistent-content cannot be read: ENOENT/,
    );
  });

  it('a DIST_DIR build without static-manifest.json, with it corrupt, or without client/', async () => {
    // The build's server/ is linked in whole, so each case fails at the part it lacks.
    const partial = (manifest: 'none' | 'corrupt' | 'whole') => {
      const dist = mkdtempSync(join(tmpdir(), 'agentnode-dist-'));
      symlinkSync(join(TEST_DIST, 'server'), join(dist, 'server'));
      if (manifest === 'corrupt') writeFileSync(join(dist, 'static-manifest.json'), '{"routes": {');
      if (manifest === 'whole')
        copyFileSync(join(TEST_DIST, 'static-manifest.json'), join(dist, 'static-manifest.json'));
      return dist;
    };
    for (const [dist, part] of [
      [partial('none'), /static-manifest\.json: ENOENT/],
      [partial('corrupt'), /static-manifest\.json: .*JSON/],
      [partial('whole'), /client\/: ENOENT/],
    ] as const) {
      expectOneLine(
        await runToEnd({ PORT: '0', DATA_DIR: ':memory:', DIST_DIR: dist }),
        new RegExp(`DIST_DIR ${dist} holds no whole build: ${part.source}.*npm run build`),
      );
      rmSync(dist, { recursive: true });
    }
  });

  it('PostgreSQL that asks for TLS the server does not offer (sslmode against a server without SSL)', async () => {
    // A server that answers the SSLRequest "N" (no SSL), as PostgreSQL without ssl=on does.
    const noSsl = await listening((socket) => socket.once('data', () => socket.write('N')));
    try {
      expectOneLine(
        await runToEnd({
          PORT: '0',
          DATA_DIR: '',
          DATABASE_URL: `postgres://postgres@127.0.0.1:${portOf(noSsl)}/db?sslmode=verify-full`,
        }),
        /PostgreSQL's TLS does not match DATABASE_URL's sslmode \(The server does not support SSL connections\)/,
      );
    } finally {
      noSsl.close();
    }
  });

  it('a DATABASE_URL that does not parse', async () => {
    expectOneLine(
      await runToEnd({ PORT: '0', DATA_DIR: '', DATABASE_URL: 'postgres://postgres@127.0.0.1:port/db' }),
      /DATABASE_URL does not parse as a URL/,
    );
  });
});

describe.runIf(await postgresAvailable())(
  'a PostgreSQL that refuses this process stops the start with one line',
  () => {
    const on = (database: string, user = 'postgres') => {
      const url = new URL(PG_ADMIN);
      url.username = user;
      url.pathname = `/${database}`;
      return url.href;
    };

    it('a database that does not exist', async () => {
      const name = `agentnode_absent_${randomUUID().slice(0, 8)}`;
      expectOneLine(
        await runToEnd({ PORT: '0', DATA_DIR: '', DATABASE_URL: on(name) }),
        new RegExp(`DATABASE_URL names a database that does not exist \\(3D000 database "${name}" does not exist\\)`),
      );
    });

    it('a login refused (a role that does not exist)', async () => {
      expectOneLine(
        await runToEnd({ PORT: '0', DATA_DIR: '', DATABASE_URL: on('postgres', 'agentnode_no_such_role') }),
        /PostgreSQL refused DATABASE_URL's login \(28\w{3} .*\): check its user and password/,
      );
    });
  },
);
