import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_TTL_MS } from '../../api/store/types.ts';
import { controlled, type ControlledServer } from './control.ts';
import { METRICS_TOKEN, metric, pool } from './probe.ts';
import { logLine } from './raw.ts';
import { snapshotOnDisk } from '../helpers/snapshot.ts';

// Many keyed writes with unguessable keys. What a key keeps is bounded (a hash of
// the body for a route that changes nothing, the sealed answer of a write, at most 16 KiB) and
// expired records leave memory at the next prune and disk at the next compaction. The server's
// clock is moved from outside by preload.ts (a test hook, loaded only here). Before: 2,000 keys
// with 60 KB documents took +149 MB of heap and +160 MB of disk, and moving the clock 25 h freed
// nothing.
const MB = 1024 * 1024;
let server: ControlledServer;
beforeAll(async () => {
  server = await controlled({ WRITE_RATE_LIMIT: '0', METRICS_TOKEN });
});
afterAll(async () => {
  await server.stop();
});

/** Bytes the data folder holds: the snapshot, and each journal file up to its preallocated zeros. */
function dataBytes(): number {
  let n = snapshotOnDisk(server.dataDir)?.bytes ?? 0;
  for (const f of readdirSync(server.dataDir).filter((f) => f.startsWith('journal-'))) {
    const content = readFileSync(join(server.dataDir, f));
    const end = content.indexOf(0);
    n += end === -1 ? content.length : end;
  }
  return n;
}
/** Every idempotency record on disk (snapshot and journal), by creation time. */
function recordsOnDisk(): string[] {
  const created: string[] = [];
  for (const r of (snapshotOnDisk(server.dataDir)?.records.idempotency ?? []) as { createdAt: string }[])
    created.push(r.createdAt);
  for (const f of readdirSync(server.dataDir).filter((f) => f.startsWith('journal-'))) {
    for (const line of readFileSync(join(server.dataDir, f), 'utf8').split('\n')) {
      if (!line.includes('idempotency.put')) continue;
      for (const m of line.matchAll(/"op":"idempotency\.put","v":\{[^}]*"createdAt":"([^"]+)"/g)) created.push(m[1]!);
    }
  }
  return created;
}
/** The heap in use and the memory outside it (where the store holds its records as bytes). */
async function heap(): Promise<number> {
  await server.gc();
  return (await metric(server, 'nodejs_heap_size_used_bytes')) + (await metric(server, 'nodejs_external_memory_bytes'));
}
const post = (path: string, key: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify(body),
  });

describe('keyed writes', () => {
  it('2,000 keys with 60 KB fingerprint documents: the data folder and the heap grow by a few hundred bytes a key', async () => {
    const KEYS = 2000;
    const diskBefore = dataBytes();
    const heapBefore = await heap();
    await pool(KEYS, 8, async (i) => {
      const res = await post('/api/omip/fingerprint', randomUUID(), { document: { i, text: 'z'.repeat(60_000) } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    });
    const disk = (dataBytes() - diskBefore) / KEYS;
    const heapGrowth = (await heap()) - heapBefore;
    console.log(
      `${KEYS} keys of 60 KB documents: ${disk.toFixed(0)} bytes a key on disk, heap ${(heapGrowth / MB).toFixed(1)} MB`,
    );
    expect(disk).toBeLessThan(600);
    expect(heapGrowth / KEYS).toBeLessThan(2000);
  });

  it('records of keyed messages leave memory when the clock passes 24 h, and disk at the next compaction', async () => {
    const OLD = 1000;
    const message = 'm'.repeat(4000);
    const keys = Array.from({ length: OLD }, () => randomUUID());
    const heapBefore = await heap();
    await pool(OLD, 8, async (i) => {
      const res = await post('/api/intelligence/message', keys[i]!, { name: 'keyed', message });
      expect(res.status).toBe(201);
      await res.arrayBuffer();
    });
    const heapWith = await heap();
    // Each record keeps the sealed answer (the message included): some MB for 1,000 of them.
    expect(heapWith - heapBefore).toBeGreaterThan(4 * MB);
    const repeat = await post('/api/intelligence/message', keys[0]!, { name: 'keyed', message: 'another body' });
    expect(repeat.status).toBe(422);

    await server.moveClock(IDEMPOTENCY_TTL_MS + 2 * 60_000);
    const movedAt = Date.now() + IDEMPOTENCY_TTL_MS + 60_000;
    // The next keyed request prunes (at most once a minute); its own record is young.
    const young = await post('/api/omip/fingerprint', randomUUID(), { document: { young: true } });
    expect(young.status).toBe(200);
    const heapAfter = await heap();
    console.log(
      `1,000 keyed messages: heap +${((heapWith - heapBefore) / MB).toFixed(1)} MB, after the clock moved 24 h ${((heapAfter - heapWith) / MB).toFixed(1)} MB`,
    );
    // The sealed answers left memory (the messages themselves stay in the feed).
    expect(heapWith - heapAfter).toBeGreaterThan(3 * MB);
    // The old key is forgotten: another body under it is a new write, not 422.
    expect((await post('/api/intelligence/message', keys[0]!, { name: 'keyed', message: 'another body' })).status).toBe(
      201,
    );

    // Disk: the journal still holds the old records until a compaction rewrites the snapshot without
    // them; one comes once the journal passes 16 MiB, so keep writing (young keyed messages) until it does.
    expect(recordsOnDisk().filter((c) => Date.parse(c) < movedAt - IDEMPOTENCY_TTL_MS).length).toBeGreaterThanOrEqual(
      OLD,
    );
    const from = server.logs.length;
    let compacted = false;
    for (let round = 0; round < 10 && !compacted; round++) {
      await pool(200, 8, async () => {
        const res = await post('/api/intelligence/message', randomUUID(), { name: 'young', message });
        expect(res.status).toBe(201);
        await res.arrayBuffer();
      });
      compacted = server.logs.slice(from).some((l) => l.includes('"msg":"store compacted"'));
    }
    await logLine(server, from, (l) => l.includes('"msg":"store compacted"'), 10_000);
    const stale = recordsOnDisk().filter((c) => Date.parse(c) < movedAt - IDEMPOTENCY_TTL_MS);
    expect(stale).toEqual([]);
    expect(recordsOnDisk().length).toBeGreaterThan(0);
  });
});
