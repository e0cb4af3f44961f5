import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogging } from '../../api/log.ts';
import { IdempotencyRecords } from '../../api/store/embedded/idempotency-records.ts';
import { openEmbeddedStore } from '../../api/store/embedded/embedded-store.ts';
import { IDEMPOTENCY_TTL_MS, type IdempotencyRecord } from '../../api/store/types.ts';
import { startServer } from '../helpers/server.ts';

const { logger } = createLogging('silent', new Writable({ write: (_c, _e, cb) => cb() }));
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
/** A record shaped as api/http/idempotency.ts makes them: hex hashes, a base64 sealed answer, an ISO time. */
const record = (i: number, at = Date.now(), sealedBytes = 600): IdempotencyRecord => ({
  keyHash: hex(`oath\n${i}`),
  fingerprint: hex(`body ${i}`),
  status: 201,
  sealed: Buffer.alloc(sealedBytes, i % 251).toString('base64'),
  createdAt: new Date(at).toISOString(),
});

describe('idempotency records held as bytes', () => {
  it('gives back every record as it was stored, of any shape (property-based)', () => {
    const arbitraryRecord = fc.record({
      keyHash: fc.oneof(fc.string({ maxLength: 80 }), fc.stringMatching(/^[0-9a-f]{64}$/)),
      fingerprint: fc.oneof(fc.string({ maxLength: 80 }), fc.stringMatching(/^[0-9a-f]{64}$/)),
      status: fc.integer({ min: 100, max: 599 }),
      sealed: fc.oneof(
        fc.constant(null),
        fc.string({ maxLength: 200 }),
        fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('base64')),
      ),
      createdAt: fc.oneof(
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        fc.string({ maxLength: 30 }),
      ),
    });
    fc.assert(
      fc.property(fc.array(arbitraryRecord, { maxLength: 60 }), (records) => {
        const held = new IdempotencyRecords();
        const latest = new Map<string, IdempotencyRecord>();
        for (const r of records) {
          held.set(r);
          latest.delete(r.keyHash);
          latest.set(r.keyHash, r);
        }
        expect(held.size).toBe(latest.size);
        for (const [key, r] of latest) expect(held.get(key)).toEqual(r);
        expect([...held.values()]).toEqual([...latest.values()]);
      }),
    );
  });

  it('prunes the oldest first, gives their chunks back, and replaces a key in place of order', () => {
    const held = new IdempotencyRecords();
    const empty = held.bytes;
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    for (let i = 0; i < 5000; i++) held.set(record(i, t0 + i * 1000));
    expect(held.bytes).toBeGreaterThan(empty + 5000 * 600);
    held.set(record(0, t0 + 5000 * 1000));
    expect([...held.values()].at(-1)!.keyHash).toBe(record(0).keyHash);
    const full = held.bytes;
    // Records 1..2499 are 24 h old at this time; record 0 was made again and is young.
    expect(held.prune(t0 + 2500 * 1000 + IDEMPOTENCY_TTL_MS - 1, IDEMPOTENCY_TTL_MS)).toBe(2499);
    expect(held.size).toBe(5000 - 2499);
    expect(held.get(record(1).keyHash)).toBeUndefined();
    expect(held.get(record(2500).keyHash)).toEqual(record(2500, t0 + 2500 * 1000));
    expect(held.bytes).toBeLessThan(full);
    expect(held.prune(t0 + 10_000 * 1000 + IDEMPOTENCY_TTL_MS, IDEMPOTENCY_TTL_MS)).toBe(5000 - 2499);
    expect(held.size).toBe(0);
    expect([...held.values()]).toEqual([]);
    expect(held.bytes).toBeLessThanOrEqual(empty);
  });

  it('an oath-sized record costs its bytes and a few dozen more, not the ~1,150 it cost as an object', () => {
    const held = new IdempotencyRecords();
    const n = 20_000;
    for (let i = 0; i < n; i++) held.set(record(i));
    const perRecord = held.bytes / n;
    // 32 + 32 bytes of hashes, 8 of time, 600 of sealed answer, a head, and the table at most half full.
    expect(perRecord).toBeGreaterThan(600 + 64);
    expect(perRecord).toBeLessThan(600 + 64 + 120);
  });
});

describe('keyed writes in the embedded store', () => {
  it('counts each record in the ceiling, and snapshots and restarts keep them as they were', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keyed-'));
    let store = await openEmbeddedStore({ dir, logger });
    const before = store.capacity().bytes;
    const records = Array.from({ length: 300 }, (_, i) => record(i));
    for (const r of records.slice(0, 200)) await store.idempotency.put(r);
    // At least the sealed answers' bytes (600 each) are counted.
    expect(store.capacity().bytes - before).toBeGreaterThan(200 * 600);
    await store.compact();
    for (const r of records.slice(200)) await store.idempotency.put(r);
    await store.close();
    // From the snapshot (the first 200) and the journal (the rest).
    store = await openEmbeddedStore({ dir, logger });
    for (const r of records) expect(await store.idempotency.get(r.keyHash, new Date())).toEqual(r);
    expect(store.capacity().bytes - before).toBeGreaterThan(300 * 600);
    await store.close();
  });
});

describe('keyed oaths over HTTP', () => {
  const oath = (url: string, name: string, key?: string) =>
    fetch(`${url}/api/citizenship/oath`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
      body: JSON.stringify({ name, purpose: 'measure what a key costs' }),
    });

  it('a keyed oath replayed after a restart answers the same body', async () => {
    let server = await startServer({ WRITE_RATE_LIMIT: '0' });
    const key = randomUUID();
    const first = await oath(server.url, 'restart-replayer', key);
    expect(first.status).toBe(201);
    const body = await first.json();
    await server.stop();
    server = await startServer({ WRITE_RATE_LIMIT: '0', DATA_DIR: server.dataDir });
    const again = await oath(server.url, 'restart-replayer', key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(body);
    await server.stop();
  });

  it('a small EMBEDDED_MAX_BYTES is reached sooner by keyed oaths, which then answer 503 STORE_FULL', async () => {
    const maxBytes = 400_000;
    /** Oaths until the store is full; how many it took, and the refusal. */
    const fill = async (keyed: boolean) => {
      const server = await startServer({ WRITE_RATE_LIMIT: '0', EMBEDDED_MAX_BYTES: String(maxBytes) });
      let accepted = 0;
      for (;;) {
        const res = await oath(server.url, `filler-${keyed}-${accepted}`, keyed ? randomUUID() : undefined);
        if (res.status !== 201) {
          const problem = await res.json();
          await server.stop();
          return { accepted, status: res.status, problem };
        }
        await res.arrayBuffer();
        accepted++;
        if (accepted > 5000) throw new Error('the ceiling was never reached');
      }
    };
    const keyed = await fill(true);
    expect(keyed.status).toBe(503);
    expect(keyed.problem.code).toBe('STORE_FULL');
    const plain = await fill(false);
    expect(plain.status).toBe(503);
    // Each keyed oath also holds its record (its sealed answer, some 700 bytes, is the most of it).
    expect(keyed.accepted).toBeGreaterThan(0);
    expect(keyed.accepted).toBeLessThan(plain.accepted * 0.75);
  });
});
