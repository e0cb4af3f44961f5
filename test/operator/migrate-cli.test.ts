import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/pg-cluster.ts';
import { PG_ADMIN, postgresAvailable } from '../helpers/postgres.ts';
import { run } from '../helpers/run.ts';

/** `npm run migrate` with `env`: exit code, every line it printed, and how long it took. */
async function migrate(env: Record<string, string>) {
  const started = performance.now();
  const { status, stdout, stderr } = await run('node_modules/.bin/node', ['api/cli/migrate.ts'], {
    env: { ...process.env, ...env },
    timeout: 30_000,
  });
  return { status, lines: `${stdout}\n${stderr}`.split('\n').filter(Boolean), ms: performance.now() - started };
}

/** A refusal: a non-zero exit and one line, no stack. */
function expectOneLine(result: Awaited<ReturnType<typeof migrate>>, pattern: RegExp): void {
  expect(result.lines, result.lines.join('\n')).toHaveLength(1);
  expect(result.lines[0]).toMatch(/^npm run migrate: /);
  expect(result.lines[0]).toMatch(pattern);
  expect(result.status).toBe(1);
}

describe('npm run migrate on a PostgreSQL it cannot use', () => {
  const held: Socket[] = [];
  let silent: Server | undefined;
  afterAll(() => {
    for (const socket of held) socket.destroy();
    silent?.close();
  });

  it('a refused connection is one line and exit 1', async () => {
    const port = await freePort();
    expectOneLine(
      await migrate({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/db` }),
      new RegExp(`PostgreSQL at 127.0.0.1:${port} does not answer \\(ECONNREFUSED`),
    );
  });

  it('a server that takes the connection and never answers (PostgreSQL paused) ends within PG_CONNECT_TIMEOUT_MS', async () => {
    silent = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const result = await migrate({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/db`,
      PG_CONNECT_TIMEOUT_MS: '500',
    });
    expectOneLine(result, new RegExp(`PostgreSQL at 127.0.0.1:${port} does not answer .*PG_CONNECT_TIMEOUT_MS=500`));
    // Node's start and the 500 ms bound, not the 30 s the test would wait.
    expect(result.ms).toBeLessThan(10_000);
  });

  it('a time setting past its maximum is refused before connecting, naming it', async () => {
    const result = await migrate({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/db',
      PG_QUERY_TIMEOUT_MS: '1500000000',
    });
    expect(result.status).toBe(2);
    expect(result.lines.join('\n')).toMatch(/PG_QUERY_TIMEOUT_MS: must be at most 1073741823 \(ms\)/);
    expect(result.lines.join('\n')).not.toMatch(/\n\s+at /);
  });

  it('without DATABASE_URL (or with it empty) it says so, exit 2', async () => {
    const result = await migrate({ DATABASE_URL: '' });
    expect(result.status).toBe(2);
    expect(result.lines).toEqual(['npm run migrate: DATABASE_URL is not set (postgres://user@host:5432/db)']);
  });
});

describe.runIf(await postgresAvailable())('npm run migrate refused by PostgreSQL', () => {
  it('a database that does not exist is one line and exit 1', async () => {
    const url = new URL(PG_ADMIN);
    url.pathname = '/agentnode_absent_migrate';
    expectOneLine(
      await migrate({ DATABASE_URL: url.href }),
      /DATABASE_URL names a database that does not exist \(3D000 database "agentnode_absent_migrate" does not exist\)/,
    );
  });
});
