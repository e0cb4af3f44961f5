import pg from 'pg';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { MIGRATIONS } from '../../api/store/postgres/migrations.ts';
import { openPostgresStore } from '../../api/store/postgres/postgres-store.ts';
import { encodeCursor } from '../../api/store/pages.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';

const available = await postgresAvailable();
afterAll(async () => {
  if (available) await dropDatabases();
});

const KEPT = MIGRATIONS.findIndex((m) => m.sql.includes('CREATE TABLE counts'));

/** A database at the schema before kept counts, as a service that grew before them left it. */
async function databaseBeforeKeptCounts(): Promise<{ url: string; db: pg.Pool }> {
  const url = await freshDatabase();
  const db = new pg.Pool({ connectionString: url });
  await db.query(
    'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  for (const m of MIGRATIONS.slice(0, KEPT)) {
    await db.query(m.sql);
    await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
  }
  return { url, db };
}

// Time-ordered ids, as UUIDv7 sort: row i of a table gets the i-th.
const idOf = (prefix: string, i: number) => `${prefix}-0000-7000-8000-${i.toString(16).padStart(12, '0')}`;
const ids = (prefix: string) => `('${prefix}-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid`;
const seedCitizens = (db: pg.Pool, from: number, to: number) =>
  db.query(
    `INSERT INTO citizens (member_id, name, class, purpose, status, joined_at, passport_hash)
     SELECT ${ids('01900000')}, 'seeded-' || i, (ARRAY['agent', 'crawler', 'bot'])[1 + i % 3], 'seeded', 'trillionaire', now(), repeat('a', 64) FROM generate_series($1::int, $2::int) i`,
    [from, to],
  );
const seedMessages = (db: pg.Pool, from: number, to: number) =>
  db.query(
    `INSERT INTO messages (id, name, kind, message, verified, wall, created_at)
     SELECT ${ids('01900001')}, 'seeded', CASE WHEN i % 5 = 0 THEN 'question' ELSE 'message' END, 'hello', i % 7 = 0, i % 4 = 0, now() FROM generate_series($1::int, $2::int) i`,
    [from, to],
  );

/** What the kept counts must say, counted row by row. */
async function counted(db: pg.Pool) {
  const byClass = Object.fromEntries(
    (
      await db.query<{ class: string; n: number }>('SELECT class, count(*)::int AS n FROM citizens GROUP BY class')
    ).rows.map((r) => [r.class, r.n]),
  );
  const feed = (
    await db.query(
      `SELECT count(*) FILTER (WHERE NOT wall AND kind = 'message')::int AS messages, count(*) FILTER (WHERE NOT wall AND kind = 'question')::int AS questions,
              count(*) FILTER (WHERE wall)::int AS wall, count(*) FILTER (WHERE verified)::int AS verified FROM messages`,
    )
  ).rows[0];
  return { citizens: { total: Object.values(byClass).reduce((x, y) => x + y, 0), byClass }, feed };
}

describe.runIf(available)('PostgreSQL kept counts', () => {
  it('are backfilled from count(*) by the migration, then follow inserts, deletes, updates and truncation', async () => {
    const { url, db } = await databaseBeforeKeptCounts();
    await seedCitizens(db, 1, 2000);
    await seedMessages(db, 1, 3000);
    const store = await openPostgresStore(url);
    onTestFinished(async () => void (await Promise.all([store.close(), db.end()])));
    const check = async () => {
      const truth = await counted(db);
      expect(await store.citizens.stats()).toEqual(truth.citizens);
      expect(await store.feed.stats()).toEqual(truth.feed);
    };
    await check();
    expect((await store.citizens.stats()).total).toBe(2000);

    // What changes rows by hand (an operator's repair) is counted as well as what the service writes.
    await seedCitizens(db, 2001, 2500);
    await db.query(
      `INSERT INTO citizens (member_id, name, class, purpose, status, joined_at, passport_hash) VALUES ('01900000-0000-7000-8000-000000000001', 'again', 'agent', 'x', 'trillionaire', now(), 'h') ON CONFLICT DO NOTHING`,
    );
    await db.query(`DELETE FROM citizens WHERE class = 'bot' AND member_id < '01900000-0000-7000-8000-000000000100'`);
    await db.query(
      `UPDATE citizens SET class = 'eater' WHERE class = 'crawler' AND member_id > '01900000-0000-7000-8000-000000000900'`,
    );
    await db.query(`UPDATE messages SET wall = NOT wall WHERE kind = 'question'`);
    await db.query(`UPDATE citizens SET purpose = 'repaired'`);
    await check();
    await db.query('TRUNCATE messages');
    await check();
    expect(await store.feed.stats()).toEqual({ messages: 0, questions: 0, wall: 0, verified: 0 });

    // The counters are no more than a few rows, whatever the size of the tables.
    const rows = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM counts')).rows[0]!.n;
    expect(rows).toBeLessThan(20);
  });

  it('answers a page, deep or first, from its own rows by the primary key, and the counts without reading the tables', async () => {
    const { url, db } = await databaseBeforeKeptCounts();
    await seedCitizens(db, 1, 50_000);
    await seedMessages(db, 1, 50_000);
    const store = await openPostgresStore(url);
    onTestFinished(async () => void (await Promise.all([store.close(), db.end()])));
    // As autovacuum leaves a table: a migration that rewrote rows at open leaves their old versions behind.
    await db.query('VACUUM ANALYZE');
    // Each statement the store sends is explained, as PostgreSQL would run it, with what it read.
    const sent: { text: string; values: unknown[] }[] = [];
    const query = store.pool.query.bind(store.pool);
    (store.pool as any).query = (text: string, values: unknown[]) => (sent.push({ text, values }), query(text, values));
    const explain = async (call: () => Promise<unknown>) => {
      sent.length = 0;
      await call();
      const plans = [];
      for (const s of sent)
        plans.push(
          (await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${s.text}`, s.values)).rows[0]['QUERY PLAN'][0].Plan,
        );
      return plans;
    };
    const nodes = (plan: any): any[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

    const deep = encodeCursor(idOf('01900000', 400));
    for (const [what, call] of [
      ['first page of citizens', () => store.citizens.list({ limit: 50 })],
      ['deep page of citizens', () => store.citizens.list({ limit: 50, cursor: deep })],
      ['deep page of messages', () => store.feed.list({ limit: 200, cursor: encodeCursor(idOf('01900001', 300)) })],
    ] as const) {
      const [plan, ...more] = await explain(call);
      expect(more, what).toEqual([]);
      const scans = nodes(plan).filter((n) => n['Relation Name']);
      expect(scans, what).toHaveLength(1);
      expect(scans[0], what).toMatchObject({ 'Node Type': 'Index Scan', 'Scan Direction': 'Backward' });
      expect(scans[0]['Index Name'], what).toMatch(/_pkey$/);
      expect(
        nodes(plan).some((n) => n['Node Type'] === 'Sort'),
        what,
      ).toBe(false);
      // One row more than the page, to tell whether another follows: never more.
      expect(scans[0]['Actual Rows'], what).toBeLessThanOrEqual(201);
      expect(scans[0]['Shared Hit Blocks'] + scans[0]['Shared Read Blocks'], what).toBeLessThan(30);
    }
    expect((await store.citizens.list({ limit: 50, cursor: deep })).items.map((c) => c.name)).toEqual(
      Array.from({ length: 50 }, (_, i) => `seeded-${399 - i}`),
    );

    for (const [what, call] of [
      ['citizens by class', () => store.citizens.stats()],
      ['feed counts', () => store.feed.stats()],
    ] as const) {
      const plans = await explain(call);
      expect(plans, what).toHaveLength(1);
      const read = nodes(plans[0]).flatMap((n) => (n['Relation Name'] ? [n['Relation Name']] : []));
      expect(read, what).toEqual(['counts']);
    }
  });
});
