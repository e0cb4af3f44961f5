import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  callerWindowKey,
  DRIFT_BOUNDS,
  DRIFT_SAMPLES_KEPT,
  IDEMPOTENCY_LEASE_MS,
  TELEMETRY_STALE_MS,
  type TelemetryStore,
} from '../../api/store/types.ts';
import { emptySnapshot, mergeSnapshots, type TelemetrySnapshot } from '../../api/telemetry/ledger/ledger.ts';
import { openPostgresStore } from '../../api/store/postgres/postgres-store.ts';
import { MIGRATIONS } from '../../api/store/postgres/migrations.ts';
import { storeThroughRelay } from '../helpers/pg-cluster.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { waitFor } from '../helpers/wait.ts';
import { citizen, message, move, runStoreContract } from './contract.ts';

const available = await postgresAvailable();
afterAll(async () => {
  if (available) await dropDatabases();
});

/** A fresh database as the migrations up to `version` left it, and a pool on it. */
async function databaseAt(version: number): Promise<{ url: string; db: pg.Pool }> {
  const url = await freshDatabase();
  const db = new pg.Pool({ connectionString: url });
  await db.query(
    'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  for (const m of MIGRATIONS.filter((m) => m.version <= version)) {
    await db.query(m.sql);
    await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
  }
  return { url, db };
}

describe.runIf(available)('PostgreSQL', () => {
  runStoreContract(
    'postgresql',
    async ({ driftBounds } = {}) => {
      const url = await freshDatabase();
      return {
        store: await openPostgresStore(url, { driftBounds }),
        reopen: () => openPostgresStore(url, { driftBounds }),
      };
    },
    { shared: true },
  );
});

describe.runIf(available)('PostgreSQL telemetry rows', () => {
  it('folds the rows of stopped processes into the next one, and leaves live ones alone', async () => {
    const url = await freshDatabase();
    const ledger = (n: number): TelemetrySnapshot => ({
      ...emptySnapshot(new Date('2026-01-01T00:00:00Z')),
      observedRequests: n,
    });
    const [stopped1, stopped2, live] = [
      await openPostgresStore(url),
      await openPostgresStore(url),
      await openPostgresStore(url),
    ];
    await stopped1.telemetry.save(ledger(3));
    await stopped2.telemetry.save(ledger(4));
    await live.telemetry.save(ledger(5));
    await Promise.all([stopped1.close(), stopped2.close()]);
    const db = new pg.Pool({ connectionString: url });
    await db.query(
      `UPDATE telemetry_ledgers SET updated_at = now() - $1 * interval '1 millisecond' - interval '1 minute' WHERE (snapshot->>'observedRequests')::int IN (3, 4)`,
      [TELEMETRY_STALE_MS],
    );

    const next = await openPostgresStore(url);
    const ledgers = next.telemetry as TelemetryStore<TelemetrySnapshot>;
    const started = await ledgers.load(([first, ...rest]) => mergeSnapshots(first!, rest));
    expect(started?.observedRequests).toBe(7);
    const rows = (
      await db.query<{ n: number }>(
        `SELECT (snapshot->>'observedRequests')::int AS n FROM telemetry_ledgers ORDER BY 1`,
      )
    ).rows.map((r) => r.n);
    expect(rows).toEqual([5, 7]);
    expect((await ledgers.others()).map((l) => l.observedRequests)).toEqual([5]);
    // Nothing is stale any more: the process after it starts empty.
    const after = await openPostgresStore(url);
    expect(await after.telemetry.load(([first]) => first!)).toBeNull();
    await Promise.all([live.close(), next.close(), after.close(), db.end()]);
  });
});

describe.runIf(available)('PostgreSQL telemetry rows after a partition', () => {
  it('never go back to an older ledger when a save the process gave up on reaches the database late', async () => {
    const url = await freshDatabase();
    const { relay, store } = await storeThroughRelay(url);
    const ledgers = store.telemetry as TelemetryStore<TelemetrySnapshot>;
    const ledger = (n: number): TelemetrySnapshot => ({ ...emptySnapshot(new Date()), observedRequests: n });
    const db = new pg.Pool({ connectionString: url });
    const saved = async () =>
      (
        await db.query<{ n: number }>(`SELECT (snapshot->>'observedRequests')::int AS n FROM telemetry_ledgers`)
      ).rows.map((r) => r.n);
    try {
      await ledgers.save(ledger(1));
      // The save of 2 is held on its way (the process gives up on it), the save of 3 gets through.
      relay.cutAt('"observedRequests":2', 'hold');
      await expect(ledgers.save(ledger(2))).rejects.toThrow();
      await ledgers.save(ledger(3));
      expect(await saved()).toEqual([3]);
      // The held statement reaches PostgreSQL now, and runs; its connection then closes.
      const open = relay.open();
      relay.set('forward');
      await waitFor(() => relay.open(), { until: (n) => n < open, what: 'the held connection closed' });
      expect(await saved()).toEqual([3]);
    } finally {
      await Promise.all([store.close(), db.end(), relay.close()]);
    }
  });
});

describe.runIf(available)('PostgreSQL: a write and its idempotency record are one transaction', () => {
  it('answers 503 and keeps no citizen when the disk refuses the idempotency row', async () => {
    const url = await freshDatabase();
    const store = await openPostgresStore(url);
    const db = new pg.Pool({ connectionString: url });
    // The disk fills up between the citizen's row and the record's: SQLSTATE 53100 is disk_full.
    await db.query(
      `CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '53100'; END $$ LANGUAGE plpgsql`,
    );
    await db.query('CREATE TRIGGER disk_is_full BEFORE INSERT ON idempotency FOR EACH ROW EXECUTE FUNCTION refuse()');
    const c = citizen();
    const record = {
      keyHash: 'full-1',
      fingerprint: 'f',
      status: 201,
      sealed: 's',
      createdAt: new Date().toISOString(),
    };
    await expect(store.citizens.add(c, message({ wall: true, citizenId: c.memberId }), record)).rejects.toMatchObject({
      name: 'StoreUnavailableError',
      code: 'STORE_UNAVAILABLE',
    });
    await expect(store.feed.add(message(), record)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(await store.citizens.get(c.memberId)).toBeNull();
    expect(await store.feed.stats()).toEqual({ messages: 0, questions: 0, wall: 0, verified: 0 });
    await db.query('DROP TRIGGER disk_is_full ON idempotency');
    await store.citizens.add(c, undefined, record);
    expect(await store.idempotency.get('full-1', new Date())).toMatchObject({ status: 201 });
    await Promise.all([store.close(), db.end()]);
  });
});

describe.runIf(available)('PostgreSQL: names stored before they were unique (migration 4)', () => {
  it('keys every stored citizen; of a pair that already looked alike both stay, the older holds the name, and no third may join', async () => {
    // A database as migrations 1-3 left it, with citizens whose names look alike.
    const { url, db } = await databaseAt(3);
    const older = citizen({ name: 'example-agent' });
    const younger = citizen({ name: 'EXAMPLE-AGENT' });
    const youngest = citizen({ name: 'exаmple-agent' });
    const alone = citizen({ name: 'lone-crane' });
    // More rows than one backfill batch, so keys are taken across batches too.
    const many = Array.from({ length: 1203 }, (_, i) => citizen({ name: i % 2 ? `BULK-${i - 1}` : `bulk-${i}` }));
    for (const c of [older, younger, youngest, alone, ...many]) {
      await db.query('INSERT INTO citizens VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
        c.memberId,
        c.name,
        c.class,
        c.purpose,
        null,
        c.status,
        c.joinedAt,
        c.passportHash,
      ]);
    }
    const store = await openPostgresStore(url);
    expect(
      (await db.query('SELECT count(*)::int AS n FROM citizens WHERE name_key IS NULL OR name_shape_key IS NULL'))
        .rows[0].n,
    ).toBe(0);
    expect((await store.citizens.stats()).total).toBe(4 + many.length);
    expect((await store.citizens.holding('Example-Agent'))?.memberId).toBe(older.memberId);
    expect((await store.citizens.holding('Lone-Crane'))?.memberId).toBe(alone.memberId);
    expect((await store.citizens.holding('bulk-0'))?.memberId).toBe(many[0]!.memberId);
    await expect(store.citizens.add(citizen({ name: 'Example-Agent' }))).rejects.toMatchObject({
      code: 'NAME_TAKEN',
      extra: { heldBy: 'example-agent' },
    });
    await expect(store.citizens.add(citizen({ name: 'Bulk-1202' }))).rejects.toMatchObject({ code: 'NAME_TAKEN' });
    // Opening again (another process) finds nothing left to key.
    const again = await openPostgresStore(url);
    expect((await again.citizens.holding('EXAMPLE-agent'))?.memberId).toBe(older.memberId);
    await Promise.all([store.close(), again.close(), db.end()]);
  });
});

describe.runIf(available)('PostgreSQL: an Idempotency-Key claim is a lease', () => {
  it('keeps a renewed lease from being taken over, and lets one its run stopped renewing lapse', async () => {
    const store = await openPostgresStore(await freshDatabase());
    const now = new Date();
    expect(await store.idempotency.claim('r1', now)).toBe(true);
    await store.idempotency.renew!('r1', new Date(now.getTime() + IDEMPOTENCY_LEASE_MS - 1));
    expect(await store.idempotency.claim('r1', new Date(now.getTime() + IDEMPOTENCY_LEASE_MS + 1))).toBe(false);
    expect(await store.idempotency.claim('r1', new Date(now.getTime() + 2 * IDEMPOTENCY_LEASE_MS))).toBe(true);
    await store.close();
  });
});

describe.runIf(available)('PostgreSQL: migrations hold no session state', () => {
  it('processes opening one database at once migrate it once, with transaction-scoped locks only', async () => {
    const url = await freshDatabase();
    const stores = await Promise.all([openPostgresStore(url), openPostgresStore(url), openPostgresStore(url)]);
    const db = new pg.Pool({ connectionString: url });
    try {
      const versions = (await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY 1')).rows;
      expect(versions.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      // No advisory lock outlives its transaction: none in this database (pg_locks shows every
      // database's, and other test files take advisory locks in theirs at the same time).
      const held = await db.query(
        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      expect(held.rowCount).toBe(0);
    } finally {
      await db.end();
      for (const s of stores) await s.close();
    }
  });
});

describe.runIf(available)('PostgreSQL: drift windows written by several processes at once', () => {
  const counted = async (db: pg.Pool) =>
    (
      await db.query<{ kept: number; rows: number }>(
        `SELECT (SELECT coalesce(sum(n), 0)::int FROM counts WHERE name = 'drift_windows:callers') AS kept,
              (SELECT count(*)::int FROM drift_windows WHERE owner IS NOT NULL) AS rows`,
      )
    ).rows[0]!;

  it('keeps exactly perClient windows of one client whose new windows two processes write at once', async () => {
    const url = await freshDatabase();
    const driftBounds = { ...DRIFT_BOUNDS, perClient: 5 };
    const stores = [await openPostgresStore(url, { driftBounds }), await openPostgresStore(url, { driftBounds })];
    const db = new pg.Pool({ connectionString: url });
    const at = Date.now();
    await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const key = callerWindowKey(`invented-${i}`, '203.0.113.9');
        return move(stores[i % 2]!, key, 0.3, at + i);
      }),
    );
    const owners = await db.query<{ owner: string; n: number }>(
      'SELECT owner, count(*)::int AS n FROM drift_windows GROUP BY owner',
    );
    expect(owners.rows).toEqual([{ owner: '203.0.113.9', n: 5 }]);
    expect(await counted(db)).toEqual({ kept: 5, rows: 5 });
    // A window moved again (an update of its row) is counted once still.
    const again = (await db.query<{ entity_id: string }>('SELECT entity_id FROM drift_windows LIMIT 1')).rows[0]!
      .entity_id;
    await move(stores[0]!, again, 0.4, at + 100);
    expect(await stores[1]!.drift.window(again, new Date(at + 100))).toEqual([0.3, 0.4]);
    expect(await counted(db)).toEqual({ kept: 5, rows: 5 });
    await Promise.all([...stores.map((s) => s.close()), db.end()]);
  });

  it("trims callers' windows that many clients wrote at once back under the cap at the next new one", async () => {
    const url = await freshDatabase();
    const driftBounds = { ...DRIFT_BOUNDS, perClient: 6, callers: 16 };
    const stores = [await openPostgresStore(url, { driftBounds }), await openPostgresStore(url, { driftBounds })];
    const db = new pg.Pool({ connectionString: url });
    const own = citizen().memberId;
    const at = Date.now();
    await move(stores[0]!, own, 0.1, at);
    await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const key = callerWindowKey(`invented-${i % 6}`, `203.0.113.${Math.floor(i / 6)}`);
        return move(stores[i % 2]!, key, 0.3, at + i);
      }),
    );
    // Past the cap only by the new windows other transactions were writing at that moment.
    expect((await counted(db)).rows).toBeLessThanOrEqual(16 + 2 * 10);
    const last = callerWindowKey('invented-0', '192.0.2.1');
    await move(stores[0]!, last, 0.3, at + 100);
    const { kept, rows } = await counted(db);
    expect(rows).toBeLessThanOrEqual(16);
    expect(kept).toBe(rows);
    expect(await stores[1]!.drift.window(own, new Date(at))).toEqual([0.1]);
    expect(await stores[1]!.drift.window(last, new Date(at))).toEqual([0.3]);
    await Promise.all([...stores.map((s) => s.close()), db.end()]);
  });

  it('gives the windows a database kept before migration 8 their client, a time they moved (the migration) and their count', async () => {
    const { url, db } = await databaseAt(7);
    const own = citizen().memberId;
    const keys = Array.from({ length: 7 }, (_, i) => callerWindowKey(`sovereign-${i}`, '2001:db8:1:2::/64'));
    for (const key of [own, ...keys])
      await db.query('INSERT INTO drift_windows (entity_id, deltas) VALUES ($1, $2)', [key, [0.2]]);
    const before = Date.now();
    const store = await openPostgresStore(url, { driftBounds: { ...DRIFT_BOUNDS, perClient: 5 } });
    const rows = await db.query<{ entity_id: string; owner: string | null; moved_at: Date }>(
      'SELECT entity_id, owner, moved_at FROM drift_windows ORDER BY entity_id',
    );
    expect(rows.rows.map((r) => [r.entity_id, r.owner])).toEqual(
      [[own, null], ...keys.map((k) => [k, '2001:db8:1:2::/64'])].sort(),
    );
    for (const r of rows.rows) expect(r.moved_at.getTime()).toBeGreaterThan(before - 60_000);
    expect(await counted(db)).toEqual({ kept: 7, rows: 7 });
    expect(await store.drift.window(own, new Date())).toEqual([0.2]);
    // The client's next new window brings it to its cap.
    const next = callerWindowKey('sovereign-7', '2001:db8:1:2::/64');
    await move(store, next, 0.3, Date.now());
    expect(await counted(db)).toEqual({ kept: 5, rows: 5 });
    await Promise.all([store.close(), db.end()]);
  });
});

describe.runIf(available)('PostgreSQL drift samples', () => {
  it('keeps the newest samples of a database kept before migration 9, with their totals as they were', async () => {
    const { url, db } = await databaseAt(8);
    const n = DRIFT_SAMPLES_KEPT * 3;
    await db.query(
      `INSERT INTO drift_samples SELECT gen_random_uuid(), 'entity-' || i, 'PERSIST', jsonb_build_object('entity_id', 'entity-' || i), 1, false,
         timestamptz '2026-01-01T00:00:00Z' + i * interval '1 second' FROM generate_series(0, $1 - 1) i`,
      [n],
    );
    const store = await openPostgresStore(url);
    const m = await store.drift.metrics(n);
    expect([m.samples, m.contraction_count]).toEqual([n, n]);
    expect(m.recent.map((r) => r.entity_id)).toEqual(
      Array.from({ length: DRIFT_SAMPLES_KEPT }, (_, i) => `entity-${n - 1 - i}`),
    );
    const rows = async () => (await db.query('SELECT count(*)::int AS n FROM drift_samples')).rows[0].n;
    expect(await rows()).toBe(DRIFT_SAMPLES_KEPT);
    // Each sample recorded since takes the oldest out: the totals go on, the table stays.
    for (let i = 0; i < 10; i++) await move(store, `later-${i}`, 0.1, Date.now());
    expect((await store.drift.metrics(1)).samples).toBe(n + 10);
    expect(await rows()).toBe(DRIFT_SAMPLES_KEPT);
    await Promise.all([store.close(), db.end()]);
  });
});
