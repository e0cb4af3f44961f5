import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../helpers/server.ts';

const oath = (url: string, name: string) =>
  fetch(`${url}/api/citizenship/oath`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name, purpose: 'durability' }) });
const names = async (url: string) => ((await (await fetch(`${url}/api/citizens?limit=200`)).json()).citizens as { name: string }[]).map((c) => c.name);

describe('a crash under load', () => {
  it('keeps every oath answered 201 after SIGKILL, and the store opens', async () => {
    const server = await startServer({ WRITE_RATE_LIMIT: '0' });
    const acknowledged: string[] = [];
    const burst = Array.from({ length: 400 }, (_, i) =>
      oath(server.url, `crash-${i}`)
        .then(async (res) => {
          if (res.status === 201) acknowledged.push(`crash-${i}`);
        })
        .catch(() => undefined),
    );
    while (acknowledged.length < 40) await new Promise((r) => setTimeout(r, 2));
    server.child.kill('SIGKILL');
    await Promise.all(burst);
    await server.stop();
    expect(acknowledged.length).toBeGreaterThanOrEqual(40);

    const restarted = await startServer({ DATA_DIR: server.dataDir });
    const listed = new Set<string>();
    let cursor = '';
    for (;;) {
      const page = await (await fetch(`${restarted.url}/api/citizens?limit=200${cursor ? `&cursor=${cursor}` : ''}`)).json();
      for (const c of page.citizens) listed.add(c.name);
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    for (const name of acknowledged) expect(listed.has(name), name).toBe(true);
    expect((await oath(restarted.url, 'after-crash')).status).toBe(201);
    await restarted.stop();
  }, 60_000);
});

// A real file system that refuses writes: a small tmpfs, remounted read-only or filled up.
const mounts: string[] = [];
function tmpfs(sizeKb: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of mounts) execFileSync('umount', ['-l', dir]);
});

describe('a disk that refuses writes', () => {
  it('answers 503 STORE_UNAVAILABLE on a read-only folder, keeps serving reads, damages nothing', async () => {
    const dir = tmpfs(1024);
    const first = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    expect((await oath(first.url, 'before-ro')).status).toBe(201);
    await first.stop();
    execFileSync('mount', ['-o', 'remount,ro', dir]);
    const server = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    const refused = await oath(server.url, 'while-ro');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect((await refused.json()).code).toBe('STORE_UNAVAILABLE');
    expect(await names(server.url)).toEqual(['before-ro']);
    expect((await fetch(`${server.url}/api/convert`)).status).toBe(200);
    await server.stop();
    execFileSync('mount', ['-o', 'remount,rw', dir]);
    const again = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    expect(await names(again.url)).toEqual(['before-ro']);
    expect((await oath(again.url, 'after-ro')).status).toBe(201);
    expect(await names(again.url)).toEqual(['after-ro', 'before-ro']);
    await again.stop();
  }, 60_000);

  it('answers 503 when the disk is full, and recovers when space returns', async () => {
    const dir = tmpfs(256);
    const server = await startServer({ DATA_DIR: dir, WRITE_RATE_LIMIT: '0' });
    expect((await oath(server.url, 'before-full')).status).toBe(201);
    const filler = join(dir, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(1024 * 1024));
    } catch {
      // ENOSPC: the filler took what was left, which is the point.
    }
    // The journal's last page may still have room: write until the disk says no.
    const acknowledged = ['before-full'];
    let refused = 0;
    for (let i = 0; i < 40 && refused === 0; i++) {
      const res = await oath(server.url, `while-full-${i}`);
      if (res.status === 201) acknowledged.unshift(`while-full-${i}`);
      else {
        expect(res.status).toBe(503);
        expect((await res.json()).code).toBe('STORE_UNAVAILABLE');
        refused++;
      }
    }
    expect(refused).toBe(1);
    expect(await names(server.url)).toEqual(acknowledged);
    execFileSync('rm', [filler]);
    expect((await oath(server.url, 'after-full')).status).toBe(201);
    await server.stop();
    const again = await startServer({ DATA_DIR: dir });
    expect(await names(again.url)).toEqual(['after-full', ...acknowledged]);
    await again.stop();
  }, 60_000);
});
