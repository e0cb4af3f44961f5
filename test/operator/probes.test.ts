import { BUILD } from '../../api/build-info.ts';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const available = await postgresAvailable();

// A real file system that can refuse writes: a small tmpfs, remounted read-only and back.
const mounts: string[] = [];
function tmpfs(sizeKb: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'readyz-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of mounts) execFileSync('umount', ['-l', dir]);
  if (available) await dropDatabases();
});

const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: await res.json() };
};
/** Asks until the probe gives `status` (its answer is cached about a second). */
const until = (url: string, status: number) =>
  waitFor(() => readyz(url), {
    until: (answer) => answer.status === status,
    what: `/readyz answering ${status}`,
    intervalMs: 100,
  });

describe('probes', () => {
  it('/livez answers while the process runs; /readyz is not ready on a read-only data folder, and ready again once it is writable', async () => {
    const dir = tmpfs(8192);
    const first = await startServer({ DATA_DIR: dir });
    expect(await readyz(first.url)).toEqual({
      status: 200,
      body: {
        status: 'ready',
        version: BUILD.version,
        commit: BUILD.commit,
        checks: { build: 'ok', accepting: 'ok', store: 'ok', ceiling: 'ok' },
      },
    });
    await first.stop();
    execFileSync('mount', ['-o', 'remount,ro', dir]);
    const server = await startServer({ DATA_DIR: dir });
    try {
      const live = await fetch(`${server.url}/livez`);
      expect(live.status).toBe(200);
      expect(await live.text()).toBe('ok\n');
      const down = await readyz(server.url);
      expect(down.status).toBe(503);
      expect(down.body.status).toBe('not ready');
      expect(down.body.checks.store).toMatch(/EROFS|read-only/);

      execFileSync('mount', ['-o', 'remount,rw', dir]);
      expect((await until(server.url, 200)).body.checks.store).toBe('ok');
      const oath = await fetch(`${server.url}/api/citizenship/oath`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'after-readyz', purpose: 'probe' }),
      });
      expect(oath.status).toBe(201);
    } finally {
      await server.stop();
    }
  }, 30_000);

  it('/readyz turns not ready while the disk is full, and back when space returns', async () => {
    const dir = tmpfs(512);
    const server = await startServer({ DATA_DIR: dir });
    try {
      expect((await readyz(server.url)).status).toBe(200);
      const filler = join(dir, 'filler');
      try {
        writeFileSync(filler, Buffer.alloc(1024 * 1024));
      } catch {
        // ENOSPC: the filler took what was left, which is the point.
      }
      const down = await until(server.url, 503);
      expect(down.body.checks.store).toMatch(/ENOSPC|no space/i);
      // Alive all the same: a balancer takes it out of rotation, a supervisor does not restart it.
      expect((await fetch(`${server.url}/livez`)).status).toBe(200);
      rmSync(filler);
      expect((await until(server.url, 200)).body.checks.store).toBe('ok');
    } finally {
      await server.stop();
    }
  }, 30_000);

  it('is ready on the memory store, and answers 405 to a write', async () => {
    const server = await startServer({ DATA_DIR: ':memory:' });
    try {
      expect(await readyz(server.url)).toEqual({
        status: 200,
        body: {
          status: 'ready',
          version: BUILD.version,
          commit: BUILD.commit,
          checks: { build: 'ok', accepting: 'ok' },
        },
      });
      expect((await fetch(`${server.url}/readyz`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.stop();
    }
  });

  it.runIf(available)('on PostgreSQL, is ready when the database answers', async () => {
    const server = await startServer({ DATABASE_URL: await freshDatabase() });
    try {
      expect(await readyz(server.url)).toEqual({
        status: 200,
        body: {
          status: 'ready',
          version: BUILD.version,
          commit: BUILD.commit,
          checks: { build: 'ok', accepting: 'ok', store: 'ok' },
        },
      });
    } finally {
      await server.stop();
    }
  });
});
