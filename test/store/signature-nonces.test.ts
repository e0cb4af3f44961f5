import { hash } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../api/store/postgres/postgres-store.ts';
import { storeThroughRelay } from '../helpers/pg-cluster.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { waitFor } from '../helpers/wait.ts';

// Web Bot Auth nonces on the PostgreSQL store: claimed once by all the processes on one database,
// deleted once expired, and a claim PostgreSQL does not answer fails within the pool's bounds.
const available = await postgresAvailable();
afterAll(async () => {
  if (available) await dropDatabases();
});

const inAMinute = () => Math.floor(Date.now() / 1000) + 60;

describe.runIf(available)('Web Bot Auth nonces on PostgreSQL', () => {
  it('lets one claim of a nonce win among 20 at once from two processes; another signer has its own', async () => {
    const url = await freshDatabase();
    const [a, b] = [await openPostgresStore(url), await openPostgresStore(url)];
    try {
      const claims = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).telemetry.claimNonce!('ChatGPT-User', 'n-1', inAMinute())),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await b.telemetry.claimNonce!('Other-Agent', 'n-1', inAMinute())).toBe(true);
      // A nonce is the client's to choose, of any length: it is kept as its hash.
      const long = 'x'.repeat(16_000);
      expect(await a.telemetry.claimNonce!('ChatGPT-User', long, inAMinute())).toBe(true);
      expect(await b.telemetry.claimNonce!('ChatGPT-User', long, inAMinute())).toBe(false);
      const kept = (await a.pool.query<{ nonce_hash: string }>('SELECT nonce_hash FROM signature_nonces')).rows;
      expect(kept.map((r) => r.nonce_hash).sort()).toEqual(
        [
          hash('sha256', 'n-1', 'base64url'),
          hash('sha256', 'n-1', 'base64url'),
          hash('sha256', long, 'base64url'),
        ].sort(),
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('deletes expired nonces, and lets a nonce whose row expired be claimed again before it is', async () => {
    const url = await freshDatabase();
    const db = new pg.Pool({ connectionString: url, max: 1 });
    const first = await openPostgresStore(url);
    let second: Awaited<ReturnType<typeof openPostgresStore>> | undefined;
    try {
      // The first claim of a process deletes what expired (nothing yet); the next is due a minute later.
      expect(await first.telemetry.claimNonce!('ChatGPT-User', 'live', inAMinute())).toBe(true);
      // Rows of signatures that expired, left by processes that claimed them.
      await db.query(
        `INSERT INTO signature_nonces SELECT 'ChatGPT-User', n, now() - interval '1 second' FROM unnest($1::text[]) AS n`,
        [['old-1', 'old-2', 'old-3'].map((n) => hash('sha256', n, 'base64url'))],
      );
      const expired = async () =>
        Number(
          (await db.query<{ n: string }>('SELECT count(*) AS n FROM signature_nonces WHERE expires_at < now()'))
            .rows[0]!.n,
        );
      expect(await expired()).toBe(3);
      // Not deleted yet, an expired row does not hold its nonce.
      expect(await first.telemetry.claimNonce!('ChatGPT-User', 'old-1', inAMinute())).toBe(true);
      expect(await first.telemetry.claimNonce!('ChatGPT-User', 'old-1', inAMinute())).toBe(false);
      expect(await expired()).toBe(2);
      // Another process's first claim deletes the expired rows; the live ones stay.
      second = await openPostgresStore(url);
      expect(await second.telemetry.claimNonce!('ChatGPT-User', 'new', inAMinute())).toBe(true);
      await waitFor(expired, { until: (n) => n === 0, what: 'expired nonces deleted' });
      const left = (await db.query<{ n: string }>('SELECT count(*) AS n FROM signature_nonces')).rows[0]!.n;
      expect(Number(left)).toBe(3);
    } finally {
      await Promise.all([first.close(), second?.close(), db.end()]);
    }
  });

  it('fails a claim PostgreSQL does not answer within the pool bounds, and at once on a closed port', async () => {
    const url = await freshDatabase();
    const { relay, store } = await storeThroughRelay(url);
    const timed = async (claim: () => Promise<boolean>) => {
      const started = performance.now();
      const error = await claim().then(
        () => null,
        (e: unknown) => e,
      );
      return { error, ms: performance.now() - started };
    };
    try {
      expect(await store.telemetry.claimNonce!('ChatGPT-User', 'before', inAMinute())).toBe(true);
      relay.set('hold');
      // The pooled connection goes silent: the claim waits out the statement's bound (300 ms + 500 ms grace).
      const silent = await timed(() => store.telemetry.claimNonce!('ChatGPT-User', 'during', inAMinute()));
      expect(silent.error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(silent.ms).toBeLessThan(2000);
      relay.set('forward');
    } finally {
      relay.set('forward');
      await store.close();
      await relay.close();
    }

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const nowhere = await openPostgresStore(`postgres://postgres@127.0.0.1:${port}/nowhere`, { connectTimeoutMs: 400 });
    try {
      const refused = await timed(() => nowhere.telemetry.claimNonce!('ChatGPT-User', 'n', inAMinute()));
      expect(refused.error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(refused.ms).toBeLessThan(500);
    } finally {
      await nowhere.close();
    }
  });
});
