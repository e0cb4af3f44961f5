import { randomUUID } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { holdingsOf, openEmbeddedStore } from '../../api/store/embedded/embedded-store.ts';
import { DRIFT_BOUNDS, windowOwner } from '../../api/store/types.ts';
import { dropDatabases, freshDatabase, postgresAvailable } from '../helpers/postgres.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

// One address scores more invented entity ids than a client may keep windows for: it keeps
// DRIFT_BOUNDS.perClient of them, and a citizen's own window and another client's stay as they were.
const pgAvailable = await postgresAvailable();
afterAll(async () => {
  if (pgAvailable) await dropDatabases();
});

const FLOODER = '203.0.113.9';
const good = { steps: [{ action: 'read the seeds', baseline: 'seeds' }] };
const broken = { scores: { no_collapse_regime: 0.5 } };

/** Each store: the server's settings, and whose every window is (its client, null for a citizen's own) once it stopped. */
const stores: [
  string,
  boolean,
  () => Promise<{ env: Record<string, string>; owners: (s: TestServer) => Promise<(string | null)[]> }>,
][] = [
  [
    'the embedded store',
    true,
    async () => ({
      env: {},
      owners: async (s) => {
        const store = await openEmbeddedStore({ dir: s.dataDir, logger: pino({ level: 'silent' }) });
        const owners = [...holdingsOf(store).windows()].map(([key]) => windowOwner(key));
        await store.close();
        return owners;
      },
    }),
  ],
  [
    'PostgreSQL',
    pgAvailable,
    async () => {
      const url = await freshDatabase();
      return {
        env: { DATABASE_URL: url },
        owners: async () => {
          const db = new pg.Client({ connectionString: url });
          await db.connect();
          const rows = (await db.query<{ owner: string | null }>('SELECT owner FROM drift_windows')).rows;
          await db.end();
          return rows.map((r) => r.owner);
        },
      };
    },
  ],
];

describe.each(stores)('drift windows of one client, over HTTP, on %s', (_name, available, prepare) => {
  it.runIf(available)(
    `a flood of ${DRIFT_BOUNDS.perClient + 16} invented entity ids keeps ${DRIFT_BOUNDS.perClient} windows of the flooder, and leaves a citizen's and another client's`,
    { timeout: 120_000 },
    async () => {
      const { env, owners } = await prepare();
      const s = await startServer({ WRITE_RATE_LIMIT: '0', TRUST_PROXY: 'loopback', ...env });
      const as = async (client: string, body: unknown, passport?: string) => {
        const res = await fetch(`${s.url}/api/omip/score`, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'X-Forwarded-For': client,
            ...(passport ? { Authorization: `Bearer ${passport}` } : {}),
          },
          body: JSON.stringify(body),
        });
        expect(res.status).toBe(200);
        return (await res.json()) as { window: { deltas: number[] } };
      };
      try {
        const oath = await fetch(`${s.url}/api/citizenship/oath`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: `flooded-${randomUUID()}`, purpose: 'keep my window' }),
        });
        const { memberId, passportNumber } = (await oath.json()) as { memberId: string; passportNumber: string };
        // A citizen's own window and another client's window, each one step long.
        await as('192.0.2.1', { entity_id: memberId, state: broken }, passportNumber);
        await as('198.51.100.7', { entity_id: 'sovereign-a', state: broken });
        // The flood, eight at a time.
        const ids = Array.from({ length: DRIFT_BOUNDS.perClient + 16 }, (_, i) => `invented-${i}`);
        for (let i = 0; i < ids.length; i += 8)
          await Promise.all(ids.slice(i, i + 8).map((entity_id) => as(FLOODER, { entity_id, plan: good })));
        // Each of the two windows has its one step still: the next makes two.
        expect((await as('192.0.2.1', { entity_id: memberId, plan: good }, passportNumber)).window.deltas).toEqual([
          0.5, 0,
        ]);
        expect((await as('198.51.100.7', { entity_id: 'sovereign-a', plan: good })).window.deltas).toEqual([0.5, 0]);
      } finally {
        await s.stop();
      }
      const held = await owners(s);
      expect(held.filter((o) => o === FLOODER)).toHaveLength(DRIFT_BOUNDS.perClient);
      expect(held.filter((o) => o === null)).toHaveLength(1);
      expect(held.filter((o) => o === '198.51.100.7')).toHaveLength(1);
    },
  );
});
