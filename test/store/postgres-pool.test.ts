import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../api/store/postgres/postgres-store.ts';
import { IDEMPOTENCY_TTL_MS } from '../../api/store/types.ts';
import { relayTo, storeThroughRelay } from '../helpers/pg-cluster.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { citizen } from './contract.ts';

// The PostgreSQL store's own bounds, against the machine's PostgreSQL (the fault tests
// with a cluster of their own are test/hostile/postgres-faults.test.ts).
const available = await postgresAvailable();
afterAll(async () => {
  if (available) await dropDatabases();
});

const record = (keyHash: string, createdAt: Date) => ({
  keyHash,
  fingerprint: 'f',
  status: 201,
  sealed: 'sealed',
  createdAt: createdAt.toISOString(),
});

describe.runIf(available)('PostgreSQL store: bounds and at-most-once', () => {
  it('refuses a write whose idempotency record another run committed first (live), and rolls the write back', async () => {
    const store = await openPostgresStore(await freshDatabase());
    const now = new Date();
    const first = citizen();
    await store.citizens.add(first, undefined, record('taken', now));
    const second = citizen();
    await expect(
      store.citizens.add(second, undefined, record('taken', new Date(now.getTime() + 1000))),
    ).rejects.toMatchObject({ name: 'IdempotencyKeyTaken' });
    expect(await store.citizens.get(second.memberId)).toBeNull();
    expect(await store.idempotency.get('taken', now)).toMatchObject({ createdAt: now.toISOString() });
    // A record past its 24 hours, not pruned yet, is replaced as before.
    const later = new Date(now.getTime() + IDEMPOTENCY_TTL_MS + 1000);
    const third = citizen();
    await store.citizens.add(third, undefined, record('taken', later));
    expect(await store.citizens.get(third.memberId)).not.toBeNull();
    await store.close();
  });

  it('cancels a statement that runs past PG_QUERY_TIMEOUT_MS: 503, and the connection serves the next call', async () => {
    const store = await openPostgresStore(await freshDatabase(), { queryTimeoutMs: 200 });
    const started = performance.now();
    await expect(store.pool.query('SELECT pg_sleep(2)')).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      reason: 'database-unavailable',
    });
    expect(performance.now() - started).toBeLessThan(1000);
    expect((await store.pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await store.close();
  });

  it('while PostgreSQL does not answer, one call waits out the timeout and the others fail at once; it heals by itself', async () => {
    const url = await freshDatabase();
    const { relay, store } = await storeThroughRelay(url);
    try {
      await store.citizens.list({ limit: 1 });
      relay.set('hold');
      const timed = async (work: Promise<unknown>) => {
        const started = performance.now();
        const error = await work.then(
          () => null,
          (e: unknown) => e,
        );
        return { error, ms: performance.now() - started };
      };
      // The pooled connection goes silent: the statement waits out its timeout (300 ms + 500 ms grace).
      const first = await timed(store.citizens.stats());
      expect(first.error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(first.ms).toBeGreaterThan(700);
      // Known down: one call (this one) tries a new connection; the ones beside it do not wait.
      const [trial, ...beside] = await Promise.all([
        timed(store.citizens.stats()),
        timed(store.feed.stats()),
        timed(store.citizens.get(randomUUID())),
      ]);
      expect(trial!.error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(trial!.ms).toBeGreaterThan(300);
      for (const b of beside) {
        expect(b.error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
        expect(b.ms).toBeLessThan(100);
      }
      relay.set('forward');
      expect((await store.citizens.stats()).total).toBe(0);
      expect((await store.feed.stats()).messages).toBe(0);
    } finally {
      relay.set('forward');
      await store.close();
      await relay.close();
    }
  });

  it('tells a new connection refused from a pooled one: reachable() fails while the pool still answers', async () => {
    const url = await freshDatabase();
    const { relay, through } = await relayTo(url);
    const store = await openPostgresStore(through, { connectTimeoutMs: 400, idleTimeoutMs: 60_000 });
    try {
      await store.pool.reachable();
      await store.citizens.list({ limit: 1 });
      relay.set('refuse');
      await expect(store.pool.reachable()).rejects.toThrow(
        'PostgreSQL does not take a new connection or does not answer on it',
      );
      expect((await store.citizens.list({ limit: 1 })).items).toEqual([]);
    } finally {
      relay.set('forward');
      await store.close();
      await relay.close();
    }
  });
});
